// How many threads each process of a run takes, by how many processes share its cores, and
// the most it may ask for.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/threads.h"
#include "distributed/communicator.h"
#include "test_util.h"

namespace lmforge {
namespace {

TEST(ThreadsFor, ProcessesSharingCoresDivideThem) {
    EXPECT_EQ(threads_for(8, 1), 8);  // alone, or bound to a set of its own (--map-by slot:PE=8)
    EXPECT_EQ(threads_for(8, 2), 4);  // mpirun --bind-to none, 2 processes
    EXPECT_EQ(threads_for(8, 3), 2);
    EXPECT_EQ(threads_for(2, 4), 1);  // oversubscribed: never 0
}

TEST(ThreadsFor, SharersAreTheRanksWithTheSameKey) {
    // Ranks 0 and 2 on one socket, rank 1 on the other (OpenMPI's default for 3 processes on
    // 2 sockets), rank 3 on another host.
    const std::vector<float> keys = {5, 7, 6, 7, 5, 7, 5, 8};
    EXPECT_EQ(count_sharing(keys, 0), 2);
    EXPECT_EQ(count_sharing(keys, 1), 1);
    EXPECT_EQ(count_sharing(keys, 2), 2);
    EXPECT_EQ(count_sharing(keys, 3), 1);  // the first half alike, the second not
}

// A count past kThreadsPerCore per core, or a negative one, is refused by name before OpenMP
// sees it: libgomp crashed with 100000 threads and spun for minutes with 256 on 2 cores.
TEST(SetThreads, RefusesCountsPastTheLimitAndNegativeOnes) {
    const int limit = backend::thread_limit();
    EXPECT_EQ(limit, backend::kThreadsPerCore * backend::hardware_threads());
    const int before = backend::max_threads();
    backend::set_threads(limit, "--threads");
    EXPECT_EQ(backend::max_threads(), limit);
    for (const int64_t bad : {int64_t{limit} + 1, int64_t{100000}, int64_t{1} << 40}) {
        const std::string error = test::input_error_of([&] { backend::set_threads(bad, "train.threads"); });
        EXPECT_NE(error.find("train.threads: " + std::to_string(bad) + " threads"), std::string::npos) << error;
        EXPECT_NE(error.find("at most " + std::to_string(limit)), std::string::npos) << error;
    }
    const std::string negative = test::input_error_of([&] { backend::set_threads(-1, "--threads"); });
    EXPECT_NE(negative.find("--threads: -1 threads"), std::string::npos) << negative;
    EXPECT_EQ(backend::max_threads(), limit);  // refused counts change nothing
    backend::set_threads(before, "--threads");
}

}  // namespace
}  // namespace lmforge
