#include "data/prepare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/documents.h"
#include "data/instructions.h"
#include "data/labelled.h"
#include "data/shard.h"
#include "tokenizer/batch_encode.h"
#include "tokenizer/char_tokenizer.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

void check_options(const PrepareOptions& o) {
    if (o.inputs.empty()) throw InputError("no inputs", "pass --input PATH");
    if (!(o.val_fraction >= 0 && o.val_fraction < 1)) {
        throw InputError(fmt::format("--val-fraction {} must lie in [0, 1)", o.val_fraction));
    }
    // A shard's header counts its tokens in 32 bits.
    if (o.shard_tokens <= 0 || o.shard_tokens > INT32_MAX) {
        throw InputError(fmt::format("--shard-tokens {} must lie in 1..{}", o.shard_tokens, INT32_MAX));
    }
    // An output inside an input directory is refused there: its shards would be read as text
    // the next time.
    check_output("--output", o.output, o.inputs, o.overwrite);
}

// Writes tokens as shards <split>_000000.bin, ... into dir; returns their names.
std::vector<std::string> write_shards(const fs::path& dir, const std::string& split,
                                      const std::vector<TokenId>& tokens, int64_t shard_tokens) {
    std::vector<std::string> names;
    std::vector<uint16_t> buf;
    for (size_t at = 0, n = 0; at < tokens.size(); at += static_cast<size_t>(shard_tokens), n++) {
        const size_t end = std::min(tokens.size(), at + static_cast<size_t>(shard_tokens));
        buf.assign(tokens.begin() + static_cast<ptrdiff_t>(at), tokens.begin() + static_cast<ptrdiff_t>(end));
        names.push_back(fmt::format("{}_{:06d}.bin", split, n));
        write_shard((dir / names.back()).string(), buf);
    }
    return names;
}

void write_record(const fs::path& dir, const nlohmann::json& record) {
    const std::string text = record.dump(2) + "\n";
    write_text_atomic((dir / "prepare.json").string(), text);
}

std::unique_ptr<Tokenizer> make_tokenizer(const PrepareOptions& opts, const std::vector<std::string_view>& texts) {
    auto tokenizer = opts.tokenizer == "char" ? std::make_unique<CharTokenizer>(CharTokenizer::from_texts(texts))
                                              : open_tokenizer(opts.tokenizer, opts.data_home);
    if (tokenizer->vocab_size() > kMaxShardVocab) {
        throw InputError(fmt::format("the tokenizer has {} tokens; shards hold uint16 ids (at most {})",
                                     tokenizer->vocab_size(), kMaxShardVocab),
                         fmt::format("use a vocabulary of at most {} tokens", kMaxShardVocab));
    }
    return tokenizer;
}

// Every string value of every line of a JSONL file, one after another: the text the char
// tokenizer's alphabet must cover (the loaders report lines that do not parse).
std::string jsonl_strings(std::string_view raw) {
    std::string out;
    const std::function<void(const nlohmann::json&)> collect = [&](const nlohmann::json& j) {
        if (j.is_string()) {
            out += j.get_ref<const std::string&>();
        } else if (j.is_structured()) {
            for (const auto& v : j) collect(v);
        }
    };
    size_t at = 0;
    while (at < raw.size()) {
        const size_t end = std::min(raw.find('\n', at), raw.size());
        const nlohmann::json j = nlohmann::json::parse(raw.substr(at, end - at), nullptr, false);
        if (!j.is_discarded()) collect(j);
        at = end + 1;
    }
    return out;
}

// The tokenizer of labelled or instruction examples. The char tokenizer's alphabet comes from
// the texts, read once more by the loader (and from the prompt template, whose words the texts
// may lack).
std::unique_ptr<Tokenizer> example_tokenizer(const PrepareOptions& opts) {
    if (opts.tokenizer != "char") return make_tokenizer(opts, {});
    const MappedFile file(opts.inputs[0]);
    const std::string tmpl = opts.instructions ? alpaca_prompt("", "-") : "";
    const std::string_view raw(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    // JSON escapes ("caf\u00e9") stand for characters the raw bytes do not show.
    const std::string texts = opts.inputs[0].ends_with(".jsonl") ? jsonl_strings(raw) : std::string(raw);
    return make_tokenizer(opts, {texts, tmpl});
}

// prepare.json of prepared examples.
nlohmann::json examples_record(const PrepareOptions& opts, const PrepareReport& r) {
    nlohmann::json record = {{"task", opts.instructions ? "sft" : "classify"}, {"inputs", opts.inputs},
                             {"tokenizer", opts.tokenizer}, {"tokenizer_kind", r.tokenizer_kind},
                             {"vocab_size", r.vocab_size}, {"max_len", opts.max_len}, {"seed", opts.seed},
                             {"examples", {{"train", r.train_documents}, {"val", r.val_documents},
                                           {"test", r.test_documents}}},
                             {"truncated", r.truncated}};
    if (opts.instructions) {
        record["format"] = r.format;
    } else {
        record["labels"] = r.labels;
    }
    return record;
}

// Labelled examples (classification) or instruction examples (generative fine-tuning): one
// file, split into train/validation/test.
PrepareReport prepare_examples(const PrepareOptions& opts) {
    const char* what = opts.instructions ? "instruction data" : "labelled data";
    if (opts.inputs.size() != 1) {
        throw InputError(fmt::format("{} comes from one {} file, not {}", what,
                                     opts.instructions ? ".jsonl" : ".jsonl or .csv", opts.inputs.size()));
    }
    Timer total;
    PrepareReport r;
    const std::unique_ptr<Tokenizer> tokenizer = example_tokenizer(opts);
    Timer encode;
    std::function<void(const std::string&)> save;
    const auto count = [&](int64_t train, int64_t val, int64_t test, int64_t truncated) {
        r.train_documents = static_cast<size_t>(train);
        r.val_documents = static_cast<size_t>(val);
        r.test_documents = static_cast<size_t>(test);
        r.truncated = truncated;
    };
    if (opts.instructions) {
        auto data = std::make_shared<InstructionData>(load_instructions(
            {opts.inputs[0], opts.max_len, opts.val_fraction, opts.test_fraction, opts.seed}, *tokenizer));
        count(data->train.size(), data->val.size(), data->test.size(), data->truncated);
        r.format = data->format;
        save = [data](const std::string& dir) { save_instructions(*data, dir); };
    } else {
        auto data = std::make_shared<LabelledData>(load_labelled({opts.inputs[0], opts.jsonl_field, opts.label_field,
                                                                  opts.max_len, opts.val_fraction, opts.test_fraction,
                                                                  opts.seed},
                                                                 *tokenizer));
        count(data->train.size(), data->val.size(), data->test.size(), data->truncated);
        r.labels = data->label_names;
        save = [data](const std::string& dir) { save_labelled(*data, dir); };
    }
    r.encode_seconds = encode.seconds();
    r.documents = r.train_documents + r.val_documents + r.test_documents;
    r.files = 1;
    r.bytes = fs::file_size(opts.inputs[0]);
    r.vocab_size = tokenizer->vocab_size();
    r.tokenizer_kind = tokenizer->kind();
    r.split = "examples";
    publish_directory(opts.output, [&](const std::string& tmp) {
        save(tmp);
        tokenizer->save(tmp);
        write_record(tmp, examples_record(opts, r));
    });
    r.seconds = total.seconds();
    return r;
}

// Every document's token ids, with a progress bar over its bytes where asked.
std::vector<std::vector<TokenId>> encode_documents(const Tokenizer& tokenizer,
                                                   const std::vector<std::string_view>& docs, size_t bytes,
                                                   bool progress) {
    std::unique_ptr<Progress> bar;
    if (progress) bar = std::make_unique<Progress>("tokenizing", static_cast<double>(bytes), "MB", 1e6);
    auto ids = encode_batch(tokenizer, docs, [&](size_t n) {
        if (bar) bar->advance(static_cast<double>(n));
    });
    if (bar) bar->finish();
    return ids;
}

struct TokenSplit {
    std::vector<TokenId> train, val;
};

// The train and validation token streams of the documents' ids, each document after the
// end-of-text token where there is one; the split's kind and documents counted into r.
TokenSplit split_tokens(const std::vector<std::vector<TokenId>>& ids, std::optional<TokenId> eot,
                        const PrepareOptions& opts, PrepareReport& r) {
    // Validation documents: a seeded choice of round(n·f) of them (at most n - 1), so that no
    // document lies in both splits. Where that rounds to none (a novel; a book and its notes),
    // the last fraction of the tokens instead: one document then straddles both splits, where
    // whole documents would give val a random 25-50% of the data, or the book itself.
    const size_t n = ids.size();
    size_t k = static_cast<size_t>(std::llround(static_cast<double>(n) * opts.val_fraction));
    if (n >= 1) k = std::min(k, n - 1);
    std::vector<bool> is_val(n, false);
    const bool by_documents = opts.val_fraction == 0 || k >= 1;
    r.split = by_documents ? "documents" : "tokens";
    if (by_documents && k > 0) {
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        Rng rng(opts.seed);
        for (size_t i = n - 1; i > 0; i--) std::swap(order[i], order[rng.below(i + 1)]);
        for (size_t i = 0; i < k; i++) is_val[order[i]] = true;
    }
    TokenSplit split;
    std::vector<TokenId>& train = split.train;
    std::vector<TokenId>& val = split.val;
    for (size_t d = 0; d < n; d++) {
        std::vector<TokenId>& out = is_val[d] ? val : train;
        if (eot) out.push_back(*eot);
        out.insert(out.end(), ids[d].begin(), ids[d].end());
        (is_val[d] ? r.val_documents : r.train_documents)++;
    }
    if (!by_documents) {
        const auto tail = static_cast<size_t>(std::ceil(opts.val_fraction * static_cast<double>(train.size())));
        const size_t cut = train.size() - tail;
        val.assign(train.begin() + static_cast<ptrdiff_t>(cut), train.end());
        train.resize(cut);
    }
    return split;
}

}  // namespace

PrepareReport prepare(const PrepareOptions& opts) {
    check_options(opts);
    if (!opts.label_field.empty() && opts.instructions) {
        throw InputError("--label-field and --instructions prepare different data", "choose one");
    }
    if (!opts.label_field.empty() || opts.instructions) return prepare_examples(opts);
    Timer total;
    PrepareReport r;
    const DocumentSet set = read_documents(opts.inputs, opts.jsonl_field);
    r.documents = set.docs.size();
    r.files = set.files;
    r.bytes = set.bytes;

    const std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(opts, set.docs);
    r.vocab_size = tokenizer->vocab_size();
    r.tokenizer_kind = tokenizer->kind();
    const std::optional<TokenId> eot = tokenizer->eot_id();
    if (!eot) log::warn("prepare: the tokenizer has no <|endoftext|>: documents are joined without a separator");

    Timer encode_timer;
    const std::vector<std::vector<TokenId>> ids = encode_documents(*tokenizer, set.docs, r.bytes, opts.progress);
    r.encode_seconds = encode_timer.seconds();

    const TokenSplit split = split_tokens(ids, eot, opts, r);
    const std::vector<TokenId>& train = split.train;
    const std::vector<TokenId>& val = split.val;
    r.train_tokens = static_cast<int64_t>(train.size());
    r.val_tokens = static_cast<int64_t>(val.size());

    publish_directory(opts.output, [&](const std::string& tmp) {
        for (const auto& s : write_shards(tmp, "train", train, opts.shard_tokens)) r.shards.push_back(s);
        for (const auto& s : write_shards(tmp, "val", val, opts.shard_tokens)) r.shards.push_back(s);
        tokenizer->save(tmp);
        write_record(tmp, {{"task", "lm"}, {"inputs", opts.inputs}, {"tokenizer", opts.tokenizer},
                           {"tokenizer_kind", r.tokenizer_kind}, {"vocab_size", r.vocab_size},
                           {"eot_id", eot ? nlohmann::json(*eot) : nlohmann::json(nullptr)},
                           {"val_fraction", opts.val_fraction}, {"split", r.split}, {"seed", opts.seed},
                           {"documents", {{"train", r.train_documents}, {"val", r.val_documents}}},
                           {"tokens", {{"train", r.train_tokens}, {"val", r.val_tokens}}},
                           {"shards", r.shards}, {"bytes", r.bytes}});
    });
    r.seconds = total.seconds();
    return r;
}

}  // namespace lmforge
