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
#include "model/gpt2.h"
#include "tokenizer/tokenizer.h"

namespace lmforge {

struct ChoiceItem {
    std::vector<int32_t> context;
    std::vector<std::vector<int32_t>> endings;
    int32_t label = 0;
};

// InputError naming file:line for a line without ctx, endings (at least two strings) or a
// label in range, or an empty ending.
std::vector<ChoiceItem> load_multiple_choice(const std::string& path, const Tokenizer& tokenizer);

// Log-likelihood of each ending of `item` under the model (all endings in one batch; the
// context is cut from the left to fit block_size).
std::vector<double> ending_log_likelihoods(Gpt2& model, const ChoiceItem& item);

struct ChoiceResult {
    int64_t items = 0, correct = 0, correct_norm = 0;
    double accuracy() const { return items > 0 ? static_cast<double>(correct) / static_cast<double>(items) : 0; }
    double accuracy_norm() const {
        return items > 0 ? static_cast<double>(correct_norm) / static_cast<double>(items) : 0;
    }
};

// Every rank scores its share; the counts are summed over ranks.
ChoiceResult evaluate_multiple_choice(Gpt2& model, const std::vector<ChoiceItem>& items, Communicator& comm);

}  // namespace lmforge
