#include "backend/best_figures.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "core/file_io.h"
#include "core/home_dir.h"
#include "core/sysinfo.h"

namespace lmforge::backend {

namespace {

std::mutex record_mutex;

nlohmann::json read_record(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nlohmann::json::object();
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace

std::string best_figures_path() { return lmforge_home() + "/machine-figures.json"; }

double best_figure(const std::string& name, double measured) {
    if (!std::isfinite(measured) || measured <= 0) return measured;  // nothing to keep
    const std::lock_guard lock(record_mutex);
    const std::string path = best_figures_path();
    nlohmann::json record = read_record(path);
    nlohmann::json& mine = record[cpu_signature()];
    if (!mine.is_object()) mine = nlohmann::json::object();
    const nlohmann::json& kept = mine[name];
    const double best = kept.is_number() ? std::max(kept.get<double>(), measured) : measured;
    if (kept.is_number() && best == kept.get<double>()) return best;
    mine[name] = best;
    try {
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        write_text_atomic(path, record.dump(2) + "\n");
    } catch (const std::exception&) {
        // Unwritable: the figure holds for this process only.
    }
    return best;
}

}  // namespace lmforge::backend
