#include "train/trainer.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "backend/gemm.h"
#include "backend/threads.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/sysinfo.h"
#include "core/timer.h"
#include "data/data_home.h"
#include "data/dataloader.h"
#include "io/checkpoint.h"
#include "kernels/grad_norm.h"
#include "model/gpt2.h"
#include "model/gpt2_decoder.h"
#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/lr_schedule.h"
#include "train/benchmark.h"
#include "train/checkpoint_store.h"
#include "train/evaluator.h"
#include "train/metrics.h"
#include "train/model_setup.h"
#include "train/plot.h"
#include "train/sampler.h"
#include "train/stop_request.h"
#include "tokenizer/tokenizer_io.h"

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

std::string fmt_ms(double s) { return fmt::format("{:.1f}", s * 1e3); }

// A run resumes only the model it was started with. Some changes would load without a shape
// error (fewer layers read the first ones; other heads leave every tensor's shape as it was),
// so the checkpoint's recorded configuration is compared field by field.
void check_same_model(const std::string& weights, const Gpt2Config& now) {
    const Gpt2Config saved = read_model_config(weights);
    const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
        {"n_layer", {saved.n_layer, now.n_layer}},          {"n_head", {saved.n_head, now.n_head}},
        {"n_embd", {saved.n_embd, now.n_embd}},             {"vocab_size", {saved.vocab_size, now.vocab_size}},
        {"block_size", {saved.block_size, now.block_size}}, {"num_labels", {saved.num_labels, now.num_labels}},
    };
    for (const auto& [name, values] : fields) {
        if (values.first != values.second) {
            throw InputError(fmt::format("{}: the checkpoint's model has {} = {}, the configuration {}", weights, name,
                                         values.first, values.second),
                             "resume with the run's own model settings, or start a new run directory");
        }
    }
}

}  // namespace

std::string run_dir_for(const TrainConfig& c, const std::string& config_path) {
    if (!c.run.dir.empty()) return c.run.dir;
    return "runs/" + fs::path(config_path).stem().string();
}

TrainSummary train(const TrainOptions& opts) {
    const TrainConfig& cfg = opts.config;
    Timer session;
    TrainSummary summary;
    summary.run_dir = run_dir_for(cfg, opts.config_path);
    const std::string& run = summary.run_dir;

    // Everything that can be wrong with the inputs is checked before anything is written.
    if (!fs::is_directory(cfg.data.dir)) {
        throw InputError(fmt::format("{}: no such data directory", cfg.data.dir),
                         "run lmforge prepare first, or fix data.dir");
    }
    const Gpt2Config mcfg = model_config(cfg, cfg.train.seq_len);
    const std::unique_ptr<Communicator> comm = make_communicator();
    const int world = comm->size(), rank = comm->rank();
    const bool lead = rank == 0;  // writes the run directory, logs, metrics, plots
    if (world > 1) {
        log::set_rank(rank);
        if (!lead) log::set_level(log::Level::Warn);
    }
    const int64_t B = cfg.train.batch_size, T = cfg.train.seq_len;
    const int64_t per_step = B * T * world;
    int64_t total = cfg.train.total_batch_tokens > 0 ? cfg.train.total_batch_tokens : per_step;
    if (total % per_step != 0) {
        throw InputError(fmt::format("train.total_batch_tokens = {} is not a multiple of batch_size · seq_len · "
                                     "processes = {}·{}·{} = {}", total, B, T, world, per_step),
                         fmt::format("use a multiple of {}", per_step));
    }
    int64_t accum = total / per_step;
    backend::set_threads(cfg.train.threads > 0 ? cfg.train.threads : default_threads(*comm), "train.threads");
    DataLoader train_loader({cfg.data.dir, "train", B, T, rank, world, cfg.data.shuffle,
                             static_cast<uint64_t>(cfg.train.seed), mcfg.vocab_size});
    // No validation shards: no evaluation, said once. Shards that are there but damaged, or
    // too short for one window, are an error like the training split's.
    std::unique_ptr<DataLoader> val_loader;
    bool has_val = true;
    try {
        find_shards(cfg.data.dir, "val");
    } catch (const InputError& e) {
        has_val = false;
        log::warn("no validation data ({}): evaluation is skipped", e.what());
    }
    if (has_val) {
        val_loader = std::make_unique<DataLoader>(DataLoaderOptions{cfg.data.dir, "val", B, T, rank, world, false,
                                                                    static_cast<uint64_t>(cfg.train.seed), mcfg.vocab_size});
    }
    std::unique_ptr<Tokenizer> tokenizer;
    try {
        tokenizer = load_tokenizer(data_tokenizer_spec(cfg), data_home());
    } catch (const InputError& e) {
        if (!cfg.data.tokenizer.empty()) throw;
        log::warn("no tokenizer beside the data ({}): samples are shown as ids", e.what());
    }

    // The run directory: rank 0 writes it; on resume every rank reads the checkpoint (with
    // several hosts, it lives on a shared file system).
    CheckpointStore store(run, cfg.checkpoint.keep_last);
    const std::string config_toml = config_to_toml(cfg);
    std::optional<DirectoryLock> run_lock;  // held until the run ends
    on_lead_agreed(*comm, [&] {
        check_writable(run);
        run_lock.emplace(run);
        store.remove_stale_temporaries();  // another run's would still be in use: hence the lock
    });
    const std::optional<std::string> latest = store.latest();
    if (opts.resume && !latest) {
        throw InputError(fmt::format("{}: no checkpoint to resume from", run), "drop --resume to start the run");
    }
    if (latest) check_same_model(*latest + "/model.safetensors", mcfg);
    if (tokenizer && !cfg.sample.prompt.empty() && (cfg.sample.every > 0 || cfg.sample.count > 0)) {
        const size_t n = tokenizer->encode_ordinary(cfg.sample.prompt).size();
        if (n > static_cast<size_t>(mcfg.block_size)) {
            throw InputError(fmt::format("sample.prompt is {} tokens, longer than the model's context ({} tokens)", n,
                                         mcfg.block_size),
                             "shorten sample.prompt");
        }
    }
    if (lead) log::set_file(run + "/train.log");

    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    std::string precision_why;
    const Precision precision = resolve_precision(cfg.train.precision, precision_why);
    const Recompute recompute = parse_recompute(cfg.train.recompute);
    Gpt2 model(mcfg, *gemm, precision, recompute);
    const bool peak_given = cfg.log.peak_gflops > 0;
    double peak_gflops = peak_given ? cfg.log.peak_gflops : lmforge::peak_gflops(precision);
    const std::unique_ptr<DataParallel> data_parallel = make_data_parallel(cfg, *comm, model);
    DataParallel& dp = *data_parallel;
    TrainingState state;
    state.sample_rng = Rng(static_cast<uint64_t>(cfg.sample.seed)).state();
    if (latest) {
        OptimizerMoments moments = dp.moments_for_load();
        load_checkpoint(*latest, model, moments, state);
        dp.adopt_loaded(moments);
        train_loader.restore(state.loader);
        log::info("resuming from {} (step {})", *latest, state.step);
        if (state.batch_tokens > 0 && state.batch_tokens != total) {
            if (cfg.train.total_batch_tokens > 0) {
                log::warn("train.total_batch_tokens = {} changes the run's global batch of {} tokens", total,
                          state.batch_tokens);
            } else if (state.batch_tokens % per_step == 0) {
                // The global batch is the run's, whatever the number of processes now.
                total = state.batch_tokens;
                accum = total / per_step;
            } else {
                throw InputError(fmt::format("{}: the run's global batch of {} tokens is not a multiple of "
                                             "batch_size · seq_len · processes = {} here",
                                             *latest, state.batch_tokens, per_step),
                                 "resume with a process count that divides it, or set train.total_batch_tokens");
            }
        }
    } else {
        model.init_weights(static_cast<uint64_t>(cfg.train.seed));
        if (!cfg.model.init_from.empty()) {
            load_model_weights(model, cfg.model.init_from + "/model.safetensors");
            log::info("weights from {}", cfg.model.init_from);
        }
    }
    state.batch_tokens = total;
    // Every process must have read the same checkpoint (or none): a run directory that is not
    // on a file system they share would let them train from different steps.
    if (world > 1) {
        const double step = latest ? static_cast<double>(state.step) : -1.0;
        const double highest = comm->allreduce_max(step), lowest = -comm->allreduce_max(-step);
        if (highest != lowest) {
            const auto show = [](double s) { return s < 0 ? std::string("none") : fmt::format("step {}", s); };
            throw InputError(fmt::format("{}: the processes found different checkpoints to resume from ({} to {})", run,
                                         show(lowest), show(highest)),
                             "put the run directory on a file system every process shares");
        }
    }
    if (latest && cfg.train.max_steps < state.step) {
        throw InputError(fmt::format("train.max_steps = {} is below the step the run has reached ({})",
                                     cfg.train.max_steps, state.step),
                         "raise train.max_steps, or train in another run directory");
    }
    // The inputs have passed every check: the run directory may record them.
    if (lead) {
        write_text_atomic(run + "/config.toml", config_toml);
        if (tokenizer) tokenizer->save(run + "/tokenizer");
    }
    // Every rank starts from rank 0's parameters exactly (seeded alike anyway).
    comm->broadcast(model.params().data(), model.params().size() * sizeof(float), 0);
    model.weights_changed();
    summary.start_step = state.step;
    model.plan(B, T);
    const LrSchedule schedule{LrSchedule::parse_kind(cfg.optim.schedule), cfg.optim.lr, cfg.optim.min_lr_ratio,
                              cfg.optim.warmup_steps, cfg.train.max_steps};
    if (lead && latest && state.max_steps > 0 && state.max_steps != cfg.train.max_steps &&
        schedule.kind != LrSchedule::Kind::Constant && state.step < cfg.train.max_steps) {
        LrSchedule before = schedule;
        before.total_steps = state.max_steps;
        log::warn("train.max_steps changes from {} to {}: the {} schedule is laid over the new length, so the "
                  "learning rate at step {} goes from {:.2e} to {:.2e}",
                  state.max_steps, cfg.train.max_steps, cfg.optim.schedule, state.step,
                  before.at(std::min(state.step, state.max_steps - 1)), schedule.at(state.step));
    }
    state.max_steps = cfg.train.max_steps;
    if (lead && cfg.optim.warmup_steps >= cfg.train.max_steps) {
        log::warn("optim.warmup_steps = {} is not below train.max_steps = {}: the learning rate rises for the whole "
                  "run and {}",
                  cfg.optim.warmup_steps, cfg.train.max_steps,
                  cfg.optim.warmup_steps == cfg.train.max_steps ? "reaches optim.lr only at the last step"
                                                                : "never reaches optim.lr");
    }
    if (lead && cfg.checkpoint.every >= cfg.train.max_steps) {
        log::warn("checkpoint.every = {} is not below train.max_steps = {}: the run saves no checkpoint before its "
                  "end, so a crash loses all of it",
                  cfg.checkpoint.every, cfg.train.max_steps);
    }
    if (lead && val_loader && cfg.eval.every >= cfg.train.max_steps) {
        log::warn("eval.every = {} is not below train.max_steps = {}: validation only at the start and the end",
                  cfg.eval.every, cfg.train.max_steps);
    }
    std::unique_ptr<MetricsLog> metrics;
    if (lead) metrics = std::make_unique<MetricsLog>(run, cfg.log.tensorboard, state.step);
    Rng sample_rng;
    sample_rng.set_state(state.sample_rng);

    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    log::info("lmforge 0.1.0 on {} ({}), {} process{} ({}) x {} threads, {} ({}), run directory {}", host,
              cpu_model(), world, world > 1 ? "es" : "", comm->name(), backend::max_threads(), precision_name(precision),
              precision_why, run);
    {
        log::info("data parallel: {}, optimizer state {:.1f} MB on this process (moments in {})", cfg.optim.zero_stage == 1
                      ? "ZeRO-1 (moments sharded, gradients reduce-scattered, parameters all-gathered)"
                      : world == 1       ? "one process, nothing to synchronise"
                      : cfg.dist.overlap ? fmt::format("gradients all-reduced in {:g} MB buckets during backward", cfg.dist.bucket_mb)
                                         : "gradients all-reduced after backward",
                  dp.moment_bytes() / 1e6, moment_precision_name(dp.optimizer().config().moments));
    }
    log::info("model: {} layers, {} heads, width {}, vocabulary {} (padded {}), context {}: {} parameters",
              mcfg.n_layer, mcfg.n_head, mcfg.n_embd, mcfg.vocab_size, mcfg.padded_vocab(), mcfg.block_size,
              model.layout().count());
    {
        const double mib = 1024.0 * 1024.0;
        const double kept_all = static_cast<double>(gpt2_acts_bytes(mcfg, B, T, precision, Recompute::None, model.head_one_pass())) / mib;
        const double used = static_cast<double>(model.activation_bytes()) / mib;
        log::info("activations: {:.0f} MiB, recompute {}{}", used, recompute_name(recompute),
                  recompute == Recompute::None ? "" : fmt::format(" (saves {:.0f} MiB of {:.0f})", kept_all - used, kept_all));
    }
    log::info("batch: {} sequences x {} tokens x {} accumulation = {} tokens per step; {} steps; data {} ({} train windows)",
              B, T, accum, total, cfg.train.max_steps, cfg.data.dir, train_loader.windows_per_epoch());
    log::info("peak: {:.4g} GFLOP/s per process ({}), the denominator of the MFU", peak_gflops,
              peak_given ? "log.peak_gflops" : "measured");
    log::to_file(fmt::format("resolved configuration (also in {}/config.toml):\n{}", run, config_toml));

    const double flops_token = flops_per_token(mcfg, model.layout().count(), T);
    // No model outruns the peak measured on FMAs (AMX aside: oneDNN's bf16 GEMMs there beat
    // the AVX512_BF16 figure). If one seems to, the measurement at the start may have been
    // spoilt by something holding the cores: measure once more, keeping the higher figure.
    // A peak given in the configuration is the user's, and only flagged.
    bool peak_checked = false;
    const auto check_peak = [&](double model_gflops) {
        if (model_gflops <= peak_gflops || peak_checked) return;
        peak_checked = true;
        if (peak_given) {
            log::warn("log.peak_gflops = {:g} is below the {:.0f} GFLOP/s the model reaches per process", peak_gflops,
                      model_gflops);
            return;
        }
        const double again = remeasured_peak_gflops(precision);
        log::warn("the model reaches {:.0f} GFLOP/s per process, above the {:.0f} measured as the peak at the start; "
                  "measured again: {:.0f}", model_gflops, peak_gflops, again);
        peak_gflops = again;
    };
    std::vector<int32_t> x(B * T), y(B * T);
    const double train_seconds_before = state.train_seconds;
    double tokens_this_session = 0, train_seconds_this_session = 0;
    double last_val = std::numeric_limits<double>::quiet_NaN();
    int64_t last_val_step = -1;
    const auto run_eval = [&](int64_t step) {
        if (!val_loader) return;
        EvalResult e = evaluate(model, *val_loader, cfg.eval.batches);  // this rank's part
        e.loss = comm->allreduce_sum(e.loss_sum) / comm->allreduce_sum(static_cast<double>(e.tokens));
        e.perplexity = std::exp(e.loss);
        last_val = e.loss;
        last_val_step = step;
        if (metrics) metrics->write(step, "val", {{"val_loss", e.loss}, {"val_perplexity", e.perplexity}});
        log::info("step {:>6}: val loss {:.4f}, perplexity {:.2f}{}", step, e.loss, e.perplexity,
                  e.loss < state.best_val_loss ? " (best)" : "");
    };
    // A checkpoint at `step`; with only_best, written as best/ alone (an evaluation that
    // improved on a step that keeps no checkpoint).
    const auto save = [&](int64_t step, bool only_best = false) {
        // Weights an update has wrecked (a learning rate far too high) must not become the
        // checkpoint every resume starts from: the last good one stays `latest`.
        // (sum_of_squares squares in float: a NaN, an inf, or any weight past ~1e19 makes the sum
        // infinite; lr = 1e30 gives weights of ~1e30.)
        const std::span<const float> weights = model.params();
        if (!std::isfinite(kernels::sum_of_squares(weights.data(), static_cast<int64_t>(weights.size())))) {
            const std::optional<std::string> kept = store.latest();
            throw Error(fmt::format("step {}: the weights are no longer finite numbers (the last update diverged); not "
                                    "saved: {}",
                                    step, kept ? *kept + " stays the latest checkpoint" : "the run has no checkpoint"),
                        "lower optim.lr (or raise optim.warmup_steps) and resume");
        }
        state.step = step;
        state.loader = train_loader.state();
        state.sample_rng = sample_rng.state();
        state.train_seconds = train_seconds_before + train_seconds_this_session;
        const bool best = last_val_step == step && last_val < state.best_val_loss;
        if (best) state.best_val_loss = last_val;
        const DataParallel::MomentsToSave moments = dp.moments_for_save(0);  // collective
        std::string dir;
        if (lead) {
            dir = only_best ? store.save_best(model, moments.moments(), state, config_toml)
                            : store.save(model, moments.moments(), state, config_toml, best);
            log::info("step {:>6}: checkpoint {}{}", step, dir, best && !only_best ? " (best)" : "");
        }
        comm->barrier();
        return dir;
    };
    // After the evaluations and checkpoints of a step: an evaluation that improved is kept as
    // best/ even where no checkpoint falls.
    const auto keep_best = [&](int64_t step, bool saved) {
        if (!saved && last_val_step == step && last_val < state.best_val_loss) save(step, true);
    };
    const auto show_sample = [&](int64_t step) -> std::string {
        const int32_t start = tokenizer && tokenizer->eot_id() ? *tokenizer->eot_id() : 0;
        std::vector<int32_t> prompt = tokenizer && !cfg.sample.prompt.empty()
                                          ? tokenizer->encode_ordinary(cfg.sample.prompt)
                                          : std::vector<int32_t>{start};
        if (prompt.empty()) prompt = {start};
        Gpt2Decoder decoder(model, *gemm);
        const SampleOptions so{cfg.sample.tokens, cfg.sample.temperature, cfg.sample.top_k, 1.0, std::nullopt};
        const std::vector<int32_t> ids = generate(decoder, prompt, so, sample_rng);
        std::string text;
        if (tokenizer) {
            text = (cfg.sample.prompt.empty() ? "" : cfg.sample.prompt) + tokenizer->decode(ids);
        } else {
            for (int32_t id : ids) text += std::to_string(id) + " ";
        }
        if (step >= 0) log::info("step {:>6}: sample: {}", step, text);
        return text;
    };

    std::unique_ptr<Progress> bar;
    if (lead && Progress::terminal()) {
        bar = std::make_unique<Progress>("training", static_cast<double>(cfg.train.max_steps), "steps", 1.0);
        bar->update(static_cast<double>(state.step), "");
        log::set_stderr_sink([&bar](const std::string& line) { bar->print_above(line); });
    }
    double data_s = 0, fwd_s = 0, bwd_s = 0, opt_s = 0, comm_s = 0;
    int64_t steps_since_log = 0;  // the steps those phase times add up
    // Ctrl-C and the like stop the loop between steps; every rank stops after the same one.
    auto stop = std::make_unique<StopRequest>(comm->name() == "mpi");
    const auto stop_agreed = [&]() -> int {
        return world > 1 ? static_cast<int>(comm->allreduce_max(static_cast<double>(stop->signal()))) : stop->signal();
    };
    int64_t end_step = cfg.train.max_steps;  // a stop request makes it sooner
    int agreed_stop = 0;                     // the signal every rank agreed to stop on
    for (int64_t step = state.step; step < end_step; step++) {
        const double lr = schedule.at(step);
        if (cfg.eval.every > 0 && step % cfg.eval.every == 0) run_eval(step);
        const bool checkpoint_due = cfg.checkpoint.every > 0 && step % cfg.checkpoint.every == 0 && step > summary.start_step;
        if (checkpoint_due) save(step);
        keep_best(step, checkpoint_due);
        if (lead && cfg.sample.every > 0 && step > 0 && step % cfg.sample.every == 0) show_sample(step);

        Timer step_timer, phase;
        double loss_sum = 0;
        model.zero_grad();
        for (int64_t micro = 0; micro < accum; micro++) {
            phase.reset();
            train_loader.next_batch(x.data(), y.data());
            data_s += phase.seconds();
            phase.reset();
            // Scaled so that summing over micro-steps and ranks gives the mean gradient.
            const float loss_scale = 1.0f / static_cast<float>(accum * world);
            model.expect_backward(loss_scale);
            loss_sum += model.forward(x.data(), y.data());
            fwd_s += phase.seconds();
            phase.reset();
            dp.before_backward(micro + 1 == accum);
            model.backward(loss_scale);
            bwd_s += phase.seconds();
        }
        phase.reset();
        const double norm = dp.step(static_cast<float>(lr), cfg.optim.grad_clip);
        opt_s += phase.seconds() - dp.comm_seconds();
        comm_s += dp.comm_seconds();
        steps_since_log++;
        const double step_s = step_timer.seconds();
        const double loss = (world > 1 ? comm->allreduce_sum(loss_sum) / world : loss_sum) / static_cast<double>(accum);
        if (!std::isfinite(loss) || !std::isfinite(norm)) {
            throw Error(fmt::format("step {}: the {} is {}", step, std::isfinite(loss) ? "gradient norm" : "loss",
                                    std::isfinite(loss) ? norm : loss),
                        "lower optim.lr or raise warm-up");
        }
        const double tok_s = static_cast<double>(total) / step_s;
        tokens_this_session += static_cast<double>(total);
        train_seconds_this_session += step_s;
        state.tokens_seen += total;
        if (metrics) {
            metrics->write(step, "train", {{"loss", loss}, {"lr", lr}, {"grad_norm", norm}, {"tokens_per_s", tok_s},
                                           {"step_ms", step_s * 1e3}});
        }
        if (step % cfg.log.every == 0 || step + 1 == cfg.train.max_steps) {
            const double model_gflops = flops_token * tok_s / 1e9 / world;  // per process
            check_peak(model_gflops);
            const auto n = static_cast<double>(steps_since_log);
            log::info("step {:>6}/{} | loss {:.4f} | lr {:.2e} | norm {:.3f} | {:.0f} ms | {:.0f} tok/s | MFU {:.1f}% | "
                      "data {} fwd {} bwd {} opt {} comm {} ms{}",
                      step, cfg.train.max_steps, loss, lr, norm, step_s * 1e3, tok_s,
                      100 * model_gflops / peak_gflops, fmt_ms(data_s / n),
                      fmt_ms(fwd_s / n), fmt_ms(bwd_s / n), fmt_ms(opt_s / n), fmt_ms(comm_s / n),
                      dp.buckets() > 0 ? fmt::format(" ({} buckets)", dp.buckets()) : "");
            data_s = fwd_s = bwd_s = opt_s = comm_s = 0;
            steps_since_log = 0;
        }
        if (bar) bar->update(static_cast<double>(step + 1), fmt::format("loss {:.3f}", loss));
        summary.train_loss = loss;
        if (const int sig = stop_agreed(); sig != 0) {
            agreed_stop = sig;
            if (step + 1 < end_step) {  // on the last step, the run simply ends
                summary.stopped_by = sig;
                end_step = step + 1;
            }
        }
    }
    state.train_seconds = train_seconds_before + train_seconds_this_session;
    summary.steps = end_step;
    if (summary.stopped_by != 0) {
        // Only a checkpoint, so that the run resumes exactly where it stopped.
        summary.checkpoint = save(end_step);
        log::info("step {:>6}: stopped by {}; the same command resumes the run", end_step,
                  signal_name(summary.stopped_by));
    } else {
        // The end: a last evaluation and checkpoint, the plots, the samples.
        run_eval(end_step);
        const bool final_checkpoint = summary.start_step < end_step || !latest;
        if (final_checkpoint) save(end_step);
        keep_best(end_step, final_checkpoint);
    }
    // Only now, with the last checkpoint written: a first signal during the final evaluation
    // and save is absorbed (it would have ended the run without them); a second ends it.
    if (agreed_stop != 0 && stop->signal() == 0) stop->ignore_late(agreed_stop);
    stop.reset();  // from here on, signals act as usual
    if (bar) {
        bar->finish();
        log::set_stderr_sink({});
    }
    summary.val_loss = last_val;
    summary.val_perplexity = std::exp(last_val);
    if (lead && cfg.log.plots) summary.plots = write_loss_plots(run);
    for (int64_t i = 0; lead && summary.stopped_by == 0 && i < cfg.sample.count; i++) {
        summary.samples.push_back(show_sample(-1));
    }
    summary.rank = rank;
    summary.seconds = session.seconds();
    summary.tokens_per_s = train_seconds_this_session > 0 ? tokens_this_session / train_seconds_this_session : 0;
    log::set_file("");
    return summary;
}

}  // namespace lmforge
