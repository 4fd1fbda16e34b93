#include "train/run_context.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backend/threads.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sysinfo.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

void check_writable(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    const std::string probe = dir + "/.write-test";
    std::ofstream out(probe);
    if (ec || !out || !(out << "ok")) {
        throw InputError(fmt::format("{}: the run directory is not writable", dir),
                         "choose another run.dir or fix its permissions");
    }
    out.close();
    fs::remove(probe);
}

}  // namespace

RunContext::RunContext(const TrainConfig& cfg, const std::string& run_dir)
    : run_dir_(run_dir), comm_(make_communicator()), store_(run_dir, cfg.checkpoint.keep_last) {
    if (world() > 1) {
        log::set_rank(rank());
        if (!lead()) log::set_level(log::Level::Warn);
    }
    backend::set_threads(cfg.train.threads > 0 ? cfg.train.threads : default_threads(*comm_), "train.threads");
    gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
    precision_ = resolve_precision(cfg.train.precision, precision_why_);
}

void RunContext::take_run_dir() {
    // Rank 0 writes the run directory; on resume every rank reads the checkpoint (with several
    // hosts, it lives on a shared file system).
    on_lead_agreed(*comm_, [&] {
        check_writable(run_dir_);
        lock_.emplace(run_dir_);
        store_.remove_stale_temporaries();  // another run's would still be in use: hence the lock
    });
}

RunContext::~RunContext() { log::set_file(""); }

void RunContext::log_to_run_dir() const {
    if (lead()) log::set_file(run_dir_ + "/train.log");
}

std::string RunContext::describe() const {
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    return fmt::format("on {} ({}), {} process{} ({}) x {} threads, {} ({})", host, cpu_model(), world(),
                       world() > 1 ? "es" : "", comm_->name(), backend::max_threads(), precision_name(precision_),
                       precision_why_);
}

std::string run_dir_for(const TrainConfig& c, const std::string& config_path) {
    if (!c.run.dir.empty()) return c.run.dir;
    return "runs/" + fs::path(config_path).stem().string();
}

}  // namespace lmforge
