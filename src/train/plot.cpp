#include "train/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "io/png.h"
#include "train/plot_font.h"

namespace lmforge {

namespace {

// Where things go: the data ranges, the plot area in pixels, and the ticks.
struct Frame {
    double x0, x1, y0, y1;
    double left = 80, right = 24, top = 44, bottom = 56;
    int width, height;
    std::vector<double> xticks, yticks;
    double px(double x) const { return left + (x - x0) / (x1 - x0) * (width - left - right); }
    double py(double y) const { return height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom); }
};

// Round tick values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
    const double raw = (hi - lo) / 5;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = mag * (raw / mag < 1.5 ? 1 : raw / mag < 3.5 ? 2 : raw / mag < 7.5 ? 5 : 10);
    std::vector<double> t;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return t;
}

std::string tick_label(double v) {
    if (std::abs(v) >= 1e5 || (v != 0 && std::abs(v) < 1e-3)) return fmt::format("{:.0e}", v);
    return fmt::format("{:g}", v);
}

Frame layout(const Chart& chart, int width, int height) {
    Frame f{};
    f.width = width;
    f.height = height;
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (const Series& s : chart.series) {
        for (const auto& [x, y] : s.points) {
            if (!std::isfinite(y)) continue;
            x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
        }
    }
    if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= y0) y1 = y0 + 1;
    const double pad = 0.05 * (y1 - y0);
    f.x0 = x0, f.x1 = x1, f.y0 = y0 - pad, f.y1 = y1 + pad;
    f.xticks = ticks(f.x0, f.x1);
    f.yticks = ticks(f.y0, f.y1);
    return f;
}

std::string hex(unsigned color) { return fmt::format("#{:06x}", color); }

// A raster canvas with the few drawing operations charts need.
struct Canvas {
    int w, h;
    std::vector<uint8_t> rgb;
    Canvas(int width, int height) : w(width), h(height), rgb(static_cast<size_t>(width) * height * 3, 255) {}
    void dot(int x, int y, unsigned c) {
        if (x < 0 || y < 0 || x >= w || y >= h) return;
        uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
        p[0] = static_cast<uint8_t>(c >> 16), p[1] = static_cast<uint8_t>(c >> 8), p[2] = static_cast<uint8_t>(c);
    }
    void block(double x, double y, int r, unsigned c) {  // a filled square of side 2r centred on (x, y)
        for (int dy = -r; dy < r; dy++)
            for (int dx = -r; dx < r; dx++) dot(static_cast<int>(std::lround(x)) + dx, static_cast<int>(std::lround(y)) + dy, c);
    }
    void line(double x0, double y0, double x1, double y1, int thick, unsigned c) {
        const int n = static_cast<int>(std::ceil(std::max(std::abs(x1 - x0), std::abs(y1 - y0)) * 2)) + 1;
        for (int i = 0; i <= n; i++) {
            const double t = static_cast<double>(i) / n;
            block(x0 + t * (x1 - x0), y0 + t * (y1 - y0), thick, c);
        }
    }
    // Text at (x, y) = its top-left corner; each font pixel is scale x scale.
    void text(double x, double y, const std::string& s, int scale, unsigned c) {
        for (size_t i = 0; i < s.size(); i++) {
            const Glyph* g = find_glyph(s[i]);
            if (g == nullptr) continue;
            for (int row = 0; row < 7; row++)
                for (int col = 0; col < 5; col++)
                    if (g->rows[row][col] == '#')
                        for (int a = 0; a < scale; a++)
                            for (int b = 0; b < scale; b++)
                                dot(static_cast<int>(x) + static_cast<int>(i) * 6 * scale + col * scale + b,
                                    static_cast<int>(y) + row * scale + a, c);
        }
    }
    static double text_width(const std::string& s, int scale) { return static_cast<double>(s.size()) * 6 * scale; }
};

}  // namespace

namespace {

// Text as XML character data: a run named "a&b" or "<x>" must not break the file.
std::string xml_escaped(const std::string& text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string svg_open(int width, int height) {
    return fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        width, height);
}

// The chart's elements in a width x height box at the origin, without the document around them.
std::string svg_chart(const Chart& chart, int width, int height) {
    const Frame f = layout(chart, width, height);
    std::string s;
    for (double x : f.xticks) {
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>\n"
                         "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                         f.px(x), f.top, height - f.bottom, height - f.bottom + 18, tick_label(x));
    }
    for (double y : f.yticks) {
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>\n"
                         "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                         f.left, f.py(y), width - f.right, f.left - 8, f.py(y) + 4, tick_label(y));
    }
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"black\"/>\n",
                     f.left, f.top, width - f.left - f.right, height - f.top - f.bottom);
    s += fmt::format("<text x=\"{:.1f}\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">{}</text>\n", width / 2.0, xml_escaped(chart.title));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (f.left + width - f.right) / 2,
                     height - 14.0, xml_escaped(chart.x_label));
    s += fmt::format("<text x=\"18\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {:.1f})\">{}</text>\n",
                     (f.top + height - f.bottom) / 2, (f.top + height - f.bottom) / 2, xml_escaped(chart.y_label));
    double legend_y = f.top + 18;
    for (const Series& series : chart.series) {
        std::string pts;
        for (const auto& [x, y] : series.points) {
            if (std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(y));
        }
        s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n", hex(series.color), pts);
        if (series.markers) {
            for (const auto& [x, y] : series.points) {
                if (std::isfinite(y)) {
                    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", f.px(x), f.py(y), hex(series.color));
                }
            }
        }
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
                         "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
                         width - f.right - 130, legend_y, width - f.right - 106, hex(series.color), width - f.right - 100,
                         legend_y + 4, xml_escaped(series.name));
        legend_y += 20;
    }
    return s;
}

}  // namespace

std::string render_svg(const Chart& chart, int width, int height) {
    return svg_open(width, height) + svg_chart(chart, width, height) + "</svg>\n";
}

std::string render_svg(const std::vector<Chart>& panels, int width, int panel_height) {
    std::string s = svg_open(width, panel_height * static_cast<int>(panels.size()));
    for (size_t i = 0; i < panels.size(); i++) {
        s += fmt::format("<g transform=\"translate(0,{})\">\n{}</g>\n", static_cast<int>(i) * panel_height,
                         svg_chart(panels[i], width, panel_height));
    }
    return s + "</svg>\n";
}

std::vector<uint8_t> render_rgb(const Chart& chart, int width, int height) {
    const Frame f = layout(chart, width, height);
    Canvas c(width, height);
    for (double x : f.xticks) {
        c.line(f.px(x), f.top, f.px(x), height - f.bottom, 0, 0xe4e4e4);
        const std::string t = tick_label(x);
        c.text(f.px(x) - Canvas::text_width(t, 2) / 2, height - f.bottom + 8, t, 2, 0x000000);
    }
    for (double y : f.yticks) {
        c.line(f.left, f.py(y), width - f.right, f.py(y), 0, 0xe4e4e4);
        const std::string t = tick_label(y);
        c.text(f.left - 8 - Canvas::text_width(t, 2), f.py(y) - 7, t, 2, 0x000000);
    }
    for (const Series& s : chart.series) {
        const std::pair<double, double>* prev = nullptr;
        for (const auto& p : s.points) {
            if (!std::isfinite(p.second)) continue;
            if (prev != nullptr) c.line(f.px(prev->first), f.py(prev->second), f.px(p.first), f.py(p.second), 1, s.color);
            if (s.markers) c.block(f.px(p.first), f.py(p.second), 3, s.color);
            prev = &p;
        }
    }
    const double x0 = f.left, x1 = width - f.right, y0 = f.top, y1 = height - f.bottom;  // the frame
    c.line(x0, y0, x1, y0, 0, 0), c.line(x0, y1, x1, y1, 0, 0), c.line(x0, y0, x0, y1, 0, 0), c.line(x1, y0, x1, y1, 0, 0);
    c.text(width / 2.0 - Canvas::text_width(chart.title, 2) / 2, 12, chart.title, 2, 0);
    c.text((f.left + width - f.right) / 2 - Canvas::text_width(chart.x_label, 2) / 2, height - 22, chart.x_label, 2, 0);
    c.text(6, f.top - 30, chart.y_label, 2, 0);
    double legend_y = f.top + 12;
    for (const Series& s : chart.series) {
        c.line(width - f.right - 150, legend_y, width - f.right - 126, legend_y, 2, s.color);
        c.text(width - f.right - 118, legend_y - 7, s.name, 2, 0);
        legend_y += 22;
    }
    return c.rgb;
}

std::vector<uint8_t> render_rgb(const std::vector<Chart>& panels, int width, int panel_height) {
    std::vector<uint8_t> rgb;
    for (const Chart& chart : panels) {
        const std::vector<uint8_t> panel = render_rgb(chart, width, panel_height);
        rgb.insert(rgb.end(), panel.begin(), panel.end());  // rows below the panel above
    }
    return rgb;
}

std::vector<std::string> write_loss_plots(const std::string& run_dir) {
    const std::string metrics = run_dir + "/metrics.jsonl";
    std::ifstream in(metrics);
    if (!in) throw InputError(fmt::format("{}: cannot read", metrics), "is this a run directory?");
    Series train{"train loss", 0x1f77b4, {}, false}, val{"val loss", 0xff7f0e, {}, true};
    Series choice{"acc", 0x2ca02c, {}, true}, choice_norm{"acc_norm", 0xd62728, {}, true};  // short: the legend fits
    // A value lmforge could not write as a number (a NaN loss is null) is a gap in the line.
    const auto number = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
    std::string line, x_label = "step";
    size_t line_no = 0;
    while (std::getline(in, line)) {
        line_no++;
        if (line.empty()) continue;
        const bool last = in.eof();  // no line break after it: a running trainer's line half-written
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("step") || !j["step"].is_number()) {
            if (last) break;
            throw InputError(fmt::format("{}:{}: not a metrics line", metrics, line_no));
        }
        const double step = j["step"].get<double>();
        if (j.contains("loss")) train.points.emplace_back(step, number(j["loss"]));
        if (j.contains("val_loss")) val.points.emplace_back(step, number(j["val_loss"]));
        if (j.contains("mc_accuracy")) choice.points.emplace_back(step, number(j["mc_accuracy"]));
        if (j.contains("mc_accuracy_norm")) choice_norm.points.emplace_back(step, number(j["mc_accuracy_norm"]));
        // The first epoch's end, of a task that trains by epochs, tells their length.
        if (j.contains("epoch_loss") && j.value("epoch", 0.0) == 1.0) x_label = fmt::format("step (epochs of {:g})", step);
    }
    const std::string name = std::filesystem::path(run_dir).lexically_normal().filename().string();
    Chart chart{name.empty() ? "loss" : name, x_label, "loss", {}};
    if (!train.points.empty()) chart.series.push_back(train);
    if (!val.points.empty()) chart.series.push_back(val);
    std::vector<Chart> panels = {chart};
    if (!choice.points.empty()) {  // eval.multiple_choice: a panel of its own, accuracy's scale is not loss's
        panels.push_back({"multiple choice", x_label, "accuracy", {choice, choice_norm}});
    }
    const std::string dir = run_dir + "/plots";
    std::filesystem::create_directories(dir);
    constexpr int kWidth = 900, kPanelHeight = 520;
    write_text_atomic(dir + "/loss.svg", render_svg(panels, kWidth, kPanelHeight));
    write_png(dir + "/loss.png", kWidth, kPanelHeight * static_cast<int>(panels.size()),
              render_rgb(panels, kWidth, kPanelHeight));
    return {dir + "/loss.svg", dir + "/loss.png"};
}

}  // namespace lmforge
