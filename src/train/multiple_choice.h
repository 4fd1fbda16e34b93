// Multiple-choice evaluation in HellaSwag's JSONL format — {"ctx": ..., "endings": [...],
// "label": index of the right ending} a line — by language-model likelihood: each ending is
// scored by the log-probability of its tokens after the context (the ending encoded with a
// leading space, as llm.c and the HellaSwag paper's GPT baselines do). Accuracy picks the
// highest total; length-normalised accuracy the highest mean per ending token (which does not
// favour short endings). Items are sharded over ranks (item i to rank i mod world).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "model/causal_lm.h"
#include "tokenizer/tokenizer.h"

namespace lmforge {

struct ChoiceItem {
    std::vector<int32_t> context;
    std::vector<std::vector<int32_t>> endings;
    int32_t label = 0;
    size_t line = 0;  // of its file, for messages
};

// InputError naming file:line for a line without ctx, endings (at least two strings) or a
// label in range, an empty ending, or text the tokenizer cannot encode.
std::vector<ChoiceItem> load_multiple_choice(const std::string& path, const Tokenizer& tokenizer);

// InputError naming path:line for the first item with an ending too long to follow even one
// context token in block_size positions (ending_log_likelihoods would refuse it): a training
// run checks its items at the start, not at its first evaluation.
void check_items_fit(const std::vector<ChoiceItem>& items, int64_t block_size, const std::string& path);

// Log-likelihood of each ending of `item` under the model (all endings in one batch; the
// context is cut from the left to fit block_size).
std::vector<double> ending_log_likelihoods(CausalLm& model, const ChoiceItem& item);

struct ChoiceResult {
    int64_t items = 0, correct = 0, correct_norm = 0;
    double accuracy() const { return items > 0 ? static_cast<double>(correct) / static_cast<double>(items) : 0; }
    double accuracy_norm() const {
        return items > 0 ? static_cast<double>(correct_norm) / static_cast<double>(items) : 0;
    }
};

// Every rank scores its share; the counts are summed over ranks.
ChoiceResult evaluate_multiple_choice(CausalLm& model, const std::vector<ChoiceItem>& items, Communicator& comm);

}  // namespace lmforge
