#include "train/classification_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace lmforge {

namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

int64_t ConfusionMatrix::total() const { return std::accumulate(counts_.begin(), counts_.end(), int64_t{0}); }

ClassificationReport classification_report(const ConfusionMatrix& m) {
    const int64_t L = m.classes();
    ClassificationReport r;
    r.total = m.total();
    int64_t correct = 0, present = 0;  // present: classes that are true or predicted somewhere
    std::vector<bool> is_present;
    for (int64_t c = 0; c < L; c++) {
        int64_t predicted = 0, actual = 0;
        for (int64_t o = 0; o < L; o++) {
            predicted += m.at(o, c);
            actual += m.at(c, o);
        }
        const double tp = static_cast<double>(m.at(c, c));
        correct += m.at(c, c);
        ClassScores s;
        s.precision = ratio(tp, static_cast<double>(predicted));
        s.recall = ratio(tp, static_cast<double>(actual));
        s.f1 = ratio(2 * s.precision * s.recall, s.precision + s.recall);
        s.support = actual;
        r.per_class.push_back(s);
        is_present.push_back(actual + predicted > 0);
        present += actual + predicted > 0;
    }
    r.accuracy = ratio(static_cast<double>(correct), static_cast<double>(r.total));
    for (int64_t c = 0; c < L; c++) {
        const ClassScores& s = r.per_class[c];
        const double w = ratio(static_cast<double>(s.support), static_cast<double>(r.total));
        const double m_w = is_present[c] ? 1.0 / static_cast<double>(present) : 0.0;
        r.macro.precision += m_w * s.precision;
        r.macro.recall += m_w * s.recall;
        r.macro.f1 += m_w * s.f1;
        r.weighted.precision += w * s.precision;
        r.weighted.recall += w * s.recall;
        r.weighted.f1 += w * s.f1;
    }
    r.macro.support = r.weighted.support = r.total;
    return r;
}

std::string format_report(const ClassificationReport& r, const ConfusionMatrix& m,
                          const std::vector<std::string>& names) {
    size_t width = 12;
    for (const std::string& n : names) width = std::max(width, n.size());
    std::string out = fmt::format("{:>{}} {:>9} {:>9} {:>9} {:>9}\n", "", width, "precision", "recall", "f1-score",
                                  "support");
    for (size_t c = 0; c < r.per_class.size(); c++) {
        const ClassScores& s = r.per_class[c];
        out += fmt::format("{:>{}} {:>9.4f} {:>9.4f} {:>9.4f} {:>9}\n", names[c], width, s.precision, s.recall, s.f1,
                           s.support);
    }
    out += fmt::format("\n{:>{}} {:>9} {:>9} {:>9.4f} {:>9}\n", "accuracy", width, "", "", r.accuracy, r.total);
    for (const auto& [name, s] : {std::pair{"macro avg", r.macro}, std::pair{"weighted avg", r.weighted}}) {
        out += fmt::format("{:>{}} {:>9.4f} {:>9.4f} {:>9.4f} {:>9}\n", name, width, s.precision, s.recall, s.f1,
                           s.support);
    }
    out += fmt::format("\nconfusion matrix (rows: true class, columns: predicted)\n{:>{}}", "", width);
    for (const std::string& n : names) out += fmt::format(" {:>9}", n.substr(0, 9));
    out += "\n";
    for (int64_t t = 0; t < m.classes(); t++) {
        out += fmt::format("{:>{}}", names[t], width);
        for (int64_t p = 0; p < m.classes(); p++) out += fmt::format(" {:>9}", m.at(t, p));
        out += "\n";
    }
    return out;
}

nlohmann::ordered_json report_json(const ClassificationReport& r, const ConfusionMatrix& m,
                                   const std::vector<std::string>& names) {
    const auto scores = [](const ClassScores& s) {
        return nlohmann::ordered_json{
            {"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}, {"support", s.support}};
    };
    nlohmann::ordered_json j;
    j["accuracy"] = r.accuracy;
    j["total"] = r.total;
    j["classes"] = nlohmann::ordered_json::object();
    for (size_t c = 0; c < r.per_class.size(); c++) j["classes"][names[c]] = scores(r.per_class[c]);
    j["macro_avg"] = scores(r.macro);
    j["weighted_avg"] = scores(r.weighted);
    j["labels"] = names;
    auto rows = nlohmann::ordered_json::array();
    for (int64_t t = 0; t < m.classes(); t++) {
        auto row = nlohmann::ordered_json::array();
        for (int64_t p = 0; p < m.classes(); p++) row.push_back(m.at(t, p));
        rows.push_back(row);
    }
    j["confusion_matrix"] = rows;
    return j;
}

}  // namespace lmforge
