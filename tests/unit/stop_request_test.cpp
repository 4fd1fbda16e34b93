// Which signals ask a run to stop with a checkpoint, by what started the process, and what a
// second one does: alone it ends the process at once; under srun, which repeats SIGTERM itself
// (a job's time limit sends it twice, about 50 ms apart, on Slurm 22.05), it is absorbed. And
// how a process tells that srun started it, from the variables srun sets in each task.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "distributed/communicator.h"
#include "train/stop_request.h"

namespace lmforge {
namespace {

using Launcher = StopRequest::Launcher;

class StopRequestTest : public ::testing::Test {
protected:
    // Each case runs in a child of its own, re-executed: a signal's default action ends it.
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

bool handles(int sig) {
    struct sigaction current = {};
    sigaction(sig, nullptr, &current);
    return current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN;
}

TEST_F(StopRequestTest, AloneSigtermAsksForAStopAndASecondEndsTheProcessAtOnce) {
    EXPECT_EXIT(
        {
            StopRequest stop(Launcher::None);
            std::raise(SIGTERM);
            if (stop.signal() != SIGTERM) std::_Exit(3);
            std::raise(SIGTERM);  // the default action: the process ends here
            std::_Exit(0);
        },
        ::testing::KilledBySignal(SIGTERM), "stop requested: .*send it again to stop at once");
}

TEST_F(StopRequestTest, UnderSrunRepeatedSignalsAreAbsorbedAndSaidOnce) {
    const std::string once =
        "^lmforge: stop requested: finishing this step to save a checkpoint \\(scancel --signal=KILL stops at "
        "once\\)\n$";
    EXPECT_EXIT(
        {
            StopRequest stop(Launcher::Srun);
            std::raise(SIGTERM);
            std::raise(SIGTERM);  // as a time limit sends it
            std::raise(SIGINT);
            if (stop.signal() == 0) std::_Exit(3);
            std::_Exit(0);
        },
        ::testing::ExitedWithCode(0), once);
    // Once the run has stopped, repeats until the process ends change nothing either.
    EXPECT_EXIT(
        {
            {
                StopRequest stop(Launcher::Srun);
                std::raise(SIGTERM);
            }
            std::raise(SIGTERM);
            std::raise(SIGINT);
            std::_Exit(0);
        },
        ::testing::ExitedWithCode(0), once);
}

TEST_F(StopRequestTest, UnderSrunARunThatWasNotStoppedLeavesTheSignalsAsTheyWere) {
    EXPECT_EXIT(
        {
            { StopRequest stop(Launcher::Srun); }
            std::raise(SIGTERM);
            std::_Exit(0);
        },
        ::testing::KilledBySignal(SIGTERM), "");
}

TEST(StopRequest, UnderMpirunOnlySigusr1IsTaken) {
    // mpirun answers Ctrl-C and SIGTERM by terminating the processes itself; it forwards SIGUSR1.
    const bool term = handles(SIGTERM), interrupt = handles(SIGINT);
    {
        StopRequest stop(Launcher::Mpirun);
        EXPECT_TRUE(handles(SIGUSR1));
        EXPECT_EQ(handles(SIGTERM), term);
        EXPECT_EQ(handles(SIGINT), interrupt);
    }
    {
        StopRequest stop(Launcher::Srun);
        EXPECT_TRUE(handles(SIGUSR1));
        EXPECT_TRUE(handles(SIGTERM));
        EXPECT_TRUE(handles(SIGINT));
    }
    EXPECT_FALSE(handles(SIGUSR1));
}

// Sets the variables srun (or mpirun) would for the life of one test, then puts back what was.
class SlurmEnvironment : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* name : kNames) {
            const char* value = std::getenv(name);
            saved_.emplace_back(value ? std::optional<std::string>(value) : std::nullopt);
            ::unsetenv(name);
        }
    }
    void TearDown() override {
        for (size_t i = 0; i < saved_.size(); i++) {
            if (saved_[i]) {
                ::setenv(kNames[i], saved_[i]->c_str(), 1);
            } else {
                ::unsetenv(kNames[i]);
            }
        }
    }
    static void task(const char* procid, const char* tasks) {
        ::setenv("SLURM_STEP_ID", "0", 1);
        ::setenv("SLURM_PROCID", procid, 1);
        ::setenv("SLURM_STEP_NUM_TASKS", tasks, 1);
    }

    static constexpr const char* kNames[] = {"SLURM_STEP_ID", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS",
                                             "OMPI_COMM_WORLD_SIZE"};
    std::vector<std::optional<std::string>> saved_;
};

TEST_F(SlurmEnvironment, SrunsTaskIsItsPlaceInTheStep) {
    EXPECT_EQ(srun_task().procid, -1);  // not under Slurm
    task("1", "2");
    EXPECT_EQ(srun_task().procid, 1);
    EXPECT_EQ(srun_task().tasks, 2);
    ::unsetenv("SLURM_STEP_ID");  // a batch script's own process, outside any step
    EXPECT_EQ(srun_task().procid, -1);
    task("1", "2");
    ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);  // mpirun's process inside an allocation
    EXPECT_EQ(srun_task().procid, -1);
}

TEST_F(SlurmEnvironment, AVariableThatIsNoCountIsRefusedByName) {
    for (const auto& [procid, tasks, named] : std::vector<std::tuple<const char*, const char*, std::string>>{
             {"x", "2", "SLURM_PROCID = \"x\""},
             {"-1", "2", "SLURM_PROCID = \"-1\""},
             {"1", "0", "SLURM_STEP_NUM_TASKS = \"0\""},
             {"1", "2 ", "SLURM_STEP_NUM_TASKS = \"2 \""},
             {"1", "99999999999", "SLURM_STEP_NUM_TASKS = \"99999999999\""}}) {
        task(procid, tasks);
        try {
            srun_task();
            ADD_FAILURE() << procid << " of " << tasks << " was taken";
        } catch (const InputError& e) {
            EXPECT_NE(e.one_line().find(named + " in the environment"), std::string::npos) << e.one_line();
        }
    }
}

TEST_F(SlurmEnvironment, OneTaskOfSrunWithoutMpiIsStartedBySrun) {
    // srun --mpi=none -n 1 (or a cluster whose MpiDefault is none): no MPI, but Slurm's signals.
    task("0", "1");
    const auto one = make_communicator();
    EXPECT_EQ(one->name(), "single");
    EXPECT_TRUE(one->started_by_srun());
    task("1", "2");  // one of two processes srun started without MPI: not a run of its own
    EXPECT_FALSE(make_communicator()->started_by_srun());
    ::unsetenv("SLURM_STEP_ID");
    EXPECT_FALSE(make_communicator()->started_by_srun());
}

}  // namespace
}  // namespace lmforge
