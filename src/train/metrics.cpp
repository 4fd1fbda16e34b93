#include "train/metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"

namespace lmforge {

MetricsLog::MetricsLog(const std::string& run_dir, bool tensorboard, int64_t keep_before)
    : path_(run_dir + "/metrics.jsonl") {
    std::string kept;
    if (keep_before > 0) {
        std::ifstream in(path_);
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line, nullptr, false);
            if (j.is_object() && j.contains("step") && j["step"].get<int64_t>() < keep_before) kept += line + "\n";
        }
    }
    write_text_atomic(path_, kept);
    file_ = std::fopen(path_.c_str(), "a");
    if (file_ == nullptr) throw Error(fmt::format("{}: cannot open for appending", path_));
    if (tensorboard) {
        std::filesystem::create_directories(run_dir + "/tensorboard");
        tb_ = std::make_unique<TensorBoardWriter>(run_dir + "/tensorboard");
        tb_->session_start(keep_before);  // on resume, TensorBoard drops what metrics.jsonl dropped
    }
}

MetricsLog::~MetricsLog() {
    if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::write(int64_t step, const std::string& group, const MetricValues& values) {
    nlohmann::ordered_json j = {{"step", step}};
    for (const auto& [k, v] : values) {
        j[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
        if (tb_ && std::isfinite(v)) tb_->scalar(group + "/" + k, step, v);
    }
    const std::string line = j.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
        throw Error(fmt::format("{}: cannot write", path_), "check free disk space");
    }
    if (sink_) sink_(step, group, values);
}

std::vector<MetricsLine> read_metrics_lines(const std::string& run_dir) {
    std::vector<MetricsLine> lines;
    std::ifstream in(run_dir + "/metrics.jsonl");
    for (std::string text; std::getline(in, text);) {
        const auto j = nlohmann::json::parse(text, nullptr, false);
        if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) continue;
        MetricsLine line{j["step"].get<int64_t>(), "val", {}};
        if (j.contains("epoch_loss")) {
            line.group = "epoch";
        } else if (j.contains("mc_accuracy")) {
            line.group = "multiple_choice";
        } else if (j.contains("loss")) {
            line.group = "train";
        }
        for (const auto& [key, value] : j.items()) {
            if (key != "step" && value.is_number()) line.values.emplace_back(key, value.get<double>());
        }
        lines.push_back(std::move(line));
    }
    return lines;
}

}  // namespace lmforge
