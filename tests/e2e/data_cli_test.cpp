// lmforge prepare, tokenize and data on real files: shards that decode back to the inputs,
// and bad input (missing or empty files, broken JSON lines, vocabulary files that do not
// parse, damaged shards, tokens outside the vocabulary) each refused with one line naming
// the file (and line or offset), exit status 2, nothing half-written left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "data/shard.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;
using test::count_lines;
using test::Outcome;
using test::run_lmforge;

class DataCli : public test::TempDirTest {
protected:
    // Expects one error line containing `want`, exit status 2, and no output or leftovers.
    void expect_refused(const std::string& args, const std::string& want) {
        const Outcome o = run_lmforge(args);
        EXPECT_EQ(o.status, 2) << args << "\n" << o.err;
        EXPECT_EQ(count_lines(o.err), 1) << args << "\n" << o.err;
        EXPECT_NE(o.err.find(want), std::string::npos) << args << "\n" << o.err;
        EXPECT_FALSE(fs::exists(path("out"))) << "half-written output after: " << args;
        for (const auto& e : fs::directory_iterator(dir_)) {
            EXPECT_EQ(e.path().filename().string().find(".lmforge-tmp."), std::string::npos) << "left behind: " << e.path();
        }
    }
};

TEST_F(DataCli, PreparedShardsDecodeBackToTheDocuments) {
    const std::vector<std::string> docs = {"First document.\n", "Second, with \u00e9\u00e8 and \U0001F600.",
                                           "third\tone  \r\n", "fourth"};
    for (size_t i = 0; i < docs.size(); i++) write("in/doc" + std::to_string(i) + ".txt", docs[i]);
    write("in/.hidden", "not a document");
    write("in/.git/HEAD", "ref: refs/heads/main\n");  // nor is anything under a hidden directory
    write("in/sub/.ipynb_checkpoints/doc-checkpoint.txt", "a stale copy");
    const Outcome o = run_lmforge("prepare --tokenizer char --val-fraction 0.25 --input " + path("in") +
                                  " --output " + path("out"));
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("4 documents from 4 files"), std::string::npos) << o.out;
    const auto tokenizer = load_tokenizer(path("out"));
    std::string all;
    for (const char* split : {"train", "val"}) {
        const Shard s(path(std::string("out/") + split + "_000000.bin"));
        const std::vector<TokenId> ids(s.tokens().begin(), s.tokens().end());
        all += tokenizer->decode(ids);
    }
    // Every document once, each after an <|endoftext|>, the split deciding only the order.
    for (const std::string& d : docs) {
        EXPECT_NE(all.find("<|endoftext|>" + d), std::string::npos) << d;
    }
    EXPECT_EQ(all.size(), docs[0].size() + docs[1].size() + docs[2].size() + docs[3].size() + 4 * 13);
    EXPECT_EQ(run_lmforge("data check " + path("out")).status, 0);
}

// Too few documents for one in val (round(n·f) = 0) split by tokens, as a single one does: a
// whole document would give val a quarter of the data here. An empty file among them and a
// file named twice are skipped, and said so.
TEST_F(DataCli, FewDocumentsSplitByTokensAndEmptyOrRepeatedFilesAreSkipped) {
    for (int i = 0; i < 4; i++) write("few/doc" + std::to_string(i) + ".txt", "document " + std::to_string(i) + " text");
    write("few/empty.txt", "");
    const Outcome o = run_lmforge("prepare --tokenizer char --input " + path("few") + " " + path("few/doc0.txt") +
                                  " --output " + path("out"));
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("4 documents from 4 files"), std::string::npos) << o.out;
    EXPECT_NE(o.err.find("1 empty files or texts skipped"), std::string::npos) << o.err;  // also tokenizer train's
    EXPECT_NE(o.err.find("1 files the inputs name more than once"), std::string::npos) << o.err;
    const auto record = nlohmann::json::parse(test::slurp(path("out/prepare.json")));
    // round(4 · 0.1) = 0 documents: the last tenth of the tokens, not a quarter of the data.
    EXPECT_EQ(record["split"], "tokens");
    EXPECT_NE(o.out.find("too few documents to split"), std::string::npos) << o.out;
    const int64_t train = record["tokens"]["train"], val = record["tokens"]["val"];
    EXPECT_GE(val, 1);
    EXPECT_LE(val, (train + val) / 10 + 1);
}

// Enough documents for round(n·f) >= 1: whole documents in val, none in both splits.
TEST_F(DataCli, EnoughDocumentsSplitByDocuments) {
    for (int i = 0; i < 20; i++) write("docs/doc" + std::to_string(i) + ".txt", "document " + std::to_string(i) + " text");
    const Outcome o = run_lmforge("prepare --tokenizer char --input " + path("docs") + " --output " + path("out"));
    ASSERT_EQ(o.status, 0) << o.err;
    const auto record = nlohmann::json::parse(test::slurp(path("out/prepare.json")));
    EXPECT_EQ(record["split"], "documents");
    EXPECT_EQ(record["documents"]["val"], 2);
    EXPECT_EQ(record["documents"]["train"], 18);
}

TEST_F(DataCli, BadInputFilesAreNamed) {
    const std::string good = write("good.txt", "hello");
    expect_refused("prepare --tokenizer char --input " + path("missing.txt") + " --output " + path("out"),
                   path("missing.txt") + ": no such file or directory");
    expect_refused("prepare --tokenizer char --input " + write("empty.txt", "") + " --output " + path("out"),
                   path("empty.txt") + ": empty file");
    expect_refused("prepare --tokenizer char --input " + write("a.jsonl", "{\"text\": \"a\"}\n\n{\"text\": oops}\n") +
                       " --output " + path("out"),
                   path("a.jsonl") + ":3: not valid JSON");
    expect_refused("prepare --tokenizer char --input " + write("b.jsonl", "{\"text\": \"a\"}\n{\"body\": \"b\"}\n") +
                       " --output " + path("out"),
                   path("b.jsonl") + ":2: no string field \"text\"");
    expect_refused("prepare --tokenizer char --input " + write("c.csv", "text,label\n\"x,0\n") +
                       " --label-field label --output " + path("out"),
                   path("c.csv") + ":2: a quoted field is never closed");
    expect_refused("prepare --tokenizer char --input " + good + " --shard-tokens 3000000000 --output " + path("out"),
                   "--shard-tokens 3000000000 must lie in 1..2147483647");
    write("corpus/a.txt", "hello");
    expect_refused("prepare --tokenizer char --overwrite --input " + path("corpus") + " --output " + path("corpus") + "/",
                   "holds the input " + path("corpus"));
    EXPECT_TRUE(fs::exists(path("corpus/a.txt")));
    // An output inside an input directory would be read back as text by the next prepare.
    const Outcome inside = run_lmforge("prepare --tokenizer char --input " + path("corpus") + " --output " +
                                       path("corpus/tok"));
    EXPECT_EQ(inside.status, 2) << inside.err;
    EXPECT_NE(inside.err.find("lies inside the input " + path("corpus")), std::string::npos) << inside.err;
    // The character tokenizer's alphabet is UTF-8: Latin-1 text is refused by its byte.
    const Outcome latin1 = run_lmforge("prepare --tokenizer char --input " + write("latin1.txt", "caf\xe9 au lait") +
                                       " --output " + path("out"));
    EXPECT_EQ(latin1.status, 2) << latin1.err;
    EXPECT_NE(latin1.err.find("the text is not UTF-8: byte \\xe9 at byte 3 of a text (\"caf\\xe9\")"),
              std::string::npos)
        << latin1.err;
    fs::create_directories(path("exists"));
    const Outcome o = run_lmforge("prepare --tokenizer char --input " + good + " --output " + path("exists"));
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("already exists"), std::string::npos) << o.err;
}

TEST_F(DataCli, CharAlphabetOfJsonlCoversEscapedCharactersAndOutputMayEndInASlash) {
    // Python's json.dumps writes every non-ASCII character as an escape; the alphabet must
    // hold the character, not the escape's letters. A trailing slash names the same output.
    std::string lines;
    for (int i = 0; i < 20; i++) {
        lines += i % 2 == 0 ? "{\"text\": \"caf\\u00e9\\tbar\", \"label\": \"a\"}\n"
                            : "{\"text\": \"the caf\\u00e9\", \"label\": \"b\"}\n";
    }
    const std::string in = write("l.jsonl", lines);
    const Outcome o = run_lmforge("prepare --tokenizer char --label-field label --input " + in +
                                  " --output " + path("out") + "/");
    ASSERT_EQ(o.status, 0) << o.err;
    const auto tokenizer = load_tokenizer(path("out"));
    EXPECT_EQ(tokenizer->decode(tokenizer->encode_ordinary("caf\u00e9\t")), "caf\u00e9\t");
    EXPECT_FALSE(fs::exists(path("out/out")));
}

TEST_F(DataCli, VocabularyFilesThatDoNotParseAreNamed) {
    const std::string good = write("good.txt", "hello");
    write("tok1/encoder.json", "{\"a\": 0,");
    write("tok1/vocab.bpe", "#version: 0.2\n");
    expect_refused("prepare --tokenizer " + path("tok1") + " --input " + good + " --output " + path("out"),
                   path("tok1/encoder.json") + ": not valid JSON");
    write("tok2/tokenizer.json", "{\"model\": {\"type\": \"Unigram\"}}");
    expect_refused("prepare --tokenizer " + path("tok2") + " --input " + good + " --output " + path("out"),
                   path("tok2/tokenizer.json") + ": not a BPE tokenizer.json");
    expect_refused("tokenize --tokenizer " + path("nope") + " < " + good, "unknown tokenizer '" + path("nope"));
    // A Hugging Face tokenizer.json whose normalizer lmforge does not run: its name, in one line.
    const nlohmann::json hf = {{"normalizer", {{"type", "NFKC"}}},
                               {"pre_tokenizer", {{"type", "ByteLevel"}}},
                               {"model", {{"type", "BPE"}, {"vocab", nlohmann::json::object()}, {"merges", nlohmann::json::array()}}}};
    const std::string nfkc = write("tok3/tokenizer.json", hf.dump());
    expect_refused("tokenize --tokenizer " + nfkc + " < " + good, nfkc + ": normalizer \"NFKC\" is not supported");
    expect_refused("prepare --tokenizer " + path("tok3") + " --input " + good + " --output " + path("out"),
                   nfkc + ": normalizer \"NFKC\" is not supported");
}

TEST_F(DataCli, DamagedShardsAndForeignTokensAreNamed) {
    const Outcome made = run_lmforge("prepare --tokenizer char --val-fraction 0 --input " +
                                     write("t.txt", "some text for shards") + " --output " + path("shards"));
    ASSERT_EQ(made.status, 0) << made.err;
    const std::string shard = path("shards/train_000000.bin");
    const std::string bytes = test::slurp(shard);
    const auto damage = [&](const std::string& b) { std::ofstream(shard, std::ios::binary) << b; };
    std::string b = bytes;
    b[0] = 'X';
    damage(b);
    expect_refused("data check " + path("shards"), shard + ": bad magic");
    b = bytes;
    b[4] = 9;
    damage(b);
    expect_refused("data check " + path("shards"), shard + ": version 9 is not supported");
    damage(bytes.substr(0, bytes.size() - 5));
    expect_refused("data check " + path("shards"), shard + ": the header says");
    damage(bytes);
    expect_refused("data check --vocab-size 5 " + path("shards"), "outside the vocabulary [0, 5)");
    expect_refused("data check " + path("nowhere"), path("nowhere") + ": no such data directory");
}

TEST_F(DataCli, TokenizeDecodeRefusesWhatIsNotAnId) {
    ASSERT_EQ(run_lmforge("prepare --tokenizer char --val-fraction 0 --input " + write("t.txt", "abc") +
                          " --output " + path("tok")).status, 0);
    expect_refused("tokenize --decode --tokenizer " + path("tok") + " < " + write("ids1.txt", "0 1 abc"),
                   "word 3 ('abc') is not a token id");
    expect_refused("tokenize --decode --tokenizer " + path("tok") + " < " + write("ids2.txt", "0 77"),
                   "token id 77 is outside the vocabulary [0, 4)");
    const Outcome o = run_lmforge("tokenize --tokenizer " + path("tok") + " < " + write("in.txt", "cab"));
    EXPECT_EQ(o.out, "2 0 1\n");
}

}  // namespace
}  // namespace lmforge
