#include "data/instructions.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "data/jsonl.h"
#include "data/splits.h"
#include "io/json_fields.h"
#include "io/safetensors.h"
#include "tokenizer/batch_encode.h"

namespace lmforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Example {
    std::string prompt, response;
    size_t line;
};

std::vector<Example> read_examples(const std::string& path, std::string& format) {
    const MappedFile file(path);
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    std::vector<Example> out;
    for_each_jsonl(text, path, [&](const json& j, size_t line) {
        Example e{"", "", line};
        std::string f;
        if (j.contains("instruction") && j.contains("output")) {
            f = "alpaca";
            const std::string input = j.contains("input") ? jsonl_string(j, "input", path, line) : "";
            e.prompt = alpaca_prompt(jsonl_string(j, "instruction", path, line), input);
            e.response = jsonl_string(j, "output", path, line);
        } else if (j.contains("prompt") && j.contains("response")) {
            f = "prompt_response";
            e.prompt = jsonl_string(j, "prompt", path, line);
            e.response = jsonl_string(j, "response", path, line);
        } else {
            throw InputError(fmt::format("{}:{}: needs \"instruction\" and \"output\" (Alpaca) or \"prompt\" and "
                                         "\"response\"",
                                         path, line));
        }
        if (!format.empty() && f != format) {
            throw InputError(fmt::format("{}:{}: {} fields in a file of {} lines", path, line, f, format),
                             "keep one format per file");
        }
        format = f;
        if (e.response.empty()) throw InputError(fmt::format("{}:{}: empty response", path, line), "remove the example");
        out.push_back(std::move(e));
    });
    if (out.empty()) throw InputError(fmt::format("{}: no examples", path));
    return out;
}

void write_split(const InstructionSplit& s, const std::string& path) {
    SafetensorsWriter w;
    w.add("tokens", Dtype::I32, {s.size(), s.max_len}, s.tokens.data());
    w.add("lengths", Dtype::I32, {s.size()}, s.lengths.data());
    w.add("prompt_lengths", Dtype::I32, {s.size()}, s.prompt_lengths.data());
    w.add("source", Dtype::I64, {s.size()}, s.source.data());
    w.write(path);
}

InstructionSplit read_split(const std::string& path) {
    const SafetensorsReader r(path);
    InstructionSplit s;
    const TensorInfo& t = r.info("tokens");
    if (t.shape.size() != 2) throw InputError(fmt::format("{}: tokens is not two-dimensional", path));
    s.max_len = t.shape[1];
    s.tokens = r.read_i32("tokens");
    s.lengths = r.read_i32("lengths");
    s.prompt_lengths = r.read_i32("prompt_lengths");
    s.source = r.read_i64("source");
    return s;
}

}  // namespace

std::string alpaca_prompt(const std::string& instruction, const std::string& input) {
    if (input.empty()) {
        return "Below is an instruction that describes a task. Write a response that appropriately completes the "
               "request.\n\n### Instruction:\n" +
               instruction + "\n\n### Response:\n";
    }
    return "Below is an instruction that describes a task, paired with an input that provides further context. "
           "Write a response that appropriately completes the request.\n\n### Instruction:\n" +
           instruction + "\n\n### Input:\n" + input + "\n\n### Response:\n";
}

InstructionData load_instructions(const InstructionOptions& o, const Tokenizer& tokenizer) {
    if (o.max_len < 2) throw InputError(fmt::format("--max-len {} leaves no room for a prompt and a response", o.max_len));
    const std::optional<TokenId> eot = tokenizer.eot_id();
    if (!eot) throw InputError("instruction data needs a tokenizer with <|endoftext|> to end each response");
    InstructionData d;
    const std::vector<Example> examples = read_examples(o.path, d.format);
    const auto splits = assign_splits(examples.size(), o.val_fraction, o.test_fraction, o.seed);
    d.pad_id = *eot;
    std::vector<std::string_view> texts;
    for (const Example& e : examples) {
        texts.emplace_back(e.prompt);
        texts.emplace_back(e.response);
    }
    const std::vector<std::vector<TokenId>> ids = encode_batch(tokenizer, texts);
    for (InstructionSplit* s : {&d.train, &d.val, &d.test}) s->max_len = o.max_len;
    for (const auto [i, split] : splits) {
        InstructionSplit& s = split == Split::Test ? d.test : split == Split::Val ? d.val : d.train;
        const std::vector<TokenId>& prompt = ids[2 * i];
        std::vector<TokenId> response = ids[2 * i + 1];
        response.push_back(*eot);  // the model learns to stop
        const auto p = static_cast<int64_t>(prompt.size());
        if (p == 0) {  // the first response token needs a position to be predicted from
            throw InputError(fmt::format("{}:{}: empty prompt", o.path, examples[i].line),
                             "give every example a prompt");
        }
        if (p + 1 > o.max_len) {
            throw InputError(fmt::format("{}:{}: the prompt's {} tokens leave no room for a response in --max-len {}",
                                         o.path, examples[i].line, p, o.max_len),
                             "raise --max-len or shorten the prompt");
        }
        const int64_t r = std::min<int64_t>(static_cast<int64_t>(response.size()), o.max_len - p);
        d.truncated += r < static_cast<int64_t>(response.size());
        s.tokens.insert(s.tokens.end(), prompt.begin(), prompt.end());
        s.tokens.insert(s.tokens.end(), response.begin(), response.begin() + r);
        s.tokens.insert(s.tokens.end(), static_cast<size_t>(o.max_len - p - r), d.pad_id);
        s.lengths.push_back(static_cast<int32_t>(p + r));
        s.prompt_lengths.push_back(static_cast<int32_t>(p));
        s.source.push_back(static_cast<int64_t>(i));
    }
    return d;
}

void save_instructions(const InstructionData& d, const std::string& dir) {
    fs::create_directories(dir);
    write_split(d.train, dir + "/train.safetensors");
    write_split(d.val, dir + "/val.safetensors");
    write_split(d.test, dir + "/test.safetensors");
    const json meta = {{"format", d.format}, {"pad_id", d.pad_id}, {"max_len", d.train.max_len},
                       {"truncated", d.truncated}};
    write_text_atomic(dir + "/instructions.json", meta.dump(2) + "\n");
}

InstructionData load_instructions_dir(const std::string& dir) {
    InstructionData d;
    const std::string path = dir + "/instructions.json";
    const json meta = read_json_file(path);
    try {
        d.format = meta.at("format").get<std::string>();
    } catch (const json::exception& e) {  // absent, or no string
        throw InputError(fmt::format("{}: \"format\": {}", path, json_error_text(e)), "prepare the data again");
    }
    d.pad_id = static_cast<int32_t>(json_int(meta, "pad_id", 0, INT32_MAX, path));
    d.truncated = meta.contains("truncated") ? json_int(meta, "truncated", 0, kMaxCount, path) : 0;
    d.train = read_split(dir + "/train.safetensors");
    d.val = read_split(dir + "/val.safetensors");
    d.test = read_split(dir + "/test.safetensors");
    return d;
}

}  // namespace lmforge
