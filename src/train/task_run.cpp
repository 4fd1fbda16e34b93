#include "train/task_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "backend/threads.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "data/data_home.h"
#include "io/checkpoint.h"
#include "tokenizer/tokenizer_io.h"
#include "train/model_setup.h"
#include "train/plot.h"

namespace lmforge {

TaskRun::TaskRun(const TrainConfig& cfg, const std::string& run_dir)
    : cfg_(cfg), run_dir_(run_dir), comm_(make_communicator()) {
    if (world() > 1) {
        log::set_rank(rank());
        if (!lead()) log::set_level(log::Level::Warn);
    }
    backend::set_threads(cfg.train.threads > 0 ? cfg.train.threads : default_threads(*comm_), "train.threads");
    gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
    precision_ = resolve_precision(cfg.train.precision, precision_why_);
    on_lead_agreed(*comm_, [&] { run_lock_.emplace(run_dir); });
    if (lead()) log::set_file(run_dir + "/train.log");
}

void TaskRun::write_records() {
    const std::string& run_dir = run_dir_;
    if (std::filesystem::exists(run_dir + "/best")) {
        log::warn("{} holds an earlier run: this one trains from the start and replaces its best/, report and metrics",
                  run_dir);
    }
    write_text_atomic(run_dir + "/config.toml", config_to_toml(cfg_));
    // The run's tokenizer beside its checkpoints, as an LM run keeps it: export finds the
    // encoder's [PAD] id from it, sample and eval their text.
    try {
        tokenizer_ = load_tokenizer(data_tokenizer_spec(cfg_), data_home());
        tokenizer_->save(run_dir + "/tokenizer");
    } catch (const InputError& e) {
        log::warn("no tokenizer beside the data ({}): the run directory holds none", e.what());
    }
    metrics_ = std::make_unique<MetricsLog>(run_dir, cfg_.log.tensorboard, 0);
}

TaskRun::~TaskRun() { log::set_file(""); }

void TaskRun::start_model(Model& model, int64_t B, int64_t T) {
    model.init_weights(static_cast<uint64_t>(cfg_.train.seed));
    if (!cfg_.model.init_from.empty()) {
        const std::string path = cfg_.model.init_from + "/model.safetensors";
        const std::vector<std::string> missing = load_matching_weights(model, path);
        if (missing.size() == model.layout().specs().size()) {
            throw InputError(fmt::format("{}: holds none of this model's tensors", path),
                             "model.init_from must be a checkpoint of the same architecture (gpt2 or bert)");
        }
        log::info("weights from {}{}", cfg_.model.init_from,
                  missing.empty() ? "" : fmt::format(" (new: {})", fmt::join(missing, ", ")));
    }
    comm_->broadcast(model.params().data(), model.params().size() * sizeof(float), 0);
    model.weights_changed();
    model.plan(B, T);  // the largest batch: every later, smaller one fits in its memory
    dp_ = make_data_parallel(cfg_, *comm_, model);
    // Only now, with the model built and loaded: a run refused before this leaves an earlier
    // run's records as they were.
    on_lead_agreed(*comm_, [&] { write_records(); });
}

LrSchedule TaskRun::schedule(int64_t total_steps) const {
    return {LrSchedule::parse_kind(cfg_.optim.schedule), cfg_.optim.lr, cfg_.optim.min_lr_ratio,
            std::min(cfg_.optim.warmup_steps, total_steps / 2), std::max<int64_t>(1, total_steps)};
}

void TaskRun::write_plots() const {
    if (!lead() || !cfg_.log.plots) return;
    log::info("plots: {}", fmt::join(write_loss_plots(run_dir_, metrics_x_axis(cfg_)), ", "));
}

std::string TaskRun::describe() const {
    return fmt::format("{} process{} x {} threads, {} ({})", world(), world() > 1 ? "es" : "", backend::max_threads(),
                       precision_name(precision_), precision_why_);
}

}  // namespace lmforge
