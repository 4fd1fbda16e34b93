// How many threads each process of a run takes on its host, by how the launcher bound it.
#include <gtest/gtest.h>

#include "dist/communicator.h"

namespace lmforge {
namespace {

TEST(ThreadsFor, UnboundProcessesShareTheLaunchersCores) {
    EXPECT_EQ(threads_for(8, 8, 1), 8);
    EXPECT_EQ(threads_for(8, 8, 2), 4);  // mpirun --bind-to none
    EXPECT_EQ(threads_for(8, 8, 3), 2);
    EXPECT_EQ(threads_for(2, 2, 4), 1);  // oversubscribed: never 0
}

TEST(ThreadsFor, ABindingToItsShareIsUsedWhole) {
    EXPECT_EQ(threads_for(4, 8, 2), 4);   // --map-by slot:PE=4 (it was 4 / 2 = 2: half idle)
    EXPECT_EQ(threads_for(4, 16, 4), 4);  // srun --cpus-per-task=4
    EXPECT_EQ(threads_for(4, 8, 4), 2);   // 2 processes bound to each 4-core socket
}

TEST(ThreadsFor, ABindingBelowItsShareKeepsToIt) {
    EXPECT_EQ(threads_for(1, 2, 2), 1);  // OpenMPI's default for 2 processes: a core each
    EXPECT_EQ(threads_for(1, 8, 2), 1);
}

}  // namespace
}  // namespace lmforge
