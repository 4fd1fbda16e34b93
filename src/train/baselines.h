// What a classifier must beat, computed on the same splits: the majority class (the training
// split's most frequent label, always), and a bag of words (multinomial naive Bayes on the
// training split's token counts, add-one smoothing): the two numbers that say whether a
// model learned more than class frequencies and word lists.
#pragma once

#include <cstdint>

#include "data/labelled.h"
#include "train/classification_report.h"

namespace lmforge {

ConfusionMatrix majority_baseline(const LabelledSplit& train, const LabelledSplit& test, int64_t classes);
ConfusionMatrix bag_of_words_baseline(const LabelledSplit& train, const LabelledSplit& test, int64_t classes,
                                      int64_t vocab_size);

}  // namespace lmforge
