// How the processes of a run talk: ranks, and sums and gathers over flat float buffers. MPI
// between processes and hosts; a single-process version where every operation is trivial.
// The trainer talks through this interface only, never to MPI directly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lmforge {

class Communicator {
public:
    virtual ~Communicator() = default;

    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual int local_rank() const = 0;  // among the processes on this host
    virtual int local_size() const = 0;
    virtual std::string name() const = 0;  // "mpi" or "single"

    // data (n) = the element-wise sum over ranks, in place.
    virtual void allreduce_sum(float* data, int64_t n) = 0;
    virtual double allreduce_sum(double value) = 0;
    virtual void allreduce_sum(double* data, int64_t n) = 0;  // counts and sums that must stay exact
    virtual double allreduce_max(double value) = 0;

    // The same, started now and finished by wait_all(): for overlapping communication with
    // computation. progress() lets started operations advance (MPI progresses only inside
    // MPI calls); call it now and then while computing.
    virtual void start_allreduce_sum(float* data, int64_t n) = 0;
    // The same over bfloat16 values (gradients kept in bf16): each pair of partial sums added in
    // fp32 and rounded once.
    virtual void start_allreduce_sum(uint16_t* data, int64_t n) = 0;
    virtual void progress() = 0;
    virtual void wait_all() = 0;

    // Shards: rank r owns counts[r] elements, the shards back to back in rank order.
    // reduce_scatter_sum: out (counts[rank]) = the sum over ranks of their data's own shard.
    virtual void reduce_scatter_sum(const float* data, float* out, const std::vector<int64_t>& counts) = 0;
    virtual void reduce_scatter_sum(const uint16_t* data, uint16_t* out, const std::vector<int64_t>& counts) = 0;
    // allgather: data (sum of counts) receives every rank's shard, which each holds in place.
    virtual void allgather_in_place(float* data, const std::vector<int64_t>& counts) = 0;
    // gather: root's `all` (sum of counts) receives every rank's shard `mine` (counts[rank]),
    // in rank order; other ranks need no `all` (nullptr). For fp32 and for 16-bit elements
    // (bf16 optimizer moments).
    virtual void gather(const float* mine, float* all, const std::vector<int64_t>& counts, int root) = 0;
    virtual void gather(const uint16_t* mine, uint16_t* all, const std::vector<int64_t>& counts, int root) = 0;

    virtual void broadcast(void* data, size_t bytes, int root) = 0;
    virtual void barrier() = 0;

    // Whether Slurm's srun started every process of the run, each as one task of a job step (not
    // mpirun, nor a launcher that srun started): then Slurm signals each process itself (scancel,
    // a job's time limit), and SIGTERM asks for a stop with a checkpoint, as SIGUSR1 does under
    // mpirun.
    virtual bool started_by_srun() const = 0;
};

// What srun sets in each task it starts: its place in the job step (SLURM_PROCID of
// SLURM_STEP_NUM_TASKS). procid is -1 where srun did not start the process: a variable is
// missing (SLURM_STEP_ID too), or OpenMPI's mpirun or orted did, which set OMPI_COMM_WORLD_SIZE,
// under Slurm too. InputError where one is not a whole number.
struct SrunTask {
    int procid = -1;
    int tasks = 0;
};
SrunTask srun_task();

// MPI when the process was started by an MPI launcher (mpirun, mpiexec, srun with PMI),
// the single-process communicator otherwise: the same binary runs either way.
std::unique_ptr<Communicator> make_communicator();

// Runs `work` on rank 0 alone (taking the run directory, say) and makes every rank agree on
// how it went: rank 0 rethrows its exception, the others throw InputError saying rank 0
// refused. Without this a rank waiting in a barrier for a rank 0 that had thrown would wait
// for ever (MPI_Finalize waits for every rank).
void on_lead_agreed(Communicator& comm, const std::function<void()>& work);

// The threads of a process whose cores `processes_sharing_them` processes of the run may run
// on, itself included: unbound, every process of the host shares them all; bound to a core set
// of its own (mpirun --map-by slot:PE=N, srun --cpus-per-task=N), it takes them whole; bound
// to a socket with others (OpenMPI's default past 2 processes), they divide it.
int threads_for(int own_cores, int processes_sharing_them);
// Of the (host, cores) keys of every rank, two floats each, how many equal `rank`'s.
int count_sharing(const std::vector<float>& keys, int rank);
// How many processes of the run, this one included, are on this host with exactly its cores
// (a collective: every rank calls it).
int processes_sharing_cores(Communicator& comm);

// The default threads for this process: every core it may run on when it runs alone (a
// smaller set is the container's or taskset's); under mpirun, threads_for (a collective).
// Where the binding leaves it fewer than its share of the launcher's cores (OpenMPI binds
// each of up to 2 processes to one core), rank 0 says how to give it more.
int default_threads(Communicator& comm);

// Equal shards of n elements over `world` ranks (the first n % world one larger).
std::vector<int64_t> shard_counts(int64_t n, int world);

}  // namespace lmforge
