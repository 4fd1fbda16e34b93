#include "train/multiple_choice.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/file_io.h"
#include "data/jsonl.h"
#include "kernels/crossentropy.h"

namespace lmforge {

std::vector<ChoiceItem> load_multiple_choice(const std::string& path, const Tokenizer& tokenizer) {
    const MappedFile file(path);
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    std::vector<ChoiceItem> items;
    for_each_jsonl(text, path, [&](const nlohmann::json& j, size_t line) {
        const auto fail = [&](const std::string& what) {
            throw InputError(fmt::format("{}:{}: {}", path, line, what),
                             "HellaSwag's format: {\"ctx\": ..., \"endings\": [...], \"label\": N}");
        };
        // The tokenizer's own error (a character outside a char tokenizer's alphabet), placed.
        const auto encode = [&](const std::string& text) {
            try {
                return tokenizer.encode_ordinary(text);
            } catch (const InputError& e) {
                throw InputError(fmt::format("{}:{}: {}", path, line, e.what()), e.hint());
            }
        };
        ChoiceItem item;
        item.line = line;
        item.context = encode(jsonl_string(j, "ctx", path, line));
        // An ending's first token is scored from the context's last: an empty context starts
        // from <|endoftext|>, as a new document does, so that every ending token is scored.
        if (item.context.empty()) {
            if (!tokenizer.eot_id()) fail("an empty \"ctx\" needs a tokenizer with <|endoftext|> to start from");
            item.context = {*tokenizer.eot_id()};
        }
        if (!j.contains("endings") || !j["endings"].is_array() || j["endings"].size() < 2) {
            fail("needs \"endings\": a list of at least two strings");
        }
        for (const auto& e : j["endings"]) {
            if (!e.is_string() || e.get<std::string>().empty()) fail("every ending must be a non-empty string");
            std::string ending = " ";  // (appended, not " " + e: GCC 12 warns falsely on that)
            ending += e.get<std::string>();
            item.endings.push_back(encode(ending));
        }
        if (!j.contains("label") || !j["label"].is_number_integer()) fail("needs an integer \"label\"");
        // Compared as parsed (a negative label is no unsigned number): 2^32 + 1 must not read as 1.
        const nlohmann::json& label = j["label"];
        if (!label.is_number_unsigned() || label.get<uint64_t>() >= item.endings.size()) {
            fail(fmt::format("label {} is not the index of one of its {} endings", label.dump(), item.endings.size()));
        }
        item.label = static_cast<int32_t>(label.get<uint64_t>());
        items.push_back(std::move(item));
    });
    if (items.empty()) throw InputError(fmt::format("{}: no items", path));
    return items;
}

void check_items_fit(const std::vector<ChoiceItem>& items, int64_t block_size, const std::string& path) {
    for (const ChoiceItem& item : items) {
        for (const auto& e : item.endings) {
            if (static_cast<int64_t>(e.size()) + 1 <= block_size) continue;
            throw InputError(fmt::format("{}:{}: an ending of {} tokens leaves no room for context in the model's {} "
                                         "positions",
                                         path, item.line, e.size(), block_size),
                             "shorten the ending, or raise model.block_size");
        }
    }
}

std::vector<double> ending_log_likelihoods(CausalLm& model, const ChoiceItem& item) {
    const auto B = static_cast<int64_t>(item.endings.size());
    size_t longest = 0;
    for (const auto& e : item.endings) longest = std::max(longest, e.size());
    const auto block = static_cast<size_t>(model.context_length());
    if (longest + 1 > block) {
        throw InputError(fmt::format("an ending of {} tokens leaves no room for context in {} positions", longest, block));
    }
    // The context's last tokens that fit beside the longest ending.
    const size_t keep = std::min(item.context.size(), block - longest);
    const std::vector<int32_t> context(item.context.end() - static_cast<int64_t>(keep), item.context.end());
    const auto T = static_cast<int64_t>(context.size() + longest);
    // Row b: context + ending b, padded; position t predicts token t + 1, counted on the ending.
    Batch batch;
    batch.resize_for_tokens(B, T);
    std::fill(batch.inputs.begin(), batch.inputs.end(), 0);
    std::fill(batch.targets.begin(), batch.targets.end(), kernels::kIgnoreIndex);
    for (int64_t b = 0; b < B; b++) {
        std::vector<int32_t> row = context;
        row.insert(row.end(), item.endings[b].begin(), item.endings[b].end());
        std::copy(row.begin(), row.end(), batch.inputs.begin() + b * T);
        for (size_t t = context.empty() ? 0 : context.size() - 1; t + 1 < row.size(); t++) {
            batch.targets[b * T + static_cast<int64_t>(t)] = row[t + 1];
        }
    }
    model.forward(batch);
    std::vector<double> ll(B, 0.0);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < T; t++) ll[b] -= model.token_losses()[b * T + t];  // 0 where not counted
    }
    return ll;
}

ChoiceResult evaluate_multiple_choice(CausalLm& model, const std::vector<ChoiceItem>& items, Communicator& comm) {
    ChoiceResult r;
    for (size_t i = static_cast<size_t>(comm.rank()); i < items.size(); i += static_cast<size_t>(comm.size())) {
        const ChoiceItem& item = items[i];
        const std::vector<double> ll = ending_log_likelihoods(model, item);
        std::vector<double> mean(ll.size());
        for (size_t e = 0; e < ll.size(); e++) mean[e] = ll[e] / static_cast<double>(item.endings[e].size());
        r.items++;
        r.correct += std::max_element(ll.begin(), ll.end()) - ll.begin() == item.label;
        r.correct_norm += std::max_element(mean.begin(), mean.end()) - mean.begin() == item.label;
    }
    r.items = static_cast<int64_t>(comm.allreduce_sum(static_cast<double>(r.items)));
    r.correct = static_cast<int64_t>(comm.allreduce_sum(static_cast<double>(r.correct)));
    r.correct_norm = static_cast<int64_t>(comm.allreduce_sum(static_cast<double>(r.correct_norm)));
    return r;
}

}  // namespace lmforge
