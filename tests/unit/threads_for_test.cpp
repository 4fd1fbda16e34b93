// How many threads each process of a run takes, by how many processes share its cores.
#include <gtest/gtest.h>

#include <vector>

#include "distributed/communicator.h"

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

}  // namespace
}  // namespace lmforge
