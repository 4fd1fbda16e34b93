#include "tokenizer/tokenizer_io.h"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "io/json_fields.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/pretokenizer_chain.h"

namespace lmforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json parse_json_file(const std::string& path) {
    const MappedFile file(path);
    const auto* p = reinterpret_cast<const char*>(file.bytes().data());
    try {
        return json::parse(p, p + file.size(), json_depth_limit(path));
    } catch (const json::parse_error& e) {
        throw InputError(fmt::format("{}: not valid JSON at byte {}", path, e.byte),
                         "the file is damaged or of another format");
    } catch (const json::out_of_range& e) {  // a number beyond a double's range, 1e400: not a parse_error
        throw InputError(fmt::format("{}: a number out of range ({})", path, json_error_text(e)),
                         "the file is damaged or of another format");
    }
}

// A token in the byte-level alphabet, as bytes; InputError naming where it came from.
std::string token_bytes(const std::string& token, const std::string& where) {
    auto bytes = unicode_to_bytes(token);
    if (!bytes) {
        throw InputError(fmt::format("{}: token '{}' is not written in the byte-level alphabet", where, token),
                         "only byte-level BPE vocabularies (GPT-2 style) are supported");
    }
    return *bytes;
}

bool looks_special(const std::string& token) {
    return token.size() > 4 && token.rfind("<|", 0) == 0 && token.compare(token.size() - 2, 2, "|>") == 0;
}

// The ids a tokenizer's files may give: 0 .. N-1 for the N tokens they name (the vocabulary's
// entries and the added tokens it lacks), as real vocabularies number them. A larger id would
// leave a hole in the id table and let one line of a file make that table as large as it likes
// (2^31 - 1 asked for 2^31 entries); the bound also keeps every id a TokenId.
int64_t id_limit(const json& vocab, const std::set<std::string>& added) {
    int64_t n = vocab.is_object() ? static_cast<int64_t>(vocab.size()) : 0;
    for (const std::string& token : added) n += vocab.contains(token) ? 0 : 1;
    return std::min<int64_t>(n, int64_t{std::numeric_limits<TokenId>::max()} + 1);
}

// A token's id as a file gives it; InputError naming the file, the token and the value unless it
// is an integer in [0, limit): not 1.5 or "7", nor -5 or 2^40, which get<TokenId> would index
// with or truncate.
TokenId token_id(const json& id, const std::string& token, int64_t limit, const std::string& where) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= limit) {
        throw InputError(fmt::format("{}: token '{}' has no valid id ({}): ids are integers in [0, {})", where, token,
                                     id.dump(), limit),
                         "a tokenizer numbers its tokens 0, 1, 2, ... without gaps; the file is damaged or "
                         "another tokenizer's");
    }
    return id.get<TokenId>();
}

// encoder.json-style {token: id}: ordinary tokens (byte-level) and special ones: where a file
// lists the specials (added_tokens.json, tokenizer.json's added_tokens), <|endoftext|> and
// those `known_specials` names; else any token written <|...|> (GPT-2's encoder.json alone).
// A trained vocabulary may hold ordinary tokens of that shape ("<|-|>" in its text) once a
// list exists. (transformers lists only tokens past the vocabulary there, <|pad|> but not
// <|endoftext|>: hence <|endoftext|> always.)
void read_vocab(const json& j, const std::string& where, int64_t id_limit,
                std::vector<std::pair<std::string, TokenId>>& vocab, std::map<std::string, TokenId>& specials,
                const std::map<std::string, TokenId>* known_specials) {
    if (!j.is_object()) throw InputError(fmt::format("{}: the vocabulary is not a JSON object", where));
    for (const auto& [token, id_json] : j.items()) {
        const TokenId id = token_id(id_json, token, id_limit, where);
        const bool special = known_specials != nullptr ? token == kEndOfText || known_specials->contains(token)
                                                       : looks_special(token);
        if (special) {
            specials[token] = id;
        } else {
            vocab.emplace_back(token_bytes(token, where), id);
        }
    }
}

// What lmforge does not implement is refused in one line naming the field and the type: a
// tokenizer that ran without it would give other ids than Hugging Face's. (No normalizer;
// decoding is byte-level; the BPE model without dropout, byte fallback or word affixes.)
[[noreturn]] void refuse(const std::string& path, const std::string& what, const char* hint) {
    throw InputError(fmt::format("{}: {} is not supported", path, what), hint);
}

std::string type_name(const json& j) {
    return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : j.dump();
}

void check_normalizer(const json& j, const std::string& path) {
    constexpr const char* kHint = "lmforge runs no normalizer: GPT-2's, Llama 3's and SmolLM2's byte-level BPE "
                                  "tokenizers have none";
    const json normalizer = j.value("normalizer", json());
    if (normalizer.is_null()) return;
    if (type_name(normalizer) == "Sequence" && normalizer.contains("normalizers") &&
        normalizer["normalizers"].is_array()) {
        if (normalizer["normalizers"].empty()) return;  // a Sequence of nothing does nothing
        refuse(path, fmt::format("normalizer \"{}\" (in a Sequence)", type_name(normalizer["normalizers"][0])), kHint);
    }
    refuse(path, fmt::format("normalizer \"{}\"", type_name(normalizer)), kHint);
}

void check_decoder(const json& j, const std::string& path) {
    const json decoder = j.value("decoder", json());
    if (decoder.is_null() || type_name(decoder) == "ByteLevel") return;
    refuse(path, fmt::format("decoder \"{}\"", type_name(decoder)),
           "lmforge decodes byte-level BPE: the decoder is ByteLevel (or none)");
}

void check_bpe_model(const json& model, const std::string& path) {
    constexpr const char* kHint = "lmforge reads byte-level BPE models as the tokenizers library writes GPT-2's, "
                                  "Llama 3's and Qwen2's";
    const auto set = [&](const char* key) {
        if (!model.contains(key) || model[key].is_null()) return false;
        const json& v = model[key];
        return !(v == false || v == 0 || v == 0.0 || v == "");
    };
    for (const char* key : {"dropout", "byte_fallback", "continuing_subword_prefix", "end_of_word_suffix"}) {
        if (set(key)) refuse(path, fmt::format("model.{} = {}", key, model[key].dump()), kHint);
    }
}

// tokenizer_config.json's names for special tokens: a string, or an AddedToken object's
// "content"; null where it names none.
std::optional<std::string> role_token(const json& value, const std::string& where) {
    if (value.is_null()) return std::nullopt;
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string()) {
        return value["content"].get<std::string>();
    }
    throw InputError(fmt::format("{}: {} is neither a token nor {{\"content\": token}}", where, value.dump()),
                     "the file is damaged");
}

// The bos, eos, pad and unk tokens tokenizer_config.json (beside a tokenizer's files) names:
// each must be a token of the tokenizer, whose encode() gives it as one id.
void read_roles(Tokenizer& tokenizer, const std::string& config_path) {
    if (!fs::exists(config_path)) return;
    const json config = parse_json_file(config_path);
    if (!config.is_object()) throw InputError(fmt::format("{}: not a JSON object", config_path));
    for (const char* role : {"bos_token", "eos_token", "pad_token", "unk_token"}) {
        if (!config.contains(role)) continue;
        const auto token = role_token(config[role], fmt::format("{}: {}", config_path, role));
        if (!token) continue;
        const std::vector<TokenId> ids = tokenizer.encode(*token);
        if (ids.size() != 1 || token->empty()) {
            throw InputError(fmt::format("{}: {} \"{}\" is not a token of the tokenizer beside it", config_path,
                                         role, *token),
                             "the tokenizer files and tokenizer_config.json do not belong together");
        }
        tokenizer.set_role(role, ids[0]);
    }
}

// An added token as the encoder can use it: not empty (it would match everywhere), with an id.
TokenId added_token_id(const std::string& token, const json& id, int64_t id_limit, const std::string& where) {
    if (token.empty()) throw InputError(fmt::format("{}: an added token is empty", where), "the file is damaged");
    return token_id(id, token, id_limit, where);
}

json read_json_object(const std::string& path) {
    json j = parse_json_file(path);
    if (!j.is_object()) throw InputError(fmt::format("{}: not a JSON object of token: id", path));
    return j;
}

std::set<std::string> keys_of(const json& object) {
    std::set<std::string> keys;
    for (const auto& [key, value] : object.items()) keys.insert(key);
    return keys;
}

}  // namespace

std::unique_ptr<Tokenizer> load_gpt2_files(const std::string& encoder_json, const std::string& vocab_bpe,
                                           const std::string& added_tokens) {
    std::vector<std::pair<std::string, TokenId>> vocab;
    std::map<std::string, TokenId> specials;
    const json added_json = added_tokens.empty() ? json::object() : read_json_object(added_tokens);
    const json encoder = parse_json_file(encoder_json);
    const int64_t limit = id_limit(encoder, keys_of(added_json));
    std::map<std::string, TokenId> added;
    for (const auto& [token, id] : added_json.items()) added[token] = added_token_id(token, id, limit, added_tokens);
    read_vocab(encoder, encoder_json, limit, vocab, specials, added_tokens.empty() ? nullptr : &added);
    // An added token may be absent from the vocabulary (Hugging Face lists it only there), but
    // neither file may give its id to another token, nor it another id.
    std::map<TokenId, const std::string*> ordinary;
    for (const auto& [bytes, id] : vocab) ordinary.emplace(id, &bytes);
    for (const auto& [token, id] : added) {
        if (const auto it = specials.find(token); it != specials.end() && it->second != id) {
            throw InputError(fmt::format("{}: token '{}' has id {}, but {} gives it {}", added_tokens, token, id,
                                         encoder_json, it->second),
                             "the two files do not belong together");
        }
        if (const auto it = ordinary.find(id); it != ordinary.end()) {
            throw InputError(fmt::format("{}: token '{}' has id {}, which {} gives to '{}'", added_tokens, token, id,
                                         encoder_json, bytes_to_unicode(*it->second)),
                             "the two files do not belong together");
        }
        specials[token] = id;
    }

    const MappedFile file(vocab_bpe);
    const std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
    std::vector<std::pair<std::string, std::string>> merges;
    size_t line_no = 0;
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        at = end + 1;
        line_no++;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || line.rfind("#version", 0) == 0) continue;
        const size_t space = line.find(' ');
        if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos) {
            throw InputError(fmt::format("{}:{}: expected two tokens separated by one space", vocab_bpe, line_no),
                             "the merges file is damaged");
        }
        const std::string where = fmt::format("{}:{}", vocab_bpe, line_no);
        merges.emplace_back(token_bytes(std::string(line.substr(0, space)), where),
                            token_bytes(std::string(line.substr(space + 1)), where));
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, std::move(specials), encoder_json);
}

// A Hugging Face tokenizer.json's BPE model; json::exception for a field missing or mistyped.
static std::unique_ptr<Tokenizer> load_hf_bpe_json(const json& j, const std::string& path);

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path) {
    const json j = parse_json_file(path);
    if (!j.is_object()) {  // value() below would throw nlohmann's type_error
        throw InputError(fmt::format("{}: not a JSON object", path),
                         "a tokenizer.json is one object: Hugging Face's or lmforge's character tokenizer's");
    }
    if (j.contains("lmforge_tokenizer")) {  // lmforge's own; value() would throw on a non-string
        if (j["lmforge_tokenizer"] != "char") {
            throw InputError(fmt::format("{}: lmforge_tokenizer is {}, not \"char\"", path, j["lmforge_tokenizer"].dump()),
                             "the file is damaged or was edited; prepare the data again with --tokenizer char");
        }
        try {
            return std::make_unique<CharTokenizer>(j.at("chars").get<std::vector<std::string>>());
        } catch (const json::exception& e) {
            throw InputError(fmt::format("{}: bad character tokenizer: {}", path, e.what()));
        }
    }
    // Hugging Face: {"model": {"type": "BPE", "vocab": {...}, "merges": [...]}, "added_tokens": [...]}
    try {
        auto tokenizer = load_hf_bpe_json(j, path);
        read_roles(*tokenizer, (fs::path(path).parent_path() / "tokenizer_config.json").string());
        return tokenizer;
    } catch (const json::exception& e) {  // a field missing or of another type
        throw InputError(fmt::format("{}: not a tokenizer.json lmforge can read: {}", path, e.what()),
                         "lmforge reads byte-level BPE (GPT-2 style) and its own character tokenizers");
    }
}

// The pre-tokenizer: nullptr for GPT-2's (the BPE's fast path), else the chain it names.
static std::shared_ptr<const PretokenizerChain> hf_pretokenizer(const json& j, const std::string& path) {
    auto chain = PretokenizerChain::from_json(j.value("pre_tokenizer", json()), path);
    return chain->is_gpt2() ? nullptr : chain;
}

static std::pair<std::string, std::string> hf_merge(const json& m, const std::string& path) {
    if (m.is_string()) {  // "a b" (older files)
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos) throw InputError(fmt::format("{}: merge '{}' has no space", path, s));
        return {token_bytes(s.substr(0, space), path), token_bytes(s.substr(space + 1), path)};
    }
    if (m.is_array() && m.size() == 2) {  // ["a", "b"] (newer files)
        return {token_bytes(m[0].get<std::string>(), path), token_bytes(m[1].get<std::string>(), path)};
    }
    throw InputError(fmt::format("{}: a merge is neither \"a b\" nor [\"a\", \"b\"]", path));
}

static std::unique_ptr<Tokenizer> load_hf_bpe_json(const json& j, const std::string& path) {
    if (!j.contains("model") || !j["model"].is_object() || j["model"].value("type", "") != "BPE") {
        throw InputError(fmt::format("{}: not a BPE tokenizer.json (model.type is not \"BPE\")", path),
                         "lmforge reads byte-level BPE (GPT-2 style) and its own character tokenizers");
    }
    const json& model = j["model"];
    check_normalizer(j, path);
    BpeOptions options;
    options.pretokenizer = hf_pretokenizer(j, path);
    check_decoder(j, path);
    check_bpe_model(model, path);
    options.ignore_merges = model.value("ignore_merges", false);
    std::vector<std::pair<std::string, TokenId>> vocab;
    std::map<std::string, TokenId> specials;
    const json added_list = j.value("added_tokens", json::array());
    std::set<std::string> added_names;
    for (const json& t : added_list) added_names.insert(t.at("content").get<std::string>());
    const int64_t limit = id_limit(model.at("vocab"), added_names);
    std::map<std::string, TokenId> added;
    std::set<std::string> ordinary_added;  // "special": false: Hugging Face matches them in any text
    for (const json& t : added_list) {
        const std::string content = t.at("content");
        added[content] = added_token_id(content, t.at("id"), limit, path + ": added_tokens");
        if (!t.value("special", true)) ordinary_added.insert(content);
    }
    read_vocab(model.at("vocab"), path + ": model.vocab", limit, vocab, specials,
               j.contains("added_tokens") ? &added : nullptr);
    std::vector<std::pair<std::string, std::string>> merges;
    for (const json& m : model.at("merges")) merges.push_back(hf_merge(m, path));
    for (const auto& [content, id] : added) {
        std::erase_if(vocab, [&](const auto& v) { return v.second == id; });
        specials.erase(content);
        (ordinary_added.contains(content) ? options.added : specials)[content] = id;
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, std::move(specials), path, std::move(options));
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
    if (spec == "char") {
        throw InputError("the character tokenizer needs its alphabet",
                         "pass the tokenizer.json that `lmforge prepare --tokenizer char` wrote beside the shards");
    }
    const fs::path p(spec);
    if (fs::is_directory(p)) {
        if (fs::exists(p / "encoder.json") && fs::exists(p / "vocab.bpe")) {
            const fs::path added = p / "added_tokens.json";
            auto tokenizer = load_gpt2_files((p / "encoder.json").string(), (p / "vocab.bpe").string(),
                                             fs::exists(added) ? added.string() : "");
            read_roles(*tokenizer, (p / "tokenizer_config.json").string());
            return tokenizer;
        }
        if (fs::exists(p / "tokenizer.json")) return load_tokenizer_json((p / "tokenizer.json").string());
        throw InputError(fmt::format("{}: holds neither encoder.json + vocab.bpe nor tokenizer.json", spec),
                         "pass gpt2, char, or a tokenizer directory or file");
    }
    if (fs::is_regular_file(p)) return load_tokenizer_json(spec);
    throw InputError(fmt::format("unknown tokenizer '{}': not gpt2, char, or an existing path", spec),
                     "pass gpt2, char, or a tokenizer directory or file");
}

}  // namespace lmforge
