// Line charts as SVG and PNG (no plotting library): the loss curves of a run, drawn from its
// metrics.jsonl at the end of training and by `lmforge plot RUN_DIR`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lmforge {

struct Series {
    std::string name;
    unsigned color;  // 0xRRGGBB
    std::vector<std::pair<double, double>> points;  // (x, y), x increasing
    bool markers = false;
};

struct Chart {
    std::string title, x_label, y_label;
    std::vector<Series> series;
};

std::string render_svg(const Chart& chart, int width, int height);
std::vector<uint8_t> render_rgb(const Chart& chart, int width, int height);  // rows of RGB pixels
// Panels stacked top to bottom in one picture, each width x panel_height.
std::string render_svg(const std::vector<Chart>& panels, int width, int panel_height);
std::vector<uint8_t> render_rgb(const std::vector<Chart>& panels, int width, int panel_height);

// Reads run_dir/metrics.jsonl and writes run_dir/plots/loss.svg and loss.png (train loss by
// step, and validation loss at each evaluation; the length of an epoch on the step axis, for a
// task that trains by epochs). A run with eval.multiple_choice gets a second panel below:
// acc and acc_norm (mc_accuracy, mc_accuracy_norm) at each of those evaluations. Returns the
// two paths.
std::vector<std::string> write_loss_plots(const std::string& run_dir);

}  // namespace lmforge
