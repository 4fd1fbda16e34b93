// The MPI communicator. One MPI call site for the whole program: the rest of lmforge sees
// only the Communicator interface. Buffers larger than MPI's int counts go in chunks.
#include <fmt/format.h>
// The C API only: without these, OpenMPI's mpi.h brings its (deprecated) C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <limits>

#include "core/bf16.h"
#include "core/error.h"
#include "distributed/comm_single.h"

namespace lmforge {

namespace {

constexpr int64_t kChunk = int64_t{1} << 30;  // elements per MPI call, well inside int

void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        throw Error(fmt::format("MPI {} failed: {}", what, std::string(text, len)),
                    "another process of the run may have died; see mpirun's report");
    }
}

std::vector<int> displacements(const std::vector<int64_t>& counts) {
    std::vector<int> d(counts.size(), 0);
    for (size_t i = 1; i < counts.size(); i++) d[i] = d[i - 1] + static_cast<int>(counts[i - 1]);
    return d;
}

std::vector<int> as_int(const std::vector<int64_t>& counts) {
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    if (total > std::numeric_limits<int>::max()) {
        throw Error(fmt::format("{} elements exceed one MPI call's count", total), "shard the buffer further");
    }
    return {counts.begin(), counts.end()};
}

// MPI's reduction of bf16 values: inout += in, each sum taken in fp32 and rounded once.
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
    const auto* a = static_cast<const uint16_t*>(in);
    auto* b = static_cast<uint16_t*>(inout);
    for (int i = 0; i < *len; i++) b[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
}

// mpirun terminates the processes when one fails, and when it is interrupted itself (Ctrl-C,
// SIGTERM): say so, in one line, and stop. (Not under srun: there a SIGTERM is Slurm's request
// to stop, sent to every task, and the trainer stops with a checkpoint.)
void on_terminate(int) {
    static const char kMessage[] =
        "lmforge: error: terminated by mpirun: another process of the run failed, or mpirun was interrupted "
        "(its report says which; kill -USR1 to mpirun stops a run with a checkpoint)\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    ::_exit(1);
}

class MpiCommunicator final : public Communicator {
public:
    explicit MpiCommunicator(const SrunTask& task) {
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "Init");
        // Errors come back as codes, turned into one-line Errors, rather than aborting here.
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_);
        MPI_Comm_rank(local_, &local_rank_);
        MPI_Comm_size(local_, &local_size_);
        // srun's tasks where every process's place in the step is its rank and the step has as
        // many tasks as the world (not the processes of a launcher that srun started once per
        // host): all must agree.
        int srun = task.procid == rank_ && task.tasks == size_ ? 1 : 0;
        check(MPI_Allreduce(MPI_IN_PLACE, &srun, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "Allreduce");
        srun_tasks_ = srun == 1;
        if (!srun_tasks_) std::signal(SIGTERM, on_terminate);
        check(MPI_Op_create(&sum_bf16, 1, &sum_bf16_), "Op_create");
    }
    ~MpiCommunicator() override {
        // Unwinding from an error the other ranks need not share (rank 0 failing to write a
        // checkpoint while they wait in a barrier): MPI_Finalize would wait for them for ever,
        // and the error, printed by main after this, would never show. Without it the process
        // prints its error and exits, and mpirun ends the other ranks.
        if (std::uncaught_exceptions() > 0) return;
        if (!requests_.empty()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
        MPI_Op_free(&sum_bf16_);
        MPI_Comm_free(&local_);
        MPI_Finalize();
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_rank() const override { return local_rank_; }
    int local_size() const override { return local_size_; }
    std::string name() const override { return "mpi"; }

    void allreduce_sum(float* data, int64_t n) override {
        for (int64_t at = 0; at < n; at += kChunk) {
            const int count = static_cast<int>(std::min(kChunk, n - at));
            check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "Allreduce");
        }
    }
    double allreduce_sum(double value) override {
        check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "Allreduce");
        return value;
    }
    void allreduce_sum(double* data, int64_t n) override {
        for (int64_t at = 0; at < n; at += kChunk) {
            const int count = static_cast<int>(std::min(kChunk, n - at));
            check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "Allreduce");
        }
    }
    double allreduce_max(double value) override {
        check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "Allreduce");
        return value;
    }
    void start_allreduce_sum(float* data, int64_t n) override { start_allreduce(data, n, MPI_FLOAT, MPI_SUM); }
    void start_allreduce_sum(uint16_t* data, int64_t n) override {
        start_allreduce(data, n, MPI_UINT16_T, sum_bf16_);
    }
    void progress() override {
        if (requests_.empty()) return;
        int done = 0;
        check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE), "Testall");
        if (done) requests_.clear();
    }
    void wait_all() override {
        if (requests_.empty()) return;
        check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), "Waitall");
        requests_.clear();
    }
    void reduce_scatter_sum(const float* data, float* out, const std::vector<int64_t>& counts) override {
        const std::vector<int> c = as_int(counts);
        check(MPI_Reduce_scatter(data, out, c.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "Reduce_scatter");
    }
    void reduce_scatter_sum(const uint16_t* data, uint16_t* out, const std::vector<int64_t>& counts) override {
        const std::vector<int> c = as_int(counts);
        check(MPI_Reduce_scatter(data, out, c.data(), MPI_UINT16_T, sum_bf16_, MPI_COMM_WORLD), "Reduce_scatter");
    }
    void allgather_in_place(float* data, const std::vector<int64_t>& counts) override {
        const std::vector<int> c = as_int(counts), d = displacements(counts);
        check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, c.data(), d.data(), MPI_FLOAT, MPI_COMM_WORLD),
              "Allgatherv");
    }
    void gather(const float* mine, float* all, const std::vector<int64_t>& counts, int root) override {
        gatherv(mine, all, MPI_FLOAT, counts, root);
    }
    void gather(const uint16_t* mine, uint16_t* all, const std::vector<int64_t>& counts, int root) override {
        gatherv(mine, all, MPI_UINT16_T, counts, root);
    }
    void broadcast(void* data, size_t bytes, int root) override {
        auto* p = static_cast<char*>(data);
        for (size_t at = 0; at < bytes; at += kChunk) {
            const int count = static_cast<int>(std::min<size_t>(kChunk, bytes - at));
            check(MPI_Bcast(p + at, count, MPI_BYTE, root, MPI_COMM_WORLD), "Bcast");
        }
    }
    void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "Barrier"); }
    bool started_by_srun() const override { return srun_tasks_; }

private:
    template <class T>
    void start_allreduce(T* data, int64_t n, MPI_Datatype type, MPI_Op op) {
        for (int64_t at = 0; at < n; at += kChunk) {
            const int count = static_cast<int>(std::min(kChunk, n - at));
            requests_.emplace_back();
            check(MPI_Iallreduce(MPI_IN_PLACE, data + at, count, type, op, MPI_COMM_WORLD, &requests_.back()),
                  "Iallreduce");
        }
    }
    void gatherv(const void* mine, void* all, MPI_Datatype type, const std::vector<int64_t>& counts, int root) {
        const std::vector<int> c = as_int(counts), d = displacements(counts);
        check(MPI_Gatherv(mine, c[rank_], type, all, c.data(), d.data(), type, root, MPI_COMM_WORLD), "Gatherv");
    }

    int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
    bool srun_tasks_ = false;
    MPI_Comm local_ = MPI_COMM_NULL;
    MPI_Op sum_bf16_ = MPI_OP_NULL;
    std::vector<MPI_Request> requests_;
};

// Set by OpenMPI's mpirun, MPICH's and Intel MPI's (PMI), and Slurm's srun.
bool launched_by_mpi() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
        if (std::getenv(var) != nullptr) return true;
    }
    return false;
}

}  // namespace

std::unique_ptr<Communicator> make_communicator() {
    const SrunTask task = srun_task();  // read before MPI_Init, which may add variables of its own
    // Alone, skip MPI_Init: OpenMPI's singleton start spawns helpers we do not need.
    if (!launched_by_mpi()) return std::make_unique<SingleCommunicator>(task.procid == 0 && task.tasks == 1);
    return std::make_unique<MpiCommunicator>(task);
}

}  // namespace lmforge
