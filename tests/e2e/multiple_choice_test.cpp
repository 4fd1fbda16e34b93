// Multiple-choice evaluation (HellaSwag's format) on the transformers-written fixture model:
// each ending's log-likelihood equals the one computed independently from full-sequence
// logits (one forward per ending, log-softmax by hand), also when the context is cut to fit;
// `lmforge eval --multiple-choice` reports the accuracies those give; bad items fail with
// one line naming file:line. (Sharded over ranks: tests/mpi/multiple_choice_mpi_test.cpp.)
#include "train/multiple_choice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "ascii_tokenizer.h"
#include "cli_util.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_gpt2.h"
#include "core/file_io.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer_io.h"

namespace lmforge::test {
namespace {

const std::string kModel = std::string(LMFORGE_FIXTURES_DIR) + "/hf/gpt2-f32";  // vocabulary 101, context 24

// log P(ending | context) from a logits-only forward of the whole sequence.
double reference_log_likelihood(Gpt2& model, const std::vector<int32_t>& context, const std::vector<int32_t>& ending) {
    std::vector<int32_t> row = context;
    row.insert(row.end(), ending.begin(), ending.end());
    const auto T = static_cast<int64_t>(row.size());
    model.forward(Batch{.B = 1, .T = T, .inputs = row});
    const int64_t V = model.config().vocab_size, Vp = model.config().padded_vocab();
    double ll = 0;
    for (size_t t = context.size() - 1; t + 1 < row.size(); t++) {
        const float* logits = model.logits() + static_cast<int64_t>(t) * Vp;
        double sum = 0;
        for (int64_t v = 0; v < V; v++) sum += std::exp(static_cast<double>(logits[v]));
        ll += logits[row[t + 1]] - std::log(sum);
    }
    return ll;
}

class MultipleChoice : public TempDirTest {
protected:
    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model_{read_hf_gpt2_config(kModel), *gemm_};
    void SetUp() override {
        TempDirTest::SetUp();
        load_hf_gpt2_weights(model_, kModel);
    }
    std::string char_tokenizer() { return write("tok/tokenizer.json", ascii_tokenizer_json()); }
};

TEST_F(MultipleChoice, EndingLikelihoodsEqualAnIndependentComputation) {
    std::mt19937 rng(4);
    const auto ids = [&](size_t n) {
        std::vector<int32_t> v(n);
        for (auto& x : v) x = static_cast<int32_t>(rng() % 101);
        return v;
    };
    for (const size_t context_len : {size_t{1}, size_t{7}, size_t{30}}) {  // 30: cut to fit 24 positions
        ChoiceItem item{ids(context_len), {ids(3), ids(5), ids(1), ids(4)}, 2};
        const std::vector<double> got = ending_log_likelihoods(model_, item);
        const size_t keep = std::min<size_t>(context_len, 24 - 5);  // beside the longest ending
        const std::vector<int32_t> kept(item.context.end() - static_cast<int64_t>(keep), item.context.end());
        for (size_t e = 0; e < item.endings.size(); e++) {
            EXPECT_NEAR(got[e], reference_log_likelihood(model_, kept, item.endings[e]), 1e-4 * std::abs(got[e]))
                << "context " << context_len << ", ending " << e;
        }
    }
}

TEST_F(MultipleChoice, CommandReportsTheAccuracies) {
    const std::string tok = char_tokenizer();
    std::string jsonl;
    const char* endings[] = {"the sea", "a whale", "an old ship", "wind"};
    for (int i = 0; i < 6; i++) {
        jsonl += nlohmann::json{{"ctx", std::string("Call me ") + std::string(1 + i % 3, 'x')},
                                {"endings", endings}, {"label", i % 4}}.dump() + "\n";
    }
    const std::string file = write("items.jsonl", jsonl);
    // What the command must print: the accuracies of the independently computed likelihoods.
    const auto tokenizer = load_tokenizer(path("tok"));
    const auto items = load_multiple_choice(file, *tokenizer);
    int64_t correct = 0, correct_norm = 0;
    for (const ChoiceItem& item : items) {
        std::vector<double> ll, mean;
        for (const auto& e : item.endings) {
            ll.push_back(reference_log_likelihood(model_, item.context, e));
            mean.push_back(ll.back() / static_cast<double>(e.size()));
        }
        correct += std::max_element(ll.begin(), ll.end()) - ll.begin() == item.label;
        correct_norm += std::max_element(mean.begin(), mean.end()) - mean.begin() == item.label;
    }
    publish_directory(path("ckpt"), [&](const std::string& tmp) { save_model_weights(model_, tmp + "/model.safetensors"); });
    const Outcome o = run_lmforge("eval --checkpoint " + path("ckpt") + " --multiple-choice " + file + " --tokenizer " +
                                  path("tok"));
    ASSERT_EQ(o.status, 0) << o.err;
    const auto j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j["items"], 6);
    EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), static_cast<double>(correct) / 6);
    EXPECT_DOUBLE_EQ(j["accuracy_norm"].get<double>(), static_cast<double>(correct_norm) / 6);
}

// An empty context starts from <|endoftext|>: every token of every ending is scored, the
// first one too (it was scored from nothing, and one-token endings all scored 0).
TEST_F(MultipleChoice, AnEmptyContextStartsFromEndOfText) {
    const auto tokenizer = load_tokenizer(char_tokenizer());
    const std::string file = write("empty.jsonl", R"({"ctx": "", "endings": ["a", "b", "c"], "label": 2})" "\n");
    const std::vector<ChoiceItem> items = load_multiple_choice(file, *tokenizer);
    ASSERT_EQ(items.size(), 1u);
    ASSERT_EQ(items[0].context, std::vector<int32_t>{*tokenizer->eot_id()});
    const std::vector<double> got = ending_log_likelihoods(model_, items[0]);
    for (size_t e = 0; e < 3; e++) {
        EXPECT_NEAR(got[e], reference_log_likelihood(model_, items[0].context, items[0].endings[e]), 1e-4 * std::abs(got[e]));
        EXPECT_LT(got[e], 0.0) << "ending " << e << " scored nothing";
    }
}

TEST_F(MultipleChoice, BadItemsFailWithOneLine) {
    const std::string tok = char_tokenizer();
    publish_directory(path("ckpt"), [&](const std::string& tmp) { save_model_weights(model_, tmp + "/model.safetensors"); });
    const auto expect_error = [&](const std::string& line, const std::string& needle) {
        const std::string file = write("bad.jsonl", "{\"ctx\": \"a\", \"endings\": [\"b\", \"c\"], \"label\": 0}\n" + line + "\n");
        const Outcome o = run_lmforge("eval --checkpoint " + path("ckpt") + " --multiple-choice " + file +
                                      " --tokenizer " + path("tok"));
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_NE(o.err.find("bad.jsonl:2: " + needle), std::string::npos) << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    };
    expect_error(R"({"ctx": "a", "endings": ["b", "c"], "label": 2})", "label 2 is not the index of one of its 2 endings");
    expect_error(R"({"ctx": "a", "endings": ["b", "c"], "label": 4294967297})",  // 2^32 + 1: no 1
                 "label 4294967297 is not the index of one of its 2 endings");
    expect_error(R"({"ctx": "a", "endings": ["b", "c"], "label": -1})", "label -1 is not the index");
    expect_error(R"({"ctx": "a", "label": 0})", "needs \"endings\"");
    expect_error(R"({"endings": ["b", "c"], "label": 0})", "");
    expect_error(R"({"ctx": "a", "endings": ["b", ""], "label": 0})", "every ending must be a non-empty string");
}

}  // namespace
}  // namespace lmforge::test
