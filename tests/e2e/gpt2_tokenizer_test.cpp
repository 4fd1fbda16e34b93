// GPT-2's tokenizer on real text against tiktoken's ids (tests/fixtures/tokenizer, made by
// tools/make_tokenizer_goldens.py): the Unicode stress text id for id, and every document of
// Moby Dick, the State of the Union addresses and the SpamAssassin e-mails by count and hash.
// The data comes from the data home ($LMFORGE_HOME), fetched there first if absent.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/file_io.h"
#include "data/data_home.h"
#include "data/recipes.h"
#include "tokenizer/batch_encode.h"
#include "tokenizer/bpe.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// FNV-1a 64 over the ids as little-endian int32, as tools/tiktoken_gpt2.py computes it.
std::string ids_hash(const std::vector<TokenId>& ids) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const TokenId id : ids) {
        const auto u = static_cast<uint32_t>(id);
        for (int k = 0; k < 4; k++) h = (h ^ ((u >> (8 * k)) & 0xff)) * 0x100000001b3ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// The documents of a corpus, in the order the goldens list them.
std::vector<std::string> documents(const std::string& name) {
    const std::string dir = ensure_dataset(find_recipe(name), data_home());
    std::vector<std::string> docs;
    if (name == "moby-dick") {
        docs.push_back(read_file(dir + "/moby_dick.txt"));
    } else if (name == "sotu") {
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(dir)) {
            if (e.path().extension() == ".txt") files.push_back(e.path().string());
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files) docs.push_back(read_file(f));
    } else {
        std::ifstream in(dir + "/spam_assassin.jsonl");
        for (std::string line; std::getline(in, line);) docs.push_back(json::parse(line).at("text"));
    }
    return docs;
}

class Gpt2Tokenizer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        tokenizer_ = open_tokenizer("gpt2", data_home()).release();
        goldens_ = new json(json::parse(read_file(std::string(LMFORGE_FIXTURES_DIR) + "/tokenizer/gpt2_goldens.json")));
    }
    static void TearDownTestSuite() {
        delete tokenizer_;
        delete goldens_;
    }
    static Tokenizer* tokenizer_;
    static json* goldens_;
};
Tokenizer* Gpt2Tokenizer::tokenizer_ = nullptr;
json* Gpt2Tokenizer::goldens_ = nullptr;

TEST_F(Gpt2Tokenizer, UnicodeStressTextMatchesTiktokenIdForId) {
    const std::string text = read_file(std::string(LMFORGE_FIXTURES_DIR) + "/tokenizer/unicode_stress.txt");
    const auto& g = (*goldens_)["unicode_stress"];
    EXPECT_EQ(tokenizer_->encode_ordinary(text), g["ordinary"].get<std::vector<TokenId>>());
    EXPECT_EQ(tokenizer_->encode(text), g["with_specials"].get<std::vector<TokenId>>());
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode_ordinary(text)), text);
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text)), text);
    EXPECT_EQ(tokenizer_->vocab_size(), 50257);
    EXPECT_EQ(tokenizer_->eot_id(), 50256);
}

class Gpt2Corpus : public Gpt2Tokenizer, public ::testing::WithParamInterface<std::string> {};

TEST_P(Gpt2Corpus, EveryDocumentMatchesTiktokenAndDecodesBack) {
    const std::vector<std::string> docs = documents(GetParam());
    const auto& g = (*goldens_)["corpora"][GetParam()];
    ASSERT_EQ(docs.size(), g["documents"].get<size_t>());
    const std::vector<std::string_view> views(docs.begin(), docs.end());
    const auto ids = encode_batch(*tokenizer_, views);  // all threads, long documents in parts
    size_t mismatches = 0, tokens = 0;
    for (size_t d = 0; d < docs.size(); d++) {
        tokens += ids[d].size();
        if (ids[d].size() != g["counts"][d].get<size_t>() || ids_hash(ids[d]) != g["hashes"][d]) {
            if (mismatches++ < 5) ADD_FAILURE() << GetParam() << " document " << d << " differs from tiktoken";
        }
        if (tokenizer_->decode(ids[d]) != docs[d]) {
            if (mismatches++ < 5) ADD_FAILURE() << GetParam() << " document " << d << " does not decode back";
        }
    }
    EXPECT_EQ(mismatches, 0u);
    EXPECT_EQ(tokens, g["tokens"].get<size_t>());
    RecordProperty("tokens", static_cast<int>(tokens));
}

INSTANTIATE_TEST_SUITE_P(Corpora, Gpt2Corpus, ::testing::Values("moby-dick", "sotu", "spam-assassin"),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

TEST_F(Gpt2Tokenizer, VocabularyIsConsistentSoWholePieceLookupEqualsMerging) {
    // tiktoken (and encode_piece) look a piece up whole before merging; that is exact only if
    // merging each token's own bytes gives back the token. Check all 50,000 merged tokens.
    const auto& bpe = dynamic_cast<const BpeTokenizer&>(*tokenizer_);
    size_t bad = 0;
    for (TokenId t = 256; t < 50256; t++) {
        std::vector<TokenId> ids;
        bpe.encode_piece_by_merges(bpe.decode(std::span(&t, 1)), ids);
        if (ids != std::vector<TokenId>{t} && bad++ < 5) ADD_FAILURE() << "token " << t << " is not its own BPE";
    }
    EXPECT_EQ(bad, 0u);
}

TEST_F(Gpt2Tokenizer, ParallelPartsOfALongDocumentEncodeAsTheWhole) {
    const std::string book = documents("moby-dick")[0];
    const auto whole = tokenizer_->encode_ordinary(book);
    const auto parts = encode_batch(*tokenizer_, {book}, {}, 4096);  // ~300 parts
    EXPECT_EQ(parts[0], whole);
}

}  // namespace
}  // namespace lmforge
