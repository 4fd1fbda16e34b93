#include "train/trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "backend/isa.h"
#include "backend/threads.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_files.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/sysinfo.h"
#include "core/timer.h"
#include "core/version.h"
#include "data/data_home.h"
#include "data/fingerprint.h"
#include "train/memory_report.h"
#include "data/tokenizer_spec.h"
#include "distributed/data_parallel.h"
#include "kernels/grad_norm.h"
#include "model/precision.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "train/metrics.h"
#include "train/mlflow_tracking.h"
#include "train/model_setup.h"
#include "train/multiple_choice_eval.h"
#include "train/plot.h"
#include "train/resume.h"
#include "train/run_context.h"
#include "train/stop_request.h"
#include "train/task.h"
#include "train/time_budget.h"
#include "train/train_step.h"

namespace lmforge {

namespace {

std::string fmt_ms(double seconds) { return fmt::format("{:.1f}", seconds * 1e3); }

// model.init_from is checked even where a resume will not read it: a typo is refused alike.
void check_init_from(const std::string& dir) {
    if (dir.empty() || std::filesystem::exists(dir + "/model.safetensors")) return;
    const bool hf = std::filesystem::exists(dir + "/config.json");
    throw InputError(fmt::format("model.init_from = {}: no model.safetensors there{}", dir,
                                 hf ? " (a Hugging Face directory)" : ""),
                     hf ? "convert it first: lmforge import --hf " + dir + " --output DIR" : "name a checkpoint directory");
}

// Time spent in each part of the steps since the last log line.
struct PhaseTimes {
    double data = 0, compute = 0, optimizer = 0, comm = 0;
    int64_t steps = 0;
};

class Trainer {
public:
    explicit Trainer(const TrainOptions& opts);
    TrainSummary run();

private:
    // Before the loop: everything that can be wrong is checked before anything is written.
    void open_tokenizer_of_data();
    void plan_batches();
    void read_latest();
    void start_weights();
    void check_processes_agree();
    void write_records();
    void start_tracking();
    void log_setup() const;
    void warn_about_lengths() const;

    // The loop.
    bool epoch_based() const { return steps_per_epoch_ > 0; }
    bool epoch_ends_at(int64_t step) const { return epoch_based() && step > 0 && step % steps_per_epoch_ == 0; }
    int64_t epoch_of(int64_t step) const { return epoch_based() ? step / steps_per_epoch_ + 1 : 0; }
    void at_step_start(int64_t step);
    void draw_first_samples();
    bool budget_pending() const;
    bool budget_due(int64_t steps_done) const;
    void fix_budget(int64_t steps_done);
    void train_one_step(int64_t step);
    void check_step(int64_t step, const StepResult& r);
    void log_step(int64_t step, const StepResult& r, double lr, double seconds);
    void log_epoch(int64_t step);
    void evaluate(int64_t step);
    void evaluate_multiple_choice(int64_t step);
    std::string save(int64_t step, bool only_best = false);
    void keep_best(int64_t step, bool saved);
    int stop_agreed();
    double model_gflops(double tokens_per_s);
    void finish(TrainSummary& summary);
    void end_tracking(const TrainSummary& summary);
    void write_report(TrainSummary& summary);

    const TrainConfig& cfg_;
    bool resume_asked_;
    RunContext ctx_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<Task> task_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<DataParallel> dp_;
    std::optional<std::string> latest_;
    TrainingState saved_;  // the latest checkpoint's, if any
    TrainingState state_;
    BatchPlan plan_;
    int64_t total_steps_ = 0, steps_per_epoch_ = 0, start_step_ = 0, end_step_ = 0;
    LrSchedule schedule_;
    std::vector<Batch> batches_;  // the step's micro-batches, reused
    std::string config_toml_, fingerprint_;
    CheckpointFiles hf_files_;  // what makes each checkpoint a Hugging Face directory too
    std::unique_ptr<MlflowTracker> mlflow_;  // lead only, with log.mlflow_uri
    std::unique_ptr<MetricsLog> metrics_;
    std::unique_ptr<Progress> bar_;
    std::unique_ptr<StopRequest> stop_;
    std::optional<Evaluation> last_eval_;
    std::unique_ptr<MultipleChoiceEval> choice_;  // eval.multiple_choice (null: none)
    std::string last_choice_;                      // its last evaluation, as logged
    int64_t last_eval_step_ = -1;
    double flops_per_token_ = 0, peak_gflops_ = 0;
    bool peak_checked_ = false;
    bool distilling_ = false;  // train.task = "distill": the soft term is logged as kl
    std::optional<LossScaler> scaler_;  // train.precision = "fp16"
    PhaseTimes phases_;
    double seconds_before_ = 0, seconds_now_ = 0, tokens_now_ = 0, last_loss_ = 0;
    // For train.time_budget: this session's clock, its steps after the first (which warms the
    // caches), an evaluation's, a multiple-choice evaluation's and a sample's time.
    Timer session_;
    double measured_seconds_ = 0, eval_seconds_ = 0, choice_seconds_ = 0, sample_seconds_ = 0;
    int64_t measured_steps_ = 0;
    int stopped_by_ = 0, agreed_stop_ = 0;
};

Trainer::Trainer(const TrainOptions& opts)
    : cfg_(opts.config), resume_asked_(opts.resume), ctx_(cfg_, run_dir_for(cfg_, opts.config_path)) {
    if (!std::filesystem::is_directory(cfg_.data.dir)) {
        throw InputError(fmt::format("{}: no such data directory", cfg_.data.dir),
                         "run lmforge prepare first, or fix data.dir");
    }
    check_init_from(cfg_.model.init_from);
    open_tokenizer_of_data();
    task_ = make_task(cfg_, tokenizer_.get());
    distilling_ = cfg_.train.task == "distill";
    model_ = task_->make_model(ctx_.gemm(), ctx_.precision());
    if (cfg_.train.grads == "bf16") model_->keep_grads_in_bf16();
    if (!cfg_.eval.multiple_choice.empty()) {
        choice_ = std::make_unique<MultipleChoiceEval>(cfg_, tokenizer_.get(), *model_);
    }
    ctx_.take_run_dir();
    read_latest();
    plan_batches();
    task_->start(plan_);
    std::vector<std::string> trained_on = task_->data_files();
    // LoRA's base shapes every step as the data does: a resume over another base is refused.
    if (model_->adapters_only()) trained_on.push_back(cfg_.model.init_from + "/model.safetensors");
    fingerprint_ = data_fingerprint(trained_on);
    if (latest_) {
        const std::string weights = *latest_ + "/model.safetensors";
        check_resumable(saved_, read_model_json(weights), task_->name(), nlohmann::json::parse(model_->config_json()),
                        fingerprint_, weights);
    }
    check_processes_agree();
    dp_ = make_data_parallel(cfg_, ctx_.comm(), *model_);
    start_weights();
    config_toml_ = config_to_toml(cfg_);
    hf_files_ = hf_files(*model_, tokenizer_.get(), task_->label_names());
    write_records();
}

void Trainer::open_tokenizer_of_data() {
    try {
        tokenizer_ = open_tokenizer(data_tokenizer_spec(cfg_), data_home());
    } catch (const InputError& e) {
        if (!cfg_.data.tokenizer.empty()) throw;
        log::warn("no tokenizer beside the data ({}): samples are shown as ids and the run directory keeps none",
                  e.what());
    }
}

void Trainer::read_latest() {
    latest_ = ctx_.store().latest();
    if (resume_asked_ && !latest_) {
        throw InputError(fmt::format("{}: no checkpoint to resume from", ctx_.run_dir()),
                         "drop --resume to start the run");
    }
    if (latest_) saved_ = read_training_state(*latest_);
    if (!latest_ && std::filesystem::exists(ctx_.run_dir() + "/best")) {
        log::warn("{} holds an earlier run without checkpoints: this one trains from the start and replaces its "
                  "best/, report and metrics",
                  ctx_.run_dir());
    }
}

void Trainer::plan_batches() {
    const int64_t B = cfg_.train.batch_size, per_micro = B * ctx_.world();
    int64_t saved_global = saved_.global_batch;
    if (saved_global == 0 && saved_.batch_tokens > 0) saved_global = saved_.batch_tokens / task_->max_seq_len();
    const int64_t global = resolve_global_batch(task_->requested_global_batch(ctx_.world()), latest_ ? saved_global : 0,
                                                per_micro, task_->epoch_size() > 0, latest_.value_or(ctx_.run_dir()));
    const int64_t eval_sequences = latest_ && saved_.eval_sequences > 0 ? saved_.eval_sequences
                                                                       : cfg_.eval.batches * per_micro;
    plan_ = {B, global / per_micro, ctx_.rank(), ctx_.world(), eval_sequences};
    batches_.resize(static_cast<size_t>(plan_.accumulation));
    if (task_->epoch_size() > 0) {
        steps_per_epoch_ = (task_->epoch_size() + global - 1) / global;
        total_steps_ = steps_per_epoch_ * cfg_.train.epochs;
    } else if (cfg_.train.time_budget > 0 && latest_ && saved_.budget_steps > 0) {
        total_steps_ = saved_.budget_steps;  // the length the budget fixed, kept
    } else {
        total_steps_ = cfg_.train.max_steps;  // with a budget, until it is fixed
    }
    if (latest_ && total_steps_ < saved_.step) {
        throw InputError(fmt::format("{} = {} is below the step the run has reached ({})",
                                     epoch_based() ? "train.epochs" : "train.max_steps",
                                     epoch_based() ? cfg_.train.epochs : cfg_.train.max_steps, saved_.step),
                         fmt::format("raise {}, or train in another run directory",
                                     epoch_based() ? "train.epochs" : "train.max_steps"));
    }
    // An epoch-based run's length follows from its data: its warm-up is held to half of it.
    const int64_t warmup = epoch_based() ? std::min(cfg_.optim.warmup_steps, total_steps_ / 2) : cfg_.optim.warmup_steps;
    schedule_ = {LrSchedule::parse_kind(cfg_.optim.schedule), cfg_.optim.lr, cfg_.optim.min_lr_ratio, warmup,
                 std::max<int64_t>(1, total_steps_)};
}

// Every process must have read the same checkpoint (or none): a run directory that is not on
// a file system they share would let them train from different steps.
void Trainer::check_processes_agree() {
    if (ctx_.world() == 1) return;
    const double step = latest_ ? static_cast<double>(saved_.step) : -1.0;
    const double highest = ctx_.comm().allreduce_max(step), lowest = -ctx_.comm().allreduce_max(-step);
    if (highest != lowest) {
        const auto show = [](double s) { return s < 0 ? std::string("none") : fmt::format("step {}", s); };
        throw InputError(fmt::format("{}: the processes found different checkpoints to resume from ({} to {})",
                                     ctx_.run_dir(), show(lowest), show(highest)),
                         "put the run directory on a file system every process shares");
    }
}

void Trainer::start_weights() {
    if (latest_) {
        OptimizerMoments moments = dp_->moments_for_load();
        load_checkpoint(*latest_, *model_, moments, state_);
        dp_->adopt_loaded(moments);
        try {
            task_->restore(state_.data);
        } catch (const nlohmann::json::exception& e) {
            throw InputError(fmt::format("{}/state.json: the data position is damaged: {}", *latest_, e.what()),
                             "resume from another checkpoint");
        }
    } else {
        model_->init_weights(static_cast<uint64_t>(cfg_.train.seed));
        // LoRA's base came with the model: init_from is not its parameters.
        if (!cfg_.model.init_from.empty() && !model_->adapters_only()) load_init_from(*model_, cfg_.model.init_from);
    }
    if (latest_ && state_.max_steps > 0 && state_.max_steps != total_steps_ && state_.step < total_steps_ &&
        schedule_.kind != LrSchedule::Kind::Constant) {
        LrSchedule before = schedule_;
        before.total_steps = state_.max_steps;
        log::warn("{} changes the run's length from {} to {} steps: the {} schedule is laid over the new length, so "
                  "the learning rate at step {} goes from {:.2e} to {:.2e}",
                  epoch_based() ? "train.epochs" : "train.max_steps", state_.max_steps, total_steps_,
                  cfg_.optim.schedule, state_.step,
                  before.at(std::min(state_.step, state_.max_steps - 1)), schedule_.at(state_.step));
    }
    if (ctx_.fp16()) {
        scaler_ = LossScaler{.scale = state_.loss_scale > 0 ? state_.loss_scale : cfg_.train.loss_scale,
                             .clean_steps = state_.loss_scale_clean_steps,
                             .skipped_steps = state_.skipped_steps};
    }
    state_.task = task_->name();
    state_.global_batch = plan_.global();
    state_.max_steps = total_steps_;
    state_.eval_sequences = plan_.eval_sequences;
    state_.data_fingerprint = fingerprint_;
    // Every process starts from rank 0's parameters exactly (seeded alike anyway).
    ctx_.comm().broadcast(model_->params().data(), model_->params().size() * sizeof(float), 0);
    model_->weights_changed();
    model_->plan(plan_.B, task_->max_seq_len());  // the largest batch: every later one fits in its memory
    start_step_ = end_step_ = state_.step;
    seconds_before_ = state_.train_seconds;
}

// Only now, with the inputs past every check: the run directory records them.
void Trainer::write_records() {
    on_lead_agreed(ctx_.comm(), [&] {
        write_text_atomic(ctx_.run_dir() + "/config.toml", config_toml_);
        if (tokenizer_) tokenizer_->save(ctx_.run_dir() + "/tokenizer");
        metrics_ = std::make_unique<MetricsLog>(ctx_.run_dir(), cfg_.log.tensorboard, state_.step);
        if (!cfg_.log.mlflow_uri.empty()) start_tracking();
    });
    ctx_.log_to_run_dir();
}

// The MLflow run starts on the tracker's own thread; the tags say where this session runs.
void Trainer::start_tracking() {
    MlflowPairs tags = {{"host", host_name()}, {"lmforge.version", version()}, {"task", task_->name()},
                        {"processes", std::to_string(ctx_.world())}, {"mlflow.source.name", "lmforge train"}};
    if (std::string(git_commit()) != "unknown") tags.emplace_back("lmforge.git_commit", git_commit());
    const std::string name = std::filesystem::path(ctx_.run_dir()).lexically_normal().filename().string();
    mlflow_ = std::make_unique<MlflowTracker>(MlflowTracker::Setup{
        .uri = cfg_.log.mlflow_uri,
        .experiment = cfg_.log.mlflow_experiment,
        .run_name = cfg_.log.run_name.empty() ? (name.empty() ? "run" : name) : cfg_.log.run_name,
        .run_dir = ctx_.run_dir(),
        .resuming = latest_.has_value(),
        .params = config_values(cfg_),
        .tags = tags});
    metrics_->also_to([this](int64_t step, const std::string& group, const MetricValues& values) {
        if (mlflow_) mlflow_->add(step, group, values);
    });
}

void Trainer::log_setup() const {
    const int64_t G = plan_.global();
    log::info("{} {}, run directory {}", version_line(), ctx_.describe(), ctx_.run_dir());
    log::info("kernels: {}", backend::describe_isa());
    if (latest_) log::info("resuming from {} (step {})", *latest_, start_step_);
    log::info("data parallel: {}, optimizer state {:.1f} MB on this process (moments in {})",
              cfg_.optim.zero_stage == 1 ? "ZeRO-1 (moments sharded, gradients reduce-scattered, parameters all-gathered)"
              : ctx_.world() == 1        ? "one process, nothing to synchronise"
              : cfg_.dist.overlap ? fmt::format("gradients all-reduced in {:g} MB buckets during backward", cfg_.dist.bucket_mb)
                                  : "gradients all-reduced after backward",
              dp_->moment_bytes() / 1e6, moment_precision_name(dp_->optimizer().config().moments));
    log::info("model: {}, {} parameters; activations {:.0f} MiB (recompute {})", model_summary(*model_),
              model_->layout().count(), static_cast<double>(model_->activation_bytes()) / 1048576.0,
              cfg_.train.recompute);
    log::info("memory: {}", describe_memory(memory_parts(*model_, *dp_), ctx_.precision()));
    log::info("{}", task_->describe_data());
    if (choice_) {
        log::info("multiple choice: {} items of {}, {}", choice_->items(), choice_->path(),
                  choice_->every() > 0 ? fmt::format("every {} steps and at the end", choice_->every()) : "at the end");
    }
    const std::string steps = budget_pending()
                                  ? fmt::format("as many steps as fit in {:g} min, at most {}", cfg_.train.time_budget,
                                                total_steps_)
                                  : fmt::format("{} steps", total_steps_);
    log::info("batch: {} sequences x {} accumulation x {} process{} = {} sequences per step; {}{}", plan_.B,
              plan_.accumulation, ctx_.world(), ctx_.world() > 1 ? "es" : "", G, steps,
              epoch_based() ? fmt::format(" ({} epochs of {})", cfg_.train.epochs, steps_per_epoch_) : "");
    if (flops_per_token_ > 0) {
        log::info("peak: {:.4g} GFLOP/s per process ({}), the denominator of the MFU", peak_gflops_,
                  cfg_.log.peak_gflops > 0 ? "log.peak_gflops"
                                           : fmt::format("measured: {}", peak_unit(ctx_.precision())));
    }
    log::to_file(fmt::format("resolved configuration (also in {}/config.toml):\n{}", ctx_.run_dir(), config_toml_));
}

void Trainer::warn_about_lengths() const {
    if (!ctx_.lead()) return;
    const int64_t steps = total_steps_;
    if (!epoch_based() && cfg_.optim.warmup_steps >= steps) {
        log::warn("optim.warmup_steps = {} is not below train.max_steps = {}: the learning rate rises for the whole "
                  "run and {}",
                  cfg_.optim.warmup_steps, steps,
                  cfg_.optim.warmup_steps == steps ? "reaches optim.lr only at the last step" : "never reaches optim.lr");
    }
    if (!epoch_based() && cfg_.checkpoint.every >= steps) {
        log::warn("checkpoint.every = {} is not below train.max_steps = {}: the run saves no checkpoint before its "
                  "end, so a crash loses all of it",
                  cfg_.checkpoint.every, steps);
    }
    if (!epoch_based() && task_->has_validation() && cfg_.eval.every >= steps) {
        log::warn("eval.every = {} is not below train.max_steps = {}: validation only at the start and the end",
                  cfg_.eval.every, steps);
    }
}

TrainSummary Trainer::run() {
    session_.reset();
    flops_per_token_ = task_->flops_per_token(*model_);
    if (flops_per_token_ > 0) {
        peak_gflops_ = cfg_.log.peak_gflops > 0 ? cfg_.log.peak_gflops : peak_gflops(ctx_.precision());
    }
    log_setup();
    if (!budget_pending()) warn_about_lengths();  // with a budget, once it is fixed
    if (ctx_.lead() && Progress::terminal()) {
        bar_ = std::make_unique<Progress>("training", static_cast<double>(total_steps_), "steps", 1.0);
        bar_->update(static_cast<double>(start_step_), "");
        log::set_stderr_sink([this](const std::string& line) { bar_->print_above(line); });
    }
    // Ctrl-C and the like stop the loop between steps; every process stops after the same one.
    using Launcher = StopRequest::Launcher;
    const Communicator& comm = ctx_.comm();
    stop_ = std::make_unique<StopRequest>(comm.started_by_srun() ? Launcher::Srun
                                          : comm.name() == "mpi" ? Launcher::Mpirun
                                                                 : Launcher::None);
    end_step_ = total_steps_;
    for (int64_t step = start_step_; step < end_step_; step++) {
        at_step_start(step);
        train_one_step(step);
        if (budget_due(step + 1)) fix_budget(step + 1);
        if (const int sig = stop_agreed(); sig != 0) {
            agreed_stop_ = sig;
            if (step + 1 < end_step_) {  // on the last step, the run simply ends
                stopped_by_ = sig;
                end_step_ = step + 1;
            }
        }
    }
    TrainSummary summary;
    finish(summary);
    summary.seconds = session_.seconds();
    return summary;
}

// nanoGPT's order: what falls due at a step comes before it, so a checkpoint at step N holds
// the weights after N steps, with the evaluation of those weights.
void Trainer::at_step_start(int64_t step) {
    const bool epoch_end = epoch_ends_at(step);
    if (epoch_end || (cfg_.eval.every > 0 && step % cfg_.eval.every == 0)) evaluate(step);
    if (choice_ && choice_->due_at(step)) evaluate_multiple_choice(step);
    if (epoch_end) log_epoch(step);
    const bool checkpoint_due =
        (epoch_end || (cfg_.checkpoint.every > 0 && step % cfg_.checkpoint.every == 0)) && step > start_step_;
    if (checkpoint_due) save(step);
    keep_best(step, checkpoint_due);
    // The epoch's tally goes only after its checkpoint, which keeps it: a run resumed there logs
    // the same epoch line again, as the metrics it rewrites from that step on must hold it.
    if (epoch_end) state_.epoch_loss = {};
    if (step == 0) draw_first_samples();
    if (ctx_.lead() && cfg_.sample.every > 0 && step > 0 && step % cfg_.sample.every == 0) {
        for (const std::string& s : task_->samples(*model_, ctx_.gemm(), 1)) log::info("step {:>6}: sample: {}", step, s);
    }
}

void Trainer::train_one_step(int64_t step) {
    Timer timer, data_timer;
    for (Batch& b : batches_) {
        task_->next_batch(b);
        b.step = step;
    }
    phases_.data += data_timer.seconds();
    const double lr = schedule_.at(step);
    const double loss_scale = scaler_ ? scaler_->scale : 1.0;
    const StepResult r =
        train_step(*model_, *dp_, batches_, static_cast<float>(lr), cfg_.optim.grad_clip, loss_scale);
    const double seconds = timer.seconds();
    const double loss = r.loss.mean();
    check_step(step, r);
    phases_.compute += r.compute_seconds;
    phases_.optimizer += r.optimizer_seconds;
    phases_.comm += r.comm_seconds;
    phases_.steps++;
    state_.tokens_seen += r.tokens;
    state_.epoch_loss += r.loss;
    tokens_now_ += static_cast<double>(r.tokens);
    seconds_now_ += seconds;
    if (step > start_step_) {
        measured_seconds_ += seconds;
        measured_steps_++;
    }
    last_loss_ = loss;
    log_step(step, r, lr, seconds);
}

// A loss that is not finite ends the run, and so do gradients that are not, unless fp16's loss
// scaling takes them for an overflow: then the step was skipped, and the scale is halved.
void Trainer::check_step(int64_t step, const StepResult& r) {
    const double loss = r.loss.mean();
    const bool finite = std::isfinite(r.grad_norm);
    if (!std::isfinite(loss) || (!finite && !scaler_)) {
        throw Error(fmt::format("step {}: the {} is {}", step, std::isfinite(loss) ? "gradient norm" : "loss",
                                std::isfinite(loss) ? r.grad_norm : loss),
                    "lower optim.lr or raise warm-up");
    }
    const double scale = scaler_ ? scaler_->scale : 0;
    if (scaler_ && !scaler_->after_step(finite)) {
        log::info("step {:>6}: the gradients overflowed at loss scale {:g}: step skipped, the scale halved", step,
                  scale);
    }
}

// The untrained model's samples, for the end's before-and-after (lm; sample.count of them).
void Trainer::draw_first_samples() {
    if (!ctx_.lead() || cfg_.sample.count == 0) return;
    Timer timer;
    state_.first_samples = task_->samples(*model_, ctx_.gemm(), cfg_.sample.count);
    if (!state_.first_samples.empty()) sample_seconds_ = timer.seconds() / static_cast<double>(state_.first_samples.size());
    for (const std::string& text : state_.first_samples) log::info("step      0: sample (untrained): {}", text);
}

// train.time_budget's length is still to be fixed (it is kept once it is).
bool Trainer::budget_pending() const {
    return cfg_.train.time_budget > 0 && !epoch_based() && state_.budget_steps == 0;
}

bool Trainer::budget_due(int64_t steps_done) const {
    return budget_pending() && steps_done >= kBudgetCalibrationSteps && measured_steps_ >= 3;
}

// train.time_budget: the run's length from the speed measured so far, fixed by the lead for
// every process; the schedule, the log and each later checkpoint take it.
void Trainer::fix_budget(int64_t steps_done) {
    int64_t steps = 0;
    const double step_seconds = measured_seconds_ / static_cast<double>(measured_steps_);
    if (ctx_.lead()) {
        const BudgetFigures f{.budget_seconds = cfg_.train.time_budget * 60,
                              .spent_seconds = seconds_before_ + session_.seconds(),
                              .steps_done = steps_done,
                              .step_seconds = step_seconds,
                              .eval_seconds = eval_seconds_,
                              .eval_every = cfg_.eval.every,
                              .choice_seconds = choice_seconds_,
                              .choice_every = choice_ ? choice_->every() : 0,
                              .sample_seconds = sample_seconds_,
                              .sample_every = cfg_.sample.every,
                              .samples_at_end = cfg_.sample.count};
        steps = steps_within_budget(f, cfg_.train.max_steps);
    }
    ctx_.comm().broadcast(&steps, sizeof steps, 0);
    total_steps_ = end_step_ = steps;
    schedule_.total_steps = steps;
    state_.max_steps = state_.budget_steps = steps;
    if (bar_) bar_->set_total(static_cast<double>(steps));
    log::info("time budget of {:g} min: {} steps at {:.0f} ms a step (measured over {}), evaluations of {:.1f} s{}",
              cfg_.train.time_budget, steps, step_seconds * 1e3, measured_steps_, eval_seconds_,
              choice_ ? fmt::format(", multiple choice of {:.1f} s", choice_seconds_) : "");
    warn_about_lengths();
}

void Trainer::log_step(int64_t step, const StepResult& r, double lr, double seconds) {
    const double tok_s = static_cast<double>(r.tokens) / seconds;
    if (metrics_) {
        std::vector<std::pair<std::string, double>> values = {
            {"loss", r.loss.mean()}, {"accuracy", r.loss.accuracy()}, {"lr", lr},
            {"grad_norm", r.grad_norm}, {"tokens_per_s", tok_s}, {"step_ms", seconds * 1e3}};
        if (epoch_based()) values.emplace_back("epoch", static_cast<double>(epoch_of(step)));
        if (distilling_) {  // the teacher's terms: T² · KL, and 1 − cos of the hidden states
            values.emplace_back("kl", r.loss.soft_mean());
            if (cfg_.distill.cosine_weight > 0) values.emplace_back("cos", r.loss.cosine_mean());
        }
        if (scaler_) {  // the scale after the step, and the steps skipped so far
            values.emplace_back("loss_scale", scaler_->scale);
            values.emplace_back("skipped_steps", static_cast<double>(scaler_->skipped_steps));
        }
        metrics_->write(step, "train", values);
    }
    if (bar_) bar_->update(static_cast<double>(step + 1), fmt::format("loss {:.3f}", r.loss.mean()));
    if (step % cfg_.log.every != 0 && step + 1 != total_steps_) return;
    const auto n = static_cast<double>(phases_.steps);
    const std::string mfu =
        flops_per_token_ > 0 ? fmt::format(" | MFU {:.1f}%", 100 * model_gflops(tok_s) / peak_gflops_) : "";
    log::info("step {:>6}/{}{} | loss {:.4f}{} | lr {:.2e} | norm {:.3f} | {:.0f} ms | {:.0f} tok/s{} | data {} "
              "fwd+bwd {} opt {} comm {} ms{}",
              step, total_steps_, epoch_based() ? fmt::format(" (epoch {})", epoch_of(step)) : "", r.loss.mean(),
              distilling_ ? fmt::format(" | kl {:.4f}", r.loss.soft_mean()) : "", lr,
              r.grad_norm, seconds * 1e3, tok_s, mfu, fmt_ms(phases_.data / n), fmt_ms(phases_.compute / n),
              fmt_ms(phases_.optimizer / n), fmt_ms(phases_.comm / n),
              dp_->buckets() > 0 ? fmt::format(" ({} buckets)", dp_->buckets()) : "");
    phases_ = {};
}

// The model's FLOP rate per process. No model outruns the peak measured at the start; if one
// seems to, that measurement may have been spoilt by something holding the cores: measure once
// more, keeping the higher figure. A peak given in the configuration is the user's, and only
// flagged.
double Trainer::model_gflops(double tokens_per_s) {
    const double gflops = flops_per_token_ * tokens_per_s / 1e9 / ctx_.world();
    if (gflops <= peak_gflops_ || peak_checked_) return gflops;
    peak_checked_ = true;
    if (cfg_.log.peak_gflops > 0) {
        log::warn("log.peak_gflops = {:g} is below the {:.0f} GFLOP/s the model reaches per process", peak_gflops_,
                  gflops);
        return gflops;
    }
    const double again = remeasured_peak_gflops(ctx_.precision());
    log::warn("the model reaches {:.0f} GFLOP/s per process, above the {:.0f} measured as the peak at the start; "
              "measured again: {:.0f}",
              gflops, peak_gflops_, again);
    peak_gflops_ = again;
    return gflops;
}

// The epoch that ends at `step`: its training loss, in the log and the metrics.
void Trainer::log_epoch(int64_t step) {
    const int64_t epoch = step / steps_per_epoch_;
    const LossSum& e = state_.epoch_loss;
    log::info("epoch {}/{} | train loss {:.4f} accuracy {:.4f}{}", epoch, cfg_.train.epochs, e.mean(), e.accuracy(),
              last_eval_step_ == step ? " | " + task_->describe(*last_eval_) : "");
    if (metrics_) {
        metrics_->write(step, "epoch", {{"epoch", static_cast<double>(epoch)}, {"epoch_loss", e.mean()},
                                        {"epoch_accuracy", e.accuracy()}});
    }
}

void Trainer::evaluate(int64_t step) {
    if (!task_->has_validation()) return;
    Timer timer;
    const Evaluation e = task_->evaluate(*model_, ctx_.comm());
    eval_seconds_ = timer.seconds();
    last_eval_ = e;
    last_eval_step_ = step;
    if (metrics_) {
        std::vector<std::pair<std::string, double>> values = e.metrics;
        if (epoch_based()) values.emplace_back("epoch", static_cast<double>(step / steps_per_epoch_));
        metrics_->write(step, "val", values);
    }
    log::info("step {:>6}: {}{}", step, task_->describe(e),
              e.better_than(state_.best_metric, state_.best_loss) ? " (best)" : "");
}

// Read-only on the model (forward passes; no RNG, no data position): a run evaluates the same
// with or without it, and resumes exactly.
void Trainer::evaluate_multiple_choice(int64_t step) {
    Timer timer;
    const ChoiceResult r = choice_->evaluate(*model_, ctx_.comm());
    choice_seconds_ = timer.seconds();
    if (metrics_) metrics_->write(step, "multiple_choice", MultipleChoiceEval::metrics(r));
    last_choice_ = MultipleChoiceEval::describe(r);
    log::info("step {:>6}: {}", step, last_choice_);
}

// A checkpoint at `step`; with only_best, written as best/ alone (an evaluation that improved
// on a step that keeps no checkpoint).
std::string Trainer::save(int64_t step, bool only_best) {
    // Weights an update has wrecked (a learning rate far too high) must not become the
    // checkpoint every resume starts from: the last good one stays `latest`. (sum_of_squares
    // squares in float: a NaN, an inf, or any weight past ~1e19 makes the sum infinite.)
    const std::span<const float> weights = model_->params();
    if (!std::isfinite(kernels::sum_of_squares(weights.data(), static_cast<int64_t>(weights.size())))) {
        const std::optional<std::string> kept = ctx_.store().latest();
        throw Error(fmt::format("step {}: the weights are no longer finite numbers (the last update diverged); not "
                                "saved: {}",
                                step, kept ? *kept + " stays the latest checkpoint" : "the run has no checkpoint"),
                    "lower optim.lr (or raise optim.warmup_steps) and resume");
    }
    state_.step = step;
    state_.data = task_->data_state();
    if (scaler_) {
        state_.loss_scale = scaler_->scale;
        state_.loss_scale_clean_steps = scaler_->clean_steps;
        state_.skipped_steps = scaler_->skipped_steps;
    }
    state_.train_seconds = seconds_before_ + seconds_now_;
    const bool best = last_eval_step_ == step && last_eval_->better_than(state_.best_metric, state_.best_loss);
    if (best) {
        state_.best_metric = last_eval_->rank_metric;
        state_.best_loss = last_eval_->loss;
        state_.best_step = step;
    }
    CheckpointFiles files = task_->checkpoint_files();
    files.emplace_back("config.toml", config_toml_);
    files.insert(files.end(), hf_files_.begin(), hf_files_.end());
    const DataParallel::MomentsToSave moments = dp_->moments_for_save(0);  // collective
    std::string dir;
    if (ctx_.lead()) {
        dir = only_best ? ctx_.store().save_best(*model_, moments.moments(), state_, files)
                        : ctx_.store().save(*model_, moments.moments(), state_, files, best);
        log::info("step {:>6}: checkpoint {}{}", step, dir, best && !only_best ? " (best)" : "");
    }
    ctx_.comm().barrier();
    return dir;
}

// After a step's evaluation and checkpoint: an evaluation that improved is kept as best/ even
// where no checkpoint falls.
void Trainer::keep_best(int64_t step, bool saved) {
    if (!saved && last_eval_step_ == step && last_eval_->better_than(state_.best_metric, state_.best_loss)) {
        save(step, true);
    }
}

int Trainer::stop_agreed() {
    const int sig = stop_->signal();
    return ctx_.world() > 1 ? static_cast<int>(ctx_.comm().allreduce_max(static_cast<double>(sig))) : sig;
}

void Trainer::finish(TrainSummary& summary) {
    summary.run_dir = ctx_.run_dir();
    summary.start_step = start_step_;
    summary.steps = end_step_;
    summary.total_steps = total_steps_;
    summary.rank = ctx_.rank();
    if (stopped_by_ != 0) {
        // Only a checkpoint, so that the run resumes exactly where it stopped.
        summary.stopped_by = stopped_by_;
        summary.checkpoint = save(end_step_);
        log::info("step {:>6}: stopped by {}; the same command resumes the run", end_step_, signal_name(stopped_by_));
    } else {
        // The end: a last evaluation and checkpoint, then final/.
        evaluate(end_step_);
        if (choice_) evaluate_multiple_choice(end_step_);
        if (epoch_based()) log_epoch(end_step_);
        const bool final_checkpoint = start_step_ < end_step_ || !latest_;
        const std::string dir = final_checkpoint ? save(end_step_) : "";
        keep_best(end_step_, final_checkpoint);
        if (ctx_.lead() && final_checkpoint) ctx_.store().publish_final(dir);
    }
    // Only now, with the last checkpoint written: a first signal during the final evaluation
    // and save is absorbed (it would have ended the run without them); a second ends it.
    if (agreed_stop_ != 0 && stop_->signal() == 0) stop_->ignore_late(agreed_stop_);
    stop_.reset();  // from here on, signals act as usual
    if (bar_) {
        bar_->finish();
        log::set_stderr_sink({});
    }
    summary.train_loss = last_loss_;
    summary.val_loss = last_eval_ ? last_eval_->loss : std::numeric_limits<double>::quiet_NaN();
    summary.evaluation = last_eval_ ? task_->describe(*last_eval_) : "";
    summary.multiple_choice = last_choice_;
    summary.tokens_per_s = seconds_now_ > 0 ? tokens_now_ / seconds_now_ : 0;
    if (ctx_.lead() && cfg_.log.plots) summary.plots = write_loss_plots(ctx_.run_dir());
    if (stopped_by_ == 0) write_report(summary);
    end_tracking(summary);
    log::set_file("");
}

// The MLflow run's end: the plots, and KILLED for a run a signal stopped. (An exception ends it
// FAILED, as the tracker is destroyed unfinished.)
void Trainer::end_tracking(const TrainSummary& summary) {
    if (!mlflow_) return;
    std::vector<std::string> artifacts;
    for (const std::string& plot : summary.plots) {
        artifacts.push_back(std::filesystem::path(plot).lexically_relative(ctx_.run_dir()).generic_string());
    }
    mlflow_->finish(stopped_by_ != 0 ? MlflowTracker::End::Killed : MlflowTracker::End::Finished, artifacts);
    mlflow_.reset();
}

void Trainer::write_report(TrainSummary& summary) {
    if (ctx_.lead()) summary.samples = task_->samples(*model_, ctx_.gemm(), cfg_.sample.count);
    if (task_->report_on_best() && std::filesystem::exists(ctx_.run_dir() + "/best/model.safetensors")) {
        load_model_weights(*model_, ctx_.run_dir() + "/best/model.safetensors");
        model_->weights_changed();
    }
    const int64_t best = state_.best_step;
    const std::string where = epoch_based() && best >= 0 ? fmt::format("step {}, epoch {}", best, best / steps_per_epoch_)
                                                         : fmt::format("step {}", best);
    summary.first_samples = state_.first_samples;
    summary.report = task_->report(*model_, {ctx_.comm(), ctx_.gemm(), ctx_.run_dir(), best, where, summary.val_loss,
                                                      state_.best_loss});
    if (!summary.report.empty()) log::to_file(summary.report);
}

}  // namespace

TrainSummary train(const TrainOptions& opts) { return Trainer(opts).run(); }

}  // namespace lmforge
