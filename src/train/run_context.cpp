#include "train/run_context.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "backend/threads.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "model/fp16_gemm.h"
#include "core/sysinfo.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

void check_writable(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    const std::string probe = dir + "/" + temporary_name("write-test");
    std::ofstream out(probe);
    if (ec || !out || !(out << "ok")) {
        throw InputError(fmt::format("{}: the run directory is not writable", dir),
                         "choose another run.dir or fix its permissions");
    }
    out.close();
    fs::remove(probe);
}

constexpr const char* kRunMarker = ".lmforge-run";

// Makes dir this run's, or refuses it: lmforge cleans up and replaces files in its run
// directories, so a directory of the user's must never become one. A new or empty directory
// gets the marker; one with it is a run directory already; one an lmforge from before the
// marker trained in (config.toml beside metrics.jsonl or checkpoints/) gets it too.
void claim_run_dir(const std::string& dir) {
    if (fs::exists(dir + "/" + kRunMarker)) return;
    std::error_code ec;
    const auto entries = std::distance(fs::directory_iterator(dir, ec), fs::directory_iterator());
    const bool older_run = fs::exists(dir + "/config.toml") &&
                           (fs::exists(dir + "/metrics.jsonl") || fs::is_directory(dir + "/checkpoints"));
    if (entries > 0 && !older_run) {
        throw InputError(fmt::format("run.dir {}: not a run directory of lmforge's (it holds {} entries and no {})", dir,
                                     entries, kRunMarker),
                         "choose a new or empty run.dir: lmforge cleans up and replaces files in its run directories");
    }
    write_text_atomic(dir + "/" + kRunMarker, "an lmforge run directory: lmforge train may write here\n");
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
    if (cfg.train.precision == "fp16") {
        check_fp16_supported();
        fp16_ = true;
        precision_ = Precision::Fp32;
        const char* route =
            gemm_->native_f16() ? "F16C, then oneDNN's fp16 matmul" : "F16C, then the fp32 GEMM";
        precision_why_ = fmt::format("asked for: fp16 GEMM inputs ({}), fp32 accumulation and "
                                     "master weights, dynamic loss scaling", route);
        gemm_ = std::make_unique<Fp16InputGemm>(std::move(gemm_));
    } else {
        precision_ = resolve_precision(cfg.train.precision, precision_why_);
    }
}

void RunContext::take_run_dir() {
    // Rank 0 writes the run directory; on resume every rank reads the checkpoint (with several
    // hosts, it lives on a shared file system).
    on_lead_agreed(*comm_, [&] {
        check_writable(run_dir_);
        claim_run_dir(run_dir_);
        lock_.emplace(run_dir_);
        store_.remove_stale_temporaries();  // another run's would still be in use: hence the lock
    });
}

RunContext::~RunContext() { log::set_file(""); }

void RunContext::log_to_run_dir() const {
    if (lead()) log::set_file(run_dir_ + "/train.log");
}

std::string RunContext::describe() const {
    return fmt::format("on {} ({}), {} process{} ({}) x {} threads, {} ({})", host_name(), cpu_model(), world(),
                       world() > 1 ? "es" : "", comm_->name(), backend::max_threads(),
                       fp16_ ? "fp16" : precision_name(precision_), precision_why_);
}

std::string run_dir_for(const TrainConfig& c, const std::string& config_path) {
    if (!c.run.dir.empty()) return c.run.dir;
    return "runs/" + fs::path(config_path).stem().string();
}

}  // namespace lmforge
