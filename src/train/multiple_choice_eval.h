// eval.multiple_choice: an lm run's accuracy on multiple-choice items (HellaSwag's format,
// train/multiple_choice.h) while it trains, every eval.multiple_choice_every steps (0: at
// eval.every's cadence) and at the end. The items are read and tokenized once, at the start,
// with the run's tokenizer: a bad line stops the run before it trains, not at its first
// evaluation. The figures are those `lmforge eval --multiple-choice` gives the same weights.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distributed/communicator.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "train/config.h"
#include "train/multiple_choice.h"

namespace lmforge {

class MultipleChoiceEval {
public:
    // InputError naming file:line for a bad item or one whose ending does not fit the model's
    // context; also for a run without a tokenizer. The model is the run's GPT-2.
    MultipleChoiceEval(const TrainConfig& cfg, const Tokenizer* tokenizer, const Model& model);

    int64_t every() const { return every_; }  // 0: only at the end
    bool due_at(int64_t step) const { return every_ > 0 && step % every_ == 0; }
    size_t items() const { return items_.size(); }
    const std::string& path() const { return path_; }

    // Each process scores its share of the items, the counts summed over processes. Only
    // forward passes: the weights, the data's position and every RNG stay as they were.
    ChoiceResult evaluate(Model& model, Communicator& comm) const;

    // As metrics.jsonl names them: the accuracies, then the counts they come from.
    static std::vector<std::pair<std::string, double>> metrics(const ChoiceResult& r);
    // The log line, after "step N: ".
    static std::string describe(const ChoiceResult& r);

private:
    std::string path_;
    int64_t every_ = 0;
    std::vector<ChoiceItem> items_;
};

}  // namespace lmforge
