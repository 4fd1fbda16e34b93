#include "train/baselines.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lmforge {

ConfusionMatrix majority_baseline(const LabelledSplit& train, const LabelledSplit& test, int64_t classes) {
    std::vector<int64_t> count(classes, 0);
    for (int32_t label : train.labels) count[label]++;
    const auto majority = static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin());
    ConfusionMatrix m(classes);
    for (int32_t label : test.labels) m.add(label, majority);
    return m;
}

ConfusionMatrix bag_of_words_baseline(const LabelledSplit& train, const LabelledSplit& test, int64_t classes,
                                      int64_t vocab_size) {
    // log P(class) + Σ over the text's tokens of log P(token | class), counts smoothed by one.
    std::vector<double> counts(classes * vocab_size, 1.0), totals(classes, static_cast<double>(vocab_size)),
        prior(classes, 0.0);
    for (int64_t i = 0; i < train.size(); i++) {
        const int32_t c = train.labels[i];
        prior[c] += 1.0;
        for (int64_t t = 0; t < train.lengths[i]; t++) {
            counts[c * vocab_size + train.tokens[i * train.max_len + t]] += 1.0;
            totals[c] += 1.0;
        }
    }
    for (double& v : counts) v = std::log(v);
    for (int64_t c = 0; c < classes; c++) {
        prior[c] = std::log(prior[c] / static_cast<double>(train.size()));
        for (int64_t v = 0; v < vocab_size; v++) counts[c * vocab_size + v] -= std::log(totals[c]);
    }
    ConfusionMatrix m(classes);
    std::vector<double> score(classes);
    for (int64_t i = 0; i < test.size(); i++) {
        for (int64_t c = 0; c < classes; c++) {
            double s = prior[c];
            for (int64_t t = 0; t < test.lengths[i]; t++) s += counts[c * vocab_size + test.tokens[i * test.max_len + t]];
            score[c] = s;
        }
        m.add(test.labels[i], static_cast<int32_t>(std::max_element(score.begin(), score.end()) - score.begin()));
    }
    return m;
}

}  // namespace lmforge
