// Hugging Face interop against fixtures written by transformers itself
// (tools/make_hf_fixtures.py): import gives transformers' logits; export writes back the very
// tensors transformers saved, under its names, with a config it reads; bad directories fail
// with one line naming the file and the field or tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "backend/gemm.h"
#include "cli_util.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_gpt2.h"
#include "core/bf16.h"
#include "core/fp16.h"
#include "io/safetensors.h"
#include "model/pooling.h"
#include "temp_dir.h"
#include "ascii_tokenizer.h"
#include "tokenizer/tokenizer_io.h"
#include "test_util.h"

namespace lmforge::test {
namespace {

const std::string kFixtures = std::string(LMFORGE_FIXTURES_DIR) + "/hf";

// lmforge's logits for the fixture's ids, for the real vocabulary columns: (B, T, V).
std::vector<float> logits_of(Gpt2& model, const std::vector<int32_t>& ids, int64_t B, int64_t T) {
    model.forward(Batch{.B = B, .T = T, .inputs = ids});
    const int64_t V = model.config().vocab_size, Vp = model.config().padded_vocab();
    std::vector<float> out(B * T * V);
    for (int64_t n = 0; n < B * T; n++) std::copy_n(model.logits() + n * Vp, V, out.begin() + n * V);
    return out;
}

class HfInterop : public TempDirTest {
protected:
    // `lmforge import` of DIR fails with status 2 and one line holding NEEDLE, writing nothing.
    void expect_import_error(const std::string& dir, const std::string& needle) {
        const Outcome o = run_lmforge("import --hf " + dir + " --output " + path("out"));
        EXPECT_EQ(o.status, 2) << o.err;
        EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
        EXPECT_FALSE(std::filesystem::exists(path("out")));
    }
    // A directory NAME with config.json J and the weights of FIXTURE (a directory of kFixtures).
    std::string with_fixture_weights(const std::string& fixture, const std::string& name, const nlohmann::json& j) {
        write(name + "/config.json", j.dump());
        std::filesystem::copy_file(kFixtures + "/" + fixture + "/model.safetensors", path(name + "/model.safetensors"));
        return path(name);
    }
    SafetensorsReader expected_{kFixtures + "/gpt2-expected.safetensors"};
    std::vector<int32_t> ids_ = expected_.read_i32("ids");
    std::unique_ptr<backend::Gemm> gemm_ = backend::make_gemm(backend::GemmKind::Onednn);
};

TEST_F(HfInterop, ImportedWeightsGiveTransformersLogits) {
    for (const auto& [dir, key] : {std::pair{"gpt2-f32", "logits_f32"}, std::pair{"gpt2-bf16", "logits_bf16"}}) {
        const Gpt2Config cfg = read_hf_gpt2_config(kFixtures + "/" + dir);
        EXPECT_EQ(cfg.n_layer, 2);
        EXPECT_EQ(cfg.vocab_size, 101);
        EXPECT_EQ(cfg.block_size, 24);
        Gpt2 model(cfg, *gemm_);
        load_hf_gpt2_weights(model, kFixtures + "/" + dir);
        const auto got = logits_of(model, ids_, 2, 13);
        const auto want = expected_.read_f32(key);
        EXPECT_TRUE(close(got, want, 0.0, 1e-4)) << dir;  // the issue's bound: 1e-4, absolute
    }
}

TEST_F(HfInterop, ExportWritesTransformersTensorsAndConfig) {
    const std::string src = kFixtures + "/gpt2-f32";
    const Gpt2Config cfg = read_hf_gpt2_config(src);
    Gpt2 model(cfg, *gemm_);
    load_hf_gpt2_weights(model, src);
    save_hf_gpt2(model, path("export"));
    const SafetensorsReader original(src + "/model.safetensors"), exported(path("export") + "/model.safetensors");
    EXPECT_EQ(exported.names(), original.names());
    for (const std::string& name : original.names()) {
        EXPECT_EQ(exported.info(name).shape, original.info(name).shape) << name;
        EXPECT_EQ(exported.read_f32(name), original.read_f32(name)) << name;  // bit for bit
    }
    EXPECT_EQ(exported.metadata().at("format"), "pt");
    // The exported config reads back as the same model, and says what transformers needs.
    const Gpt2Config back = read_hf_gpt2_config(path("export"));
    EXPECT_EQ(back.n_layer, cfg.n_layer);
    EXPECT_EQ(back.n_embd, cfg.n_embd);
    EXPECT_EQ(back.block_size, cfg.block_size);
    std::ifstream in(path("export") + "/config.json");
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["architectures"][0], "GPT2LMHeadModel");
    EXPECT_EQ(j["activation_function"], "gelu_new");
}

TEST_F(HfInterop, CommandsRoundTripThroughACheckpoint) {
    const Outcome imported = run_lmforge("import --hf " + kFixtures + "/gpt2-f32 --output " + path("ckpt"));
    ASSERT_EQ(imported.status, 0) << imported.err;
    EXPECT_NE(imported.out.find("2 layers"), std::string::npos) << imported.out;
    // The checkpoint is an ordinary one: its weights give transformers' logits.
    Gpt2 model(read_model_config(path("ckpt") + "/model.safetensors"), *gemm_);
    load_model_weights(model, path("ckpt") + "/model.safetensors");
    EXPECT_TRUE(close(logits_of(model, ids_, 2, 13), expected_.read_f32("logits_f32"), 0.0, 1e-4));
    const Outcome exported = run_lmforge("export --checkpoint " + path("ckpt") + " --hf " + path("hf"));
    ASSERT_EQ(exported.status, 0) << exported.err;
    const SafetensorsReader original(kFixtures + "/gpt2-f32/model.safetensors"),
        again(path("hf") + "/model.safetensors");
    for (const std::string& name : original.names()) EXPECT_EQ(again.read_f32(name), original.read_f32(name)) << name;
}

// BERT and DistilBERT through the commands: a masked-LM directory imports, exports as its
// class, imports back to the same tensors, and `lmforge logits` reads it.
TEST_F(HfInterop, EncodersRoundTripThroughTheCommands) {
    for (const auto& [fixture, hf_class] : {std::pair<std::string, std::string>{"bert-mlm", "(BertForMaskedLM)"},
                                            {"distilbert-mlm", "(DistilBertForMaskedLM)"}}) {
        const std::string ckpt = path(fixture + "-ckpt"), hf = path(fixture + "-hf"), back = path(fixture + "-back");
        Outcome o = run_lmforge("import --hf " + kFixtures + "/" + fixture + " --output " + ckpt);
        ASSERT_EQ(o.status, 0) << o.err;
        o = run_lmforge("export --checkpoint " + ckpt + " --hf " + hf);
        ASSERT_EQ(o.status, 0) << o.err;
        EXPECT_NE(o.out.find(hf_class), std::string::npos) << o.out;
        o = run_lmforge("import --hf " + hf + " --output " + back);
        ASSERT_EQ(o.status, 0) << o.err;
        const SafetensorsReader a(ckpt + "/model.safetensors"), b(back + "/model.safetensors");
        ASSERT_EQ(a.names(), b.names()) << fixture;
        for (const std::string& name : a.names()) EXPECT_EQ(a.read_f32(name), b.read_f32(name)) << fixture << " " << name;
        o = run_lmforge("logits --checkpoint " + back + " --ids \"3 4 5\"");
        ASSERT_EQ(o.status, 0) << o.err;
        EXPECT_NE(o.out.find("most likely"), std::string::npos) << o.out;
    }
}

// export --dtype f16 and bf16 round every weight to nearest even and say so in config.json;
// import reads them back (widened exactly), and so does a checkpoint's loader (model.init_from):
// an lmforge checkpoint whose weights are stored in F16.
TEST_F(HfInterop, HalfPrecisionWeightsGoOutAndComeBack) {
    ASSERT_EQ(run_lmforge("import --hf " + kFixtures + "/gpt2-f32 --output " + path("ckpt")).status, 0);
    const SafetensorsReader ckpt(path("ckpt/model.safetensors"));
    for (const auto& [flag, dtype, torch_name] : {std::tuple{"f16", Dtype::F16, "float16"},
                                                  std::tuple{"bf16", Dtype::BF16, "bfloat16"}}) {
        const std::string hf = path(std::string("hf-") + flag), back = path(std::string("back-") + flag);
        const Outcome exported = run_lmforge("export --checkpoint " + path("ckpt") + " --hf " + hf + " --dtype " + flag);
        ASSERT_EQ(exported.status, 0) << exported.err;
        EXPECT_EQ(nlohmann::json::parse(test::slurp(hf + "/config.json"))["torch_dtype"], torch_name);
        const SafetensorsReader half(hf + "/model.safetensors");
        ASSERT_EQ(run_lmforge("import --hf " + hf + " --output " + back).status, 0);
        const SafetensorsReader imported(back + "/model.safetensors");
        for (const std::string& name : ckpt.names()) {
            const std::string hf_name = "transformer." + name;
            ASSERT_EQ(half.info(hf_name).dtype, dtype) << hf_name;
            std::vector<float> want = ckpt.read_f32(name);
            for (float& x : want) x = dtype == Dtype::F16 ? from_f16(to_f16(x)) : from_bf16(to_bf16(x));
            std::vector<float> got(want.size());
            half.read_float(hf_name, got);
            EXPECT_EQ(got, want) << flag << " " << name;
            EXPECT_EQ(imported.read_f32(name), want) << flag << " " << name;
        }
    }
    // A checkpoint stored in F16 (its metadata kept) loads, widened: what model.init_from reads.
    SafetensorsWriter f16;
    std::vector<std::vector<uint16_t>> keep;
    for (const std::string& name : ckpt.names()) {
        keep.emplace_back();
        for (const float x : ckpt.read_f32(name)) keep.back().push_back(to_f16(x));
        f16.add(name, Dtype::F16, ckpt.info(name).shape, keep.back().data());
    }
    for (const auto& [key, value] : ckpt.metadata()) f16.add_metadata(key, value);
    f16.write(path("f16.safetensors"));
    Gpt2 model(read_model_config(path("f16.safetensors")), *gemm_);
    load_model_weights(model, path("f16.safetensors"));
    const ParamSpec& wte = model.layout().find("wte.weight");
    EXPECT_EQ(model.params()[wte.offset + 5], from_f16(to_f16(ckpt.read_f32("wte.weight")[5])));
}

TEST_F(HfInterop, ImportReadsTheEmbeddingUnderTheHeadsNameAndSkipsTensorsOfOtherDtypes) {
    // A writer that drops one of two shared tensors may keep only lm_head.weight; an older
    // file keeps a BOOL causal mask per layer. Imported into "ckpt/", the weights are the
    // fixture's own.
    const SafetensorsReader original(kFixtures + "/gpt2-f32/model.safetensors");
    SafetensorsWriter w;
    for (const std::string& name : original.names()) {
        const TensorInfo& t = original.info(name);
        w.add(name == "transformer.wte.weight" ? "lm_head.weight" : name, t.dtype, t.shape, original.raw(name).data());
    }
    const std::vector<uint8_t> mask(16 * 16, 1);
    w.add("transformer.h.0.attn.bias", Dtype::BOOL, {1, 1, 16, 16}, mask.data());
    write("head-only/config.json", test::slurp(kFixtures + "/gpt2-f32/config.json"));
    w.write(path("head-only/model.safetensors"));
    const Outcome o = run_lmforge("import --hf " + path("head-only") + " --output " + path("ckpt") + "/");
    ASSERT_EQ(o.status, 0) << o.err;
    const SafetensorsReader imported(path("ckpt/model.safetensors"));
    EXPECT_EQ(imported.read_f32("wte.weight"), original.read_f32("transformer.wte.weight"));
    EXPECT_EQ(imported.read_f32("h.1.mlp.c_fc.weight"), original.read_f32("transformer.h.1.mlp.c_fc.weight"));
    // Exporting over the directory that holds the checkpoint would remove it: refused.
    const Outcome over = run_lmforge("export --checkpoint " + path("ckpt") + " --hf " + path("ckpt") + "/..");
    EXPECT_EQ(over.status, 2) << over.err;
    EXPECT_NE(over.err.find("holds the input " + path("ckpt")), std::string::npos) << over.err;
    EXPECT_TRUE(std::filesystem::exists(path("ckpt/model.safetensors")));
    // A directory that exists is replaced only with --overwrite (it held a user's files and
    // was swapped away); the working directory never.
    write("mine/notes.txt", "precious");
    const Outcome existing = run_lmforge("export --checkpoint " + path("ckpt") + " --hf " + path("mine"));
    EXPECT_EQ(existing.status, 2) << existing.err;
    EXPECT_NE(existing.err.find("--hf " + path("mine") + ": already exists"), std::string::npos) << existing.err;
    EXPECT_TRUE(std::filesystem::exists(path("mine/notes.txt")));
    const Outcome here = run_lmforge("import --overwrite --hf " + path("head-only") + " --output .",
                                     "cd " + path("mine") + " && ");
    EXPECT_EQ(here.status, 2) << here.err;
    EXPECT_NE(here.err.find("--output . holds the working directory"), std::string::npos) << here.err;
    EXPECT_TRUE(std::filesystem::exists(path("mine/notes.txt")));
    EXPECT_EQ(run_lmforge("export --overwrite --checkpoint " + path("ckpt") + " --hf " + path("mine")).status, 0);
}

TEST_F(HfInterop, ExportTakesTheEndOfTextIdFromTheRunsTokenizer) {
    // A char tokenizer of 95 characters and <|endoftext|> = 95, for the vocabulary-101 model.
    auto tok = nlohmann::json::parse(test::ascii_tokenizer_json());
    tok["special_tokens"] = {{"<|endoftext|>", 95}};
    write("tok/tokenizer.json", tok.dump());
    const auto tokenizer = load_tokenizer(path("tok"));
    ASSERT_EQ(tokenizer->eot_id(), 95);
    const std::string src = kFixtures + "/gpt2-f32";
    Gpt2 model(read_hf_gpt2_config(src), *gemm_);
    load_hf_gpt2_weights(model, src);
    const auto config_of = [&](const std::string& dir) {
        std::ifstream in(path(dir) + "/config.json");
        return nlohmann::json::parse(in);
    };
    save_hf_gpt2(model, path("with-tok"), tokenizer.get());
    EXPECT_EQ(config_of("with-tok")["eos_token_id"], 95);
    EXPECT_EQ(config_of("with-tok")["bos_token_id"], 95);
    save_hf_gpt2(model, path("without"));  // GPT-2's 50256 lies outside this vocabulary
    EXPECT_TRUE(config_of("without")["eos_token_id"].is_null());
}

// GPT2ForSequenceClassification: the head on each sequence's last non-padding token gives
// transformers' logits, loss and gradients; export writes its tensors back.
TEST_F(HfInterop, SequenceClassificationMatchesTransformers) {
    const std::string src = kFixtures + "/gpt2-cls";
    const Gpt2Config cfg = read_hf_gpt2_config(src);
    ASSERT_EQ(cfg.num_labels, 3);
    Gpt2 model(cfg, *gemm_);
    load_hf_gpt2_weights(model, src);
    const auto ids = expected_.read_i32("cls_ids");
    const auto labels = expected_.read_i32("cls_labels");
    const int64_t B = 3, T = 13;
    auto lengths = last_non_pad_positions(ids.data(), B, T, 0);
    EXPECT_EQ(lengths, (std::vector<int32_t>{8, 12, 3}));
    for (int32_t& n : lengths) n += 1;
    const Batch batch{.B = B, .T = T, .inputs = ids, .lengths = lengths, .labels = labels};
    const double loss = model.forward_backward(batch, 1.0f / B, false).mean();  // the mean over sequences
    EXPECT_NEAR(loss, expected_.read_f32("cls_loss")[0], 1e-5 * loss);
    const auto want_logits = expected_.read_f32("cls_logits");
    EXPECT_TRUE(close(std::span<const float>(model.class_logits(), B * 3), std::span<const float>(want_logits), 0.0,
                      1e-4));
    for (const std::string name : {"score.weight", "transformer.wte.weight", "transformer.h.0.attn.c_attn.weight",
                                   "transformer.ln_f.weight"}) {
        const std::string ours = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
        const ParamSpec& s = model.layout().find(ours);
        const auto want = expected_.read_f32("grad/" + name);
        const double scale = max_abs(std::span<const float>(want));
        const std::span<const float> got = model.grads().subspan(s.offset, s.numel);
        EXPECT_TRUE(close(got, std::span<const float>(want), 1e-4, 1e-4 * scale)) << name;
    }
    save_hf_gpt2(model, path("export"));
    const SafetensorsReader original(src + "/model.safetensors"), exported(path("export") + "/model.safetensors");
    EXPECT_EQ(exported.names(), original.names());
    for (const std::string& name : original.names()) EXPECT_EQ(exported.read_f32(name), original.read_f32(name)) << name;
}

// A classifier's class names survive import and export (id2label came back as LABEL_i), and
// a multi-label one is refused as BERT's is (it would train with softmax cross-entropy).
TEST_F(HfInterop, ClassNamesSurviveImportAndExport) {
    const std::string src = kFixtures + "/gpt2-cls";
    auto config = nlohmann::json::parse(test::slurp(src + "/config.json"));
    config["id2label"] = {{"0", "ham"}, {"1", "spam"}, {"2", "eggs"}};
    config["label2id"] = {{"ham", 0}, {"spam", 1}, {"eggs", 2}};
    write("named/config.json", config.dump());
    std::filesystem::copy_file(src + "/model.safetensors", path("named/model.safetensors"));
    ASSERT_EQ(run_lmforge("import --hf " + path("named") + " --output " + path("ckpt")).status, 0);
    const Outcome e = run_lmforge("export --checkpoint " + path("ckpt") + " --hf " + path("back"));
    ASSERT_EQ(e.status, 0) << e.err;
    const auto back = nlohmann::json::parse(test::slurp(path("back/config.json")));
    EXPECT_EQ(back["id2label"], config["id2label"]);
    EXPECT_EQ(back["label2id"], config["label2id"]);
    config["problem_type"] = "multi_label_classification";
    write("multi/config.json", config.dump());
    std::filesystem::copy_file(src + "/model.safetensors", path("multi/model.safetensors"));
    const Outcome multi = run_lmforge("import --hf " + path("multi") + " --output " + path("multi-ckpt"));
    EXPECT_EQ(multi.status, 2) << multi.err;
    EXPECT_NE(multi.err.find("problem_type = \"multi_label_classification\" is not supported"), std::string::npos)
        << multi.err;
}

// One line, exit 2, naming the file and the field or tensor at fault.
TEST_F(HfInterop, BadDirectoriesFailWithOneLine) {
    const auto expect_error = [&](const std::string& dir, const std::string& needle) {
        expect_import_error(dir, needle);
    };
    expect_error(path("nothing"), "config.json: cannot open");

    std::ifstream in(kFixtures + "/gpt2-f32/config.json");
    const auto config = nlohmann::json::parse(in);
    const auto with_config = [&](const std::string& name, nlohmann::json j, bool with_weights) {
        write(name + "/config.json", j.dump());
        if (with_weights) {
            std::filesystem::copy_file(kFixtures + "/gpt2-f32/model.safetensors", path(name + "/model.safetensors"));
        }
        return path(name);
    };
    auto mistral = config;
    mistral["model_type"] = "mistral";
    expect_error(with_config("mistral", mistral, true), "model_type = \"mistral\" is not supported");
    auto relu = config;
    relu["activation_function"] = "relu";
    expect_error(with_config("relu", relu, true), "activation_function = \"relu\"");
    auto wider = config;
    wider["n_embd"] = 64;
    expect_error(with_config("wider", wider, true),
                 "tensor 'transformer.wte.weight' has shape [101, 32], config.json implies [101, 64]");
    auto deeper = config;
    deeper["n_layer"] = 3;
    expect_error(with_config("deeper", deeper, true), "no tensor 'transformer.h.2.ln_1.weight'");
    expect_error(with_config("no-weights", config, false), "model.safetensors");
    // Shards (model.safetensors.index.json): an empty map, a tensor in a file that lacks it.
    const std::string sharded = with_config("sharded", config, false);
    write("sharded/model.safetensors.index.json", R"({"weight_map": {}})");
    expect_error(sharded, "model.safetensors.index.json: no weight_map of tensors to files");
    std::filesystem::copy_file(kFixtures + "/gpt2-f32/model.safetensors", path("sharded/part.safetensors"));
    write("sharded/model.safetensors.index.json", R"({"weight_map": {"transformer.wpe.weight": "part.safetensors",
                                                                     "transformer.h.9.ln_1.weight": "part.safetensors"}})");
    expect_error(sharded, "names part.safetensors for tensor 'transformer.h.9.ln_1.weight', which that file does not hold");
    // A field of another JSON type: the file's fault, not an internal error.
    auto eps_text = config;
    eps_text["layer_norm_epsilon"] = "1e-5";
    expect_error(with_config("eps-text", eps_text, true), "config.json: layer_norm_epsilon = \"1e-5\" must be a number, not string");
    auto numeric_type = config;
    numeric_type["model_type"] = 2;
    expect_error(with_config("numeric-type", numeric_type, true), "config.json: model_type = 2 must be a string, not number");
    auto tie_text = config;
    tie_text["tie_word_embeddings"] = "no";
    expect_error(with_config("tie-text", tie_text, true),
                 "config.json: tie_word_embeddings = \"no\" must be a boolean, not string");
    auto inner_float = config;
    inner_float["n_inner"] = 128.0;
    expect_error(with_config("inner-float", inner_float, true), "config.json: n_inner = 128.0 must be an integer, not number");
    auto numeric_arch = config;
    numeric_arch["architectures"] = {7};
    expect_error(with_config("numeric-arch", numeric_arch, true), "architectures = [7] is not supported");

    // BERT: another architecture, another activation, a deeper config than its tensors.
    std::ifstream bert_in(kFixtures + "/bert-mlm/config.json");
    const auto bert = nlohmann::json::parse(bert_in);
    const auto with_bert_config = [&](const std::string& name, const nlohmann::json& j) {
        return with_fixture_weights("bert-mlm", name, j);
    };
    auto pretraining = bert;
    pretraining["architectures"] = {"BertForPreTraining"};
    expect_error(with_bert_config("pretraining", pretraining), "architectures = BertForPreTraining is not supported");
    auto tanh_gelu = bert;
    tanh_gelu["hidden_act"] = "gelu_new";
    expect_error(with_bert_config("gelu-new", tanh_gelu), "hidden_act = \"gelu_new\" is not supported");
    auto act_list = bert;
    act_list["hidden_act"] = {"gelu"};
    expect_error(with_bert_config("act-list", act_list), "config.json: hidden_act = [\"gelu\"] must be a string, not array");
    auto deeper_bert = bert;
    deeper_bert["num_hidden_layers"] = 3;
    expect_error(with_bert_config("deeper-bert", deeper_bert),
                 "no tensor 'bert.encoder.layer.2.attention.self.query.weight'");
}

// DistilBERT: what lmforge does not compute is refused by name; tensors are checked as BERT's.
TEST_F(HfInterop, BadDistilBertDirectoriesFailWithOneLine) {
    std::ifstream in(kFixtures + "/distilbert-mlm/config.json");
    const auto config = nlohmann::json::parse(in);
    const auto with_change = [&](const std::string& name, const char* key, const nlohmann::json& value) {
        auto j = config;
        j[key] = value;
        return with_fixture_weights("distilbert-mlm", name, j);
    };
    expect_import_error(with_change("sinusoidal", "sinusoidal_pos_embds", true),
                        "sinusoidal_pos_embds = true is not supported");
    expect_import_error(with_change("relu", "activation", "relu"), "activation = \"relu\" is not supported");
    expect_import_error(with_change("qa", "architectures", {"DistilBertForQuestionAnswering"}),
                        "architectures = DistilBertForQuestionAnswering is not supported");
    expect_import_error(with_change("deeper", "n_layers", 3),
                        "no tensor 'distilbert.transformer.layer.2.attention.q_lin.weight'");
    expect_import_error(with_change("odd-width", "dim", 33), "hidden = 33 is not divisible by n_head = 2");
}

}  // namespace
}  // namespace lmforge::test
