// train.task = "classify": a GPT-2 body with a sequence-classification head (the last
// non-padding token's state, as transformers' GPT2ForSequenceClassification), or a BERT encoder
// with its pooler and classifier on [CLS] (model.preset bert-*), trained epoch by epoch on
// labelled examples from `lmforge prepare --label-field`, batches padded to their longest
// example. Validation loss, accuracy and macro-F1; best/ by eval.metric; at the end a test
// report (accuracy, per-class precision, recall, F1 and support, macro and weighted averages,
// confusion matrix) of best/'s weights, next to majority-class and bag-of-words baselines,
// printed and saved as test_report.json.
#pragma once

#include <memory>

#include "train/task.h"

namespace lmforge {

std::unique_ptr<Task> make_classify_task(const TrainConfig& cfg);

// The rank_metric of an evaluation by eval.metric: accuracy and macro_f1 negated (higher is
// better), loss as it is.
double classify_rank_metric(const std::string& metric, double loss, double accuracy, double macro_f1);

}  // namespace lmforge
