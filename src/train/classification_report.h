// What a classifier got right and wrong: a confusion matrix, and from it accuracy, each
// class's precision, recall, F1 and support, and their macro (unweighted) and weighted (by
// support) averages — the definitions of scikit-learn's classification_report, with 0 where a
// ratio has nothing to divide by (a class never predicted has precision 0). As there, the
// macro average is over the classes that occur as truth or prediction: a class absent from
// the split and never predicted is left out, not counted as 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmforge {

class ConfusionMatrix {
public:
    explicit ConfusionMatrix(int64_t classes) : classes_(classes), counts_(classes * classes, 0) {}
    void add(int32_t truth, int32_t predicted) { counts_[truth * classes_ + predicted]++; }
    int64_t at(int64_t truth, int64_t predicted) const { return counts_[truth * classes_ + predicted]; }
    int64_t classes() const { return classes_; }
    int64_t total() const;
    // The counts as one flat array (truth-major), e.g. to sum them over processes.
    std::vector<int64_t>& counts() { return counts_; }

private:
    int64_t classes_;
    std::vector<int64_t> counts_;
};

struct ClassScores {
    double precision = 0, recall = 0, f1 = 0;
    int64_t support = 0;  // examples whose true class this is
};

struct ClassificationReport {
    double accuracy = 0;
    std::vector<ClassScores> per_class;
    ClassScores macro, weighted;  // support: the total
    int64_t total = 0;
};

ClassificationReport classification_report(const ConfusionMatrix& m);

// A table as scikit-learn prints it, then the confusion matrix (rows: true class).
std::string format_report(const ClassificationReport& r, const ConfusionMatrix& m,
                          const std::vector<std::string>& names);
nlohmann::ordered_json report_json(const ClassificationReport& r, const ConfusionMatrix& m,
                                   const std::vector<std::string>& names);

}  // namespace lmforge
