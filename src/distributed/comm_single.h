// The communicator of a run with one process: every collective is the identity.
#pragma once

#include <algorithm>

#include "distributed/communicator.h"

namespace lmforge {

class SingleCommunicator final : public Communicator {
public:
    // started_by_srun: the one task of a job step that srun started (srun_task()).
    explicit SingleCommunicator(bool started_by_srun = false) : started_by_srun_(started_by_srun) {}
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int local_rank() const override { return 0; }
    int local_size() const override { return 1; }
    std::string name() const override { return "single"; }
    void allreduce_sum(float*, int64_t) override {}
    double allreduce_sum(double value) override { return value; }
    void allreduce_sum(double*, int64_t) override {}
    double allreduce_max(double value) override { return value; }
    void start_allreduce_sum(float*, int64_t) override {}
    void start_allreduce_sum(uint16_t*, int64_t) override {}
    void progress() override {}
    void wait_all() override {}
    void reduce_scatter_sum(const float* data, float* out, const std::vector<int64_t>& counts) override {
        std::copy(data, data + counts[0], out);
    }
    void reduce_scatter_sum(const uint16_t* data, uint16_t* out, const std::vector<int64_t>& counts) override {
        std::copy(data, data + counts[0], out);
    }
    void allgather_in_place(float*, const std::vector<int64_t>&) override {}
    void gather(const float* mine, float* all, const std::vector<int64_t>& counts, int) override {
        std::copy_n(mine, counts[0], all);
    }
    void gather(const uint16_t* mine, uint16_t* all, const std::vector<int64_t>& counts, int) override {
        std::copy_n(mine, counts[0], all);
    }
    void broadcast(void*, size_t, int) override {}
    void barrier() override {}
    bool started_by_srun() const override { return started_by_srun_; }

private:
    bool started_by_srun_;
};

}  // namespace lmforge
