// `lmforge train` with train.task = "classify": a GPT-2 body with a sequence-classification
// head (the last non-padding token's state, as transformers' GPT2ForSequenceClassification),
// or a BERT encoder with its pooler and classifier on [CLS] (model.preset bert-*), trained on
// labelled examples from `lmforge prepare --label-field`, epoch by epoch: train and
// validation loss and accuracy each epoch, the best checkpoint by eval.metric, and at the end a
// test report (accuracy, per-class precision, recall, F1 and support, macro and weighted
// averages, confusion matrix) next to majority-class and bag-of-words baselines, printed and
// saved as JSON. Under mpirun each rank takes its part of every batch and of every split;
// the metrics are summed over ranks.
#pragma once

#include <string>

#include "train/classification_report.h"
#include "train/trainer.h"

namespace lmforge {

struct ClassifySummary {
    std::string run_dir;
    int64_t epochs = 0, best_epoch = 0, steps = 0;
    std::string metric;
    double best_value = 0;
    std::string report_text;  // the test report and the baselines, as printed
    std::string report_path;  // test_report.json
    double test_accuracy = 0, test_macro_f1 = 0;
    double seconds = 0;
    int rank = 0;
};

ClassifySummary train_classifier(const TrainOptions& opts);

// Whether an epoch scoring `value` on eval.metric `metric` (accuracy, macro_f1: higher is
// better; loss: lower), with validation loss `loss`, beats the best so far; a tie on accuracy
// or F1 (frequent on a small split) goes to the lower loss.
bool better_epoch(const std::string& metric, double value, double loss, double best, double best_loss);

}  // namespace lmforge
