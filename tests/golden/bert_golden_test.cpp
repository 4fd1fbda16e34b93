// BERT and DistilBERT against transformers itself (fixtures of tools/make_hf_fixtures.py):
// BertForMaskedLM's and DistilBertForMaskedLM's logits for every position of a padded batch,
// their masked-LM loss and gradients; the ...ForSequenceClassification logits, loss and
// gradients; in fp32 and, with bf16's tolerances, in mixed precision; and export writing back
// the very tensors transformers saved.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

#include "backend/gemm.h"
#include "checkpoint/hf_bert.h"
#include "io/safetensors.h"
#include "temp_dir.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

const std::string kFixtures = std::string(LMFORGE_FIXTURES_DIR) + "/hf";

// Real tokens per row of a (B, T) attention mask.
std::vector<int32_t> lengths_of(const std::vector<int32_t>& mask, int64_t B, int64_t T) {
    std::vector<int32_t> n(B, 0);
    for (int64_t i = 0; i < B * T; i++) n[i / T] += mask[i];
    return n;
}

struct Tolerance {
    double value, grad;  // absolute on logits and losses; relative to each gradient's largest
};

// One family's fixtures: DIR-mlm/, DIR-cls/, DIR-expected.safetensors, and the gradients there.
struct Family {
    std::string dir;
    std::vector<std::string> mlm_grads, cls_grads;
};

const Family kBert{"bert",
                   {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
                    "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
                    "bert.encoder.layer.0.attention.self.query.weight",
                    "bert.encoder.layer.1.output.LayerNorm.bias", "cls.predictions.bias",
                    "cls.predictions.transform.dense.weight"},
                   {"classifier.weight", "classifier.bias", "bert.pooler.dense.weight",
                    "bert.encoder.layer.0.attention.self.key.weight", "bert.embeddings.word_embeddings.weight",
                    "bert.embeddings.token_type_embeddings.weight"}};
const Family kDistilBert{"distilbert",
                         {"distilbert.embeddings.word_embeddings.weight",
                          "distilbert.embeddings.position_embeddings.weight", "distilbert.embeddings.LayerNorm.weight",
                          "distilbert.transformer.layer.0.attention.q_lin.weight",
                          "distilbert.transformer.layer.1.output_layer_norm.bias", "vocab_projector.bias",
                          "vocab_transform.weight"},
                         {"classifier.weight", "classifier.bias", "pre_classifier.weight",
                          "distilbert.transformer.layer.0.attention.k_lin.weight",
                          "distilbert.embeddings.word_embeddings.weight"}};

void PrintTo(const Family& f, std::ostream* os) { *os << f.dir; }  // test names, not bytes

// The model's precision, and whether it keeps its gradients in bf16 (bf16's tolerances).
struct Mode {
    Precision precision;
    bool bf16_grads = false;
};
void PrintTo(const Mode& m, std::ostream* os) {
    *os << precision_name(m.precision) << (m.bf16_grads ? "_bf16_grads" : "");
}

class BertGolden : public TempDirTest, public ::testing::WithParamInterface<std::tuple<Family, Mode>> {
protected:
    const Family& family() const { return std::get<0>(GetParam()); }
    Precision precision() const { return std::get<1>(GetParam()).precision; }
    // The fixture's model with its weights loaded.
    std::unique_ptr<Bert> load(const char* kind) {
        auto model = std::make_unique<Bert>(read_hf_bert_config(fixture(kind)), *gemm_, precision());
        if (std::get<1>(GetParam()).bf16_grads) model->keep_grads_in_bf16();
        load_hf_bert_weights(*model, fixture(kind));
        return model;
    }
    std::string fixture(const char* kind) const { return kFixtures + "/" + family().dir + "-" + kind; }
    Tolerance tol() const { return precision() == Precision::Fp32 ? Tolerance{1e-4, 1e-4} : Tolerance{2e-2, 2e-2}; }
    void expect_grads(const Bert& model, const std::string& prefix, const std::vector<std::string>& names) {
        const std::vector<float> grads = grads_as_floats(model);
        for (const std::string& name : names) {
            const ParamSpec& s = model.layout().find(name);
            const auto want = expected_.read_f32(prefix + name);
            const double scale = max_abs(std::span<const float>(want));
            ASSERT_GT(scale, 0.0) << name;
            const auto got = std::span<const float>(grads).subspan(s.offset, s.numel);
            EXPECT_TRUE(close(got, std::span<const float>(want), 0.0, tol().grad * scale))
                << name;
        }
    }
    SafetensorsReader expected_{fixture("expected.safetensors")};
    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
};

TEST_P(BertGolden, MaskedLmMatchesTransformers) {
    const BertConfig cfg = read_hf_bert_config(fixture("mlm"));
    EXPECT_EQ(cfg.num_labels, 0);
    EXPECT_EQ(cfg.intermediate, 64);
    EXPECT_FLOAT_EQ(cfg.layer_norm_eps, 1e-12f);
    EXPECT_EQ(cfg.distil(), family().dir == "distilbert");
    const std::unique_ptr<Bert> loaded = load("mlm");
    Bert& model = *loaded;
    const int64_t B = 2, T = 13, V = cfg.vocab_size;
    const auto ids = expected_.read_i32("mlm_ids");
    const auto lengths = lengths_of(expected_.read_i32("mlm_mask"), B, T);
    EXPECT_EQ(lengths, (std::vector<int32_t>{9, 13}));
    Batch batch{.B = B, .T = T, .inputs = ids, .lengths = lengths};
    // Every position, padded ones included: they attend to the real tokens only, as in transformers.
    model.forward(batch);
    EXPECT_TRUE(close(std::span<const float>(model.logits(), B * T * V),
                      std::span<const float>(expected_.read_f32("mlm_logits")), 0.0, tol().value));

    // transformers' loss is the mean over the masked positions: the gradient of the sum / 8.
    batch.targets = expected_.read_i32("mlm_labels");
    ASSERT_EQ(batch.counted(), 8);
    const LossSum loss = model.forward_backward(batch, 1.0f / 8, false);
    EXPECT_NEAR(loss.mean(), expected_.read_f32("mlm_loss")[0], tol().value);
    EXPECT_EQ(loss.count, 8);
    expect_grads(model, "mlm_grad/", family().mlm_grads);
}

TEST_P(BertGolden, SequenceClassificationMatchesTransformers) {
    const BertConfig cfg = read_hf_bert_config(fixture("cls"));
    ASSERT_EQ(cfg.num_labels, 3);
    const std::unique_ptr<Bert> loaded = load("cls");
    Bert& model = *loaded;
    const int64_t B = 3, T = 13;
    const auto ids = expected_.read_i32("cls_ids");
    const auto lengths = lengths_of(expected_.read_i32("cls_mask"), B, T);
    EXPECT_EQ(lengths, (std::vector<int32_t>{9, 13, 4}));
    const Batch batch{.B = B, .T = T, .inputs = ids, .lengths = lengths, .labels = expected_.read_i32("cls_labels")};
    const LossSum loss = model.forward_backward(batch, 1.0f / B, false);  // the mean over the sequences
    EXPECT_NEAR(loss.mean(), expected_.read_f32("cls_loss")[0], tol().value);
    EXPECT_TRUE(close(std::span<const float>(model.class_logits(), B * 3),
                      std::span<const float>(expected_.read_f32("cls_logits")), 0.0, tol().value));
    expect_grads(model, "cls_grad/", family().cls_grads);
}

INSTANTIATE_TEST_SUITE_P(FamiliesAndPrecisions, BertGolden,
                         ::testing::Combine(::testing::Values(kBert, kDistilBert),
                                            ::testing::Values(Mode{Precision::Fp32}, Mode{Precision::Bf16},
                                                              Mode{Precision::Bf16, true})),
                         [](const auto& info) {
                             const Mode& m = std::get<1>(info.param);
                             return std::get<0>(info.param).dir + "_" + precision_name(m.precision) +
                                    (m.bf16_grads ? "_bf16_grads" : "");
                         });

// Export writes back every tensor transformers saved, under its names, bit for bit.
TEST_F(TempDirTest, BertExportWritesTransformersTensors) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    for (const char* dir : {"bert-mlm", "bert-cls", "distilbert-mlm", "distilbert-cls"}) {
        const std::string src = kFixtures + "/" + dir;
        Bert model(read_hf_bert_config(src), *gemm);
        load_hf_bert_weights(model, src);
        save_hf_bert(model, path(dir), std::nullopt);
        EXPECT_EQ(read_hf_bert_config(path(dir)).to_json(), model.config().to_json());
        const SafetensorsReader original(src + "/model.safetensors"), exported(path(dir) + "/model.safetensors");
        EXPECT_EQ(exported.names(), original.names()) << dir;
        for (const std::string& name : original.names()) {
            EXPECT_EQ(exported.read_f32(name), original.read_f32(name)) << dir << " " << name;
        }
    }
}

// Google's original checkpoints name LayerNorm's parameters gamma and beta: they load alike.
TEST_F(TempDirTest, BertLegacyGammaBetaNamesLoad) {
    auto gemm = backend::make_gemm(backend::GemmKind::Naive);
    const std::string src = kFixtures + "/bert-mlm";
    const SafetensorsReader original(src + "/model.safetensors");
    SafetensorsWriter legacy;
    std::vector<std::vector<float>> keep;  // the writer copies, but keep the data alive anyway
    int renamed = 0;
    for (std::string name : original.names()) {
        keep.push_back(original.read_f32(name));
        const std::vector<int64_t> shape = original.info(name).shape;
        if (name.ends_with("LayerNorm.weight")) name.replace(name.size() - 6, 6, "gamma"), renamed++;
        if (name.ends_with("LayerNorm.bias")) name.replace(name.size() - 4, 4, "beta"), renamed++;
        legacy.add(name, Dtype::F32, shape, keep.back().data());
    }
    ASSERT_GT(renamed, 0);
    std::filesystem::create_directories(path("legacy"));
    legacy.write(path("legacy/model.safetensors"));
    std::filesystem::copy_file(src + "/config.json", path("legacy/config.json"));
    Bert a(read_hf_bert_config(src), *gemm), b(read_hf_bert_config(src), *gemm);
    load_hf_bert_weights(a, src);
    load_hf_bert_weights(b, path("legacy"));
    EXPECT_TRUE(std::equal(a.params().begin(), a.params().end(), b.params().begin()));
}

}  // namespace
}  // namespace lmforge::test
