#include "data/labelled.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "core/file_io.h"
#include "core/rng.h"
#include "data/csv.h"
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
    std::string text, label;
    size_t line;
};

// A label as its text, without the spaces around it ("spam, ham" in a CSV file); an empty one
// is refused. JSON integers and booleans are their text, so 1 and "1" are one class.
std::string label_string(const json& v, const std::string& where) {
    if (!v.is_string() && !v.is_number_integer() && !v.is_boolean()) {
        throw InputError(fmt::format("{}: the label is neither a string, an integer nor a boolean", where));
    }
    std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    const size_t first = text.find_first_not_of(" \t\r\n"), last = text.find_last_not_of(" \t\r\n");
    if (first == std::string::npos) throw InputError(fmt::format("{}: an empty label", where), "label the example or remove it");
    return text.substr(first, last - first + 1);
}

// The order of the classes (their indices): integers by value, before other labels by text,
// so labels 0..10 keep their numbers as class indices ("10" does not fall between 1 and 2).
bool label_before(const std::string& a, const std::string& b) {
    const auto as_integer = [](const std::string& s) -> std::optional<int64_t> {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return ec == std::errc() && end == s.data() + s.size() ? std::optional(v) : std::nullopt;
    };
    const auto ia = as_integer(a), ib = as_integer(b);
    if (ia && ib) return *ia != *ib ? *ia < *ib : a < b;  // "1" and "01" both kept, in a fixed order
    if (ia || ib) return ia.has_value();
    return a < b;
}

std::vector<Example> read_examples(const LabelledOptions& o) {
    const MappedFile file(o.path);
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    std::vector<Example> out;
    if (fs::path(o.path).extension() == ".csv") {
        const auto rows = parse_csv(text, o.path);
        if (rows.empty()) throw InputError(fmt::format("{}: empty CSV file", o.path));
        const auto col = [&](const std::string& name) {
            const std::vector<std::string>& header = rows[0].fields;
            const auto it = std::find(header.begin(), header.end(), name);
            if (it == header.end()) {
                throw InputError(fmt::format("{}: no column \"{}\" in the header (its columns: \"{}\")", o.path, name,
                                             fmt::join(header, "\", \"")),
                                 "name the columns with --text-field and --label-field");
            }
            return static_cast<size_t>(it - header.begin());
        };
        const size_t t = col(o.text_field), l = col(o.label_field);
        for (size_t r = 1; r < rows.size(); r++) {
            const std::string where = fmt::format("{}:{}", o.path, rows[r].line);
            out.push_back({rows[r].fields[t], label_string(rows[r].fields[l], where), rows[r].line});
        }
    } else {
        for_each_jsonl(text, o.path, [&](const json& j, size_t line) {
            const std::string where = fmt::format("{}:{}", o.path, line);
            if (!j.contains(o.label_field)) {
                throw InputError(fmt::format("{}: needs a string \"{}\" and a \"{}\"", where, o.text_field, o.label_field),
                                 "name the fields with --text-field and --label-field");
            }
            out.push_back({jsonl_string(j, o.text_field, o.path, line), label_string(j[o.label_field], where), line});
        });
    }
    if (out.empty()) throw InputError(fmt::format("{}: no examples", o.path));
    return out;
}

void write_split(const LabelledSplit& s, const std::string& path) {
    SafetensorsWriter w;
    w.add("tokens", Dtype::I32, {s.size(), s.max_len}, s.tokens.data());
    w.add("lengths", Dtype::I32, {s.size()}, s.lengths.data());
    w.add("labels", Dtype::I32, {s.size()}, s.labels.data());
    w.add("source", Dtype::I64, {s.size()}, s.source.data());
    w.write(path);
}

LabelledSplit read_split(const std::string& path) {
    const SafetensorsReader r(path);
    LabelledSplit s;
    const TensorInfo& t = r.info("tokens");
    if (t.shape.size() != 2) throw InputError(fmt::format("{}: tokens is not two-dimensional", path));
    s.max_len = t.shape[1];
    s.tokens = r.read_i32("tokens");
    s.lengths = r.read_i32("lengths");
    s.labels = r.read_i32("labels");
    s.source = r.read_i64("source");
    return s;
}

}  // namespace

LabelledData load_labelled(const LabelledOptions& o, const Tokenizer& tokenizer) {
    if (o.max_len <= 0) throw InputError(fmt::format("--max-len {} must be positive", o.max_len));
    const std::vector<Example> examples = read_examples(o);
    const std::vector<SplitAssignment> splits = assign_splits(examples.size(), o.val_fraction, o.test_fraction, o.seed);
    LabelledData d;
    d.pad_id = tokenizer.eot_id().value_or(0);
    std::map<std::string, int32_t, decltype(&label_before)> label_index(&label_before);
    for (const Example& e : examples) label_index.emplace(e.label, 0);
    for (auto& [name, index] : label_index) {
        index = static_cast<int32_t>(d.label_names.size());
        d.label_names.push_back(name);
    }
    std::vector<std::string_view> texts;
    for (const Example& e : examples) texts.emplace_back(e.text);
    const std::vector<std::vector<TokenId>> ids = encode_batch(tokenizer, texts);

    for (LabelledSplit* s : {&d.train, &d.val, &d.test}) s->max_len = o.max_len;
    for (const auto [i, split] : splits) {
        LabelledSplit& s = split == Split::Test ? d.test : split == Split::Val ? d.val : d.train;
        if (ids[i].empty()) {
            throw InputError(fmt::format("{}:{}: empty text", o.path, examples[i].line), "remove the example");
        }
        const auto len = static_cast<int64_t>(std::min<size_t>(ids[i].size(), static_cast<size_t>(o.max_len)));
        d.truncated += static_cast<int64_t>(ids[i].size()) > o.max_len;
        s.tokens.insert(s.tokens.end(), ids[i].begin(), ids[i].begin() + len);
        s.tokens.insert(s.tokens.end(), static_cast<size_t>(o.max_len - len), d.pad_id);
        s.lengths.push_back(static_cast<int32_t>(len));
        s.labels.push_back(label_index.at(examples[i].label));
        s.source.push_back(static_cast<int64_t>(i));
    }
    if (d.train.size() == 0) {
        throw InputError(fmt::format("{}: the training split is empty ({} examples)", o.path, examples.size()),
                         "lower --val-fraction and --test-fraction, or add examples");
    }
    // A class the model never sees in training cannot be learned, only scored as wrong.
    std::vector<bool> in_train(d.label_names.size(), false);
    for (int32_t label : d.train.labels) in_train[label] = true;
    for (size_t c = 0; c < in_train.size(); c++) {
        if (!in_train[c]) {
            throw InputError(fmt::format("{}: label \"{}\" is absent from the training split (its examples all fell "
                                         "in validation or test)", o.path, d.label_names[c]),
                             "add examples of it, drop them, or change --seed or the split fractions");
        }
    }
    return d;
}

void save_labelled(const LabelledData& d, const std::string& dir) {
    fs::create_directories(dir);
    write_split(d.train, dir + "/train.safetensors");
    write_split(d.val, dir + "/val.safetensors");
    write_split(d.test, dir + "/test.safetensors");
    const json labels = {{"labels", d.label_names}, {"pad_id", d.pad_id}, {"max_len", d.train.max_len}};
    const std::string text = labels.dump(2) + "\n";
    write_text_atomic(dir + "/labels.json", text);
}

LabelledData load_labelled_dir(const std::string& dir) {
    LabelledData d;
    const std::string path = dir + "/labels.json";
    const json labels = read_json_file(path);
    try {
        d.label_names = labels.at("labels").get<std::vector<std::string>>();
    } catch (const json::exception& e) {  // no list of strings
        throw InputError(fmt::format("{}: \"labels\": {}", path, json_error_text(e)), "prepare the data again");
    }
    d.pad_id = static_cast<int32_t>(json_int(labels, "pad_id", 0, INT32_MAX, path));
    d.train = read_split(dir + "/train.safetensors");
    d.val = read_split(dir + "/val.safetensors");
    d.test = read_split(dir + "/test.safetensors");
    return d;
}

}  // namespace lmforge
