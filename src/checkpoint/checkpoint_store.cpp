#include "checkpoint/checkpoint_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/file_io.h"

namespace lmforge {

namespace fs = std::filesystem;

CheckpointStore::CheckpointStore(std::string run_dir, int64_t keep_last)
    : run_dir_(std::move(run_dir)), dir_(run_dir_ + "/checkpoints"), keep_last_(keep_last) {}

namespace {

// dir published as hard links to the files of `from`: a second name, not a copy.
void publish_links(const std::string& dir, const std::string& from) {
    publish_directory(dir, [&](const std::string& tmp) {
        for (const auto& e : fs::directory_iterator(from)) {
            fs::create_hard_link(e.path(), fs::path(tmp) / e.path().filename());
        }
    });
}

}  // namespace

std::string CheckpointStore::save(const Model& model, const OptimizerMoments& moments, const TrainingState& state,
                                  const CheckpointFiles& files, bool is_best) {
    const std::string name = fmt::format("step_{:06d}", state.step);
    const std::string path = dir_ + "/" + name;
    fs::create_directories(dir_);
    save_checkpoint(path, model, moments, state, files);
    // best/: hard links to this checkpoint's files, published before `latest` moves on: a kill
    // between the two then resumes from the previous checkpoint, whose state has the previous
    // best, and the replayed evaluation publishes best/ again (the other order left a best/
    // that no resume would renew).
    if (is_best) publish_links(run_dir_ + "/best", path);
    write_text_atomic(run_dir_ + "/latest", name + "\n");
    // Oldest first by step number: past step 999999 the names grow a digit and no longer sort
    // as text.
    std::vector<std::pair<int64_t, std::string>> steps;
    for (const auto& e : fs::directory_iterator(dir_)) {
        const std::string n = e.path().filename().string();
        if (!e.is_directory() || n.rfind("step_", 0) != 0) continue;
        try {
            size_t used = 0;
            const int64_t step = std::stoll(n.substr(5), &used);
            if (used == n.size() - 5) steps.emplace_back(step, n);
        } catch (const std::exception&) {
            // not a checkpoint of ours: left alone
        }
    }
    std::sort(steps.begin(), steps.end());
    for (size_t i = 0; i + static_cast<size_t>(keep_last_) < steps.size(); i++) {
        if (steps[i].second != name) fs::remove_all(fs::path(dir_) / steps[i].second);
    }
    return path;
}

std::string CheckpointStore::save_best(const Model& model, const OptimizerMoments& moments, const TrainingState& state,
                                       const CheckpointFiles& files) {
    const std::string path = run_dir_ + "/best";
    save_checkpoint(path, model, moments, state, files);
    return path;
}

void CheckpointStore::publish_final(const std::string& checkpoint) const { publish_links(run_dir_ + "/final", checkpoint); }

std::optional<std::string> CheckpointStore::latest() const {
    std::ifstream in(run_dir_ + "/latest");
    std::string name;
    if (!(in >> name)) return std::nullopt;
    // Only a checkpoint of this run: "step_" and digits, nothing that reaches elsewhere.
    const bool named = name.size() > 5 && name.rfind("step_", 0) == 0 &&
                       name.find_first_not_of("0123456789", 5) == std::string::npos;
    if (!named) {
        throw InputError(fmt::format("{}/latest names \"{}\", not a checkpoint of this run (step_N)", run_dir_, name),
                         "write the name of a directory under checkpoints/ into it, or remove it to start over");
    }
    const std::string path = dir_ + "/" + name;
    if (!fs::is_directory(path)) {
        throw InputError(fmt::format("{}/latest names {}, which does not exist", run_dir_, name),
                         "remove the latest file to start over, or restore the checkpoint");
    }
    return path;
}

void CheckpointStore::remove_stale_temporaries() const {
    remove_dead_temporaries(run_dir_);
    remove_dead_temporaries(dir_);
}

}  // namespace lmforge
