// train/config: defaults, types, unknown keys with suggestions, --set, validation, the
// resolved dump, and docs/config.md listing every key.
#include "train/config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "test_util.h"

namespace lmforge {
namespace {

using test::input_error_of;

TrainConfig parse(const std::string& text, const std::vector<std::string>& sets = {}) {
    return parse_config(text, "c.toml", sets);
}

TEST(Config, DefaultsAndValues) {
    const TrainConfig c = parse("[data]\ndir = \"d\"\n[optim]\nlr = 1\nschedule = \"linear\"\n[log]\nplots = false\n");
    EXPECT_EQ(c.data.dir, "d");
    EXPECT_EQ(c.optim.lr, 1.0);  // an integer is a fine float
    EXPECT_EQ(c.optim.schedule, "linear");
    EXPECT_FALSE(c.log.plots);
    EXPECT_EQ(c.train.batch_size, 8);  // defaults
    EXPECT_EQ(c.optim.warmup_steps, 100);
}

TEST(Config, UnknownKeysSuggestTheNearest) {
    const std::string e = input_error_of([] { parse("[data]\ndir = \"d\"\n[optim]\nlrr = 0.1\n"); });
    EXPECT_NE(e.find("c.toml:4: unknown key \"optim.lrr\""), std::string::npos) << e;
    try {
        parse("[train]\nbatchsize = 4\n[data]\ndir = \"d\"\n");
        FAIL();
    } catch (const InputError& err) {
        EXPECT_NE(err.hint().find("\"train.batch_size\""), std::string::npos) << err.hint();
    }
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n[optimizer]\nlr = 1\n"); }).find("optimizer"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n", {"optim.learning_rate=1"}); })
                  .find("--set: unknown key \"optim.learning_rate\""),
              std::string::npos);
}

TEST(Config, WrongTypesNameKeyLineAndValue) {
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n[optim]\nlr = \"fast\"\n"); })
                  .find("c.toml:4: optim.lr = \"fast\" must be a number"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n[train]\nbatch_size = 8.5\n"); })
                  .find("train.batch_size = 8.5 must be an integer"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = 3\n"); }).find("data.dir = 3 must be a string"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\nshuffle = 1\n"); }).find("must be a boolean"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data\ndir = 3\n"); }).find("c.toml:1:"), std::string::npos);
}

TEST(Config, SetOverridesAndIsChecked) {
    const TrainConfig c = parse("[data]\ndir = \"d\"\n", {"optim.lr=3e-4", "train.max_steps=7", "data.shuffle=false",
                                                          "sample.prompt=Call me"});
    EXPECT_EQ(c.optim.lr, 3e-4);
    EXPECT_EQ(c.train.max_steps, 7);
    EXPECT_FALSE(c.data.shuffle);
    EXPECT_EQ(c.sample.prompt, "Call me");
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n", {"train.max_steps=many"}); })
                  .find("--set train.max_steps=many: expected an integer"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n", {"optim.lr"}); }).find("expected section.key=value"),
              std::string::npos);
}

TEST(Config, ValuesOutOfRangeNameTheKey) {
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n[train]\nbatch_size = 0\n"); })
                  .find("train.batch_size = 0 must be positive"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n[optim]\nschedule = \"step\"\n"); })
                  .find("optim.schedule = \"step\" must be cosine, linear or constant"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[train]\nmax_steps = 3\n"); }).find("data.dir"), std::string::npos);
}

TEST(Config, FloatsThatSinglePrecisionCannotHoldAreRefused) {
    const auto error_of = [](const std::string& optim) {
        return input_error_of([&] { parse("[data]\ndir = \"d\"\n[optim]\n" + optim + "\n"); });
    };
    // 0.99999999 < 1 as a double, but 1.0f in AdamW: its bias correction would be 0.
    EXPECT_NE(error_of("beta2 = 0.99999999").find("optim.beta2 = 0.99999999 rounds to 1 in single precision"),
              std::string::npos);
    EXPECT_NE(error_of("beta1 = 0.999999999").find("optim.beta1"), std::string::npos);
    EXPECT_NE(error_of("eps = 1e-50").find("optim.eps = 1e-50 rounds to 0 in single precision"), std::string::npos);
    EXPECT_NE(error_of("eps = inf").find("optim.eps = inf must be a finite number in single precision"), std::string::npos);
    EXPECT_NE(error_of("lr = 1e300").find("optim.lr = 1e+300 must be a finite number in single precision"), std::string::npos);
    EXPECT_NE(error_of("grad_clip = nan").find("optim.grad_clip = nan must be a finite number in single precision"), std::string::npos);
    EXPECT_EQ(error_of("beta2 = 0.9999999"), "no error");
    // Out of range is said as such, before any rounding.
    EXPECT_NE(error_of("beta2 = 1.0").find("optim.beta2 = 1.0 must lie in [0, 1)"), std::string::npos);
    EXPECT_NE(error_of("eps = 0.0").find("optim.eps = 0.0 must be positive"), std::string::npos);
}

TEST(Config, ATimeBudgetIsForStepRunsWithWarmUpToMeasureIn) {
    const std::string base = "[data]\ndir = \"d\"\n";
    EXPECT_EQ(parse(base, {"train.time_budget=9.5"}).train.time_budget, 9.5);
    EXPECT_NE(input_error_of([&] { parse(base, {"train.time_budget=-1"}); }).find("must not be negative"),
              std::string::npos);
    EXPECT_NE(input_error_of([&] { parse(base, {"train.time_budget=5", "train.task=classify"}); }).find("train.epochs"),
              std::string::npos);
    const std::string e = input_error_of([&] { parse(base, {"train.time_budget=5", "optim.warmup_steps=9"}); });
    EXPECT_NE(e.find("optim.warmup_steps = 9 must be at least 10"), std::string::npos) << e;
    EXPECT_EQ(parse(base, {"train.time_budget=5", "optim.warmup_steps=10"}).optim.warmup_steps, 10);
}

// Multiple-choice items are scored by a GPT-2 language model's likelihoods: another task, or
// an encoder, is one line naming the key.
TEST(Config, MultipleChoiceIsForLanguageModelsOnly) {
    const std::string base = "[data]\ndir = \"d\"\n[eval]\nmultiple_choice = \"hs.jsonl\"\n";
    EXPECT_EQ(parse(base).eval.multiple_choice, "hs.jsonl");
    EXPECT_EQ(parse(base).eval.multiple_choice_every, 0);  // eval.every's cadence
    for (const char* task : {"classify", "mlm", "sft"}) {
        const std::string e = input_error_of([&] { parse(base, {std::string("train.task=") + task}); });
        EXPECT_NE(e.find(fmt::format("eval.multiple_choice = \"hs.jsonl\" is for train.task = \"lm\", not \"{}\"", task)),
                  std::string::npos)
            << e;
    }
    EXPECT_NE(input_error_of([&] { parse(base, {"model.preset=bert-tiny"}); })
                  .find("needs a GPT-2 model, not the encoder model.preset = \"bert-tiny\""),
              std::string::npos);
    EXPECT_NE(input_error_of([&] { parse(base, {"eval.multiple_choice_every=-1"}); })
                  .find("eval.multiple_choice_every = -1 must not be negative"),
              std::string::npos);
    // Without items, the cadence alone is no error for any task.
    const TrainConfig no_items = parse("[data]\ndir = \"d\"\n", {"train.task=mlm", "eval.multiple_choice_every=5"});
    EXPECT_EQ(no_items.eval.multiple_choice_every, 5);
}

TEST(Config, ResolvedDumpParsesBackToTheSame) {
    const TrainConfig c = parse("[data]\ndir = \"a \\\"b\\\"\\n\"\n[optim]\nlr = 2.5e-4\n[sample]\nprompt = \"x\\ty\"\n");
    const std::string dumped = config_to_toml(c);
    EXPECT_EQ(config_to_toml(parse(dumped)), dumped);
    EXPECT_EQ(parse(dumped).data.dir, "a \"b\"\n");
}

// A --set string that is not UTF-8 is refused: TOML cannot hold it, so the run's config.toml
// would not parse back (the file itself is checked by the TOML parser). (Found by
// fuzz/config_fuzz.cpp.)
TEST(Config, SetStringsThatAreNotUtf8AreRefused) {
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n", {"sample.prompt=caf\xe9"}); })
                  .find("--set sample.prompt=caf\\xe9: not UTF-8 (byte 3)"),
              std::string::npos);
    EXPECT_NE(input_error_of([] { parse("[data]\ndir = \"d\"\n", {"data.dir=\xc3"}); }).find("not UTF-8 (byte 0)"),
              std::string::npos);
    const TrainConfig c = parse("[data]\ndir = \"d\"\n", {"sample.prompt=caf\xc3\xa9 \xf0\x9f\x99\x82"});
    EXPECT_EQ(parse(config_to_toml(c)).sample.prompt, "caf\xc3\xa9 \xf0\x9f\x99\x82");
}

TEST(Config, ValuesAreTextAsATrackingServerKeepsThem) {
    const TrainConfig c = parse("[data]\ndir = \"d d\"\n[optim]\nlr = 0.0006\nwarmup_steps = 7\n[log]\nplots = false\n");
    const auto values = config_values(c);
    EXPECT_EQ(values.size(), config_keys().size());
    const auto value_of = [&](const std::string& key) {
        for (const auto& [k, v] : values) {
            if (k == key) return v;
        }
        return std::string("(none)");
    };
    EXPECT_EQ(value_of("data.dir"), "d d");  // a string as it is, not quoted
    EXPECT_EQ(value_of("optim.lr"), "0.0006");
    EXPECT_EQ(value_of("optim.warmup_steps"), "7");
    EXPECT_EQ(value_of("log.plots"), "false");
    EXPECT_EQ(value_of("optim.eps"), "1e-08");
    EXPECT_EQ(value_of("log.mlflow_uri"), "");
}

TEST(Config, MlflowUriMustBeAWebAddress) {
    EXPECT_EQ(parse("[data]\ndir = \"d\"\n[log]\nmlflow_uri = \"http://127.0.0.1:5000\"\n").log.mlflow_uri,
              "http://127.0.0.1:5000");
    EXPECT_EQ(parse("[data]\ndir = \"d\"\n", {"log.mlflow_uri=https://mlflow.example.org/"}).log.mlflow_uri,
              "https://mlflow.example.org/");
    for (const char* bad : {"mlruns", "file:///tmp/mlruns", "127.0.0.1:5000", "http://"}) {
        EXPECT_NE(input_error_of([&] { parse("[data]\ndir = \"d\"\n", {std::string("log.mlflow_uri=") + bad}); })
                      .find("log.mlflow_uri = \"" + std::string(bad) + "\" must be a tracking server's web address"),
                  std::string::npos)
            << bad;
    }
    EXPECT_NE(input_error_of([] {
                  parse("[data]\ndir = \"d\"\n", {"log.mlflow_uri=http://h:1", "log.mlflow_experiment="});
              }).find("log.mlflow_experiment"),
              std::string::npos);
}

TEST(Config, DocsListEveryKeyWithItsDefault) {
    std::ifstream in(std::string(LMFORGE_SOURCE_DIR) + "/docs/config.md");
    std::stringstream s;
    s << in.rdbuf();
    const std::string docs = s.str();
    for (const ConfigKey& k : config_keys()) {
        EXPECT_NE(docs.find("| `" + k.name + "` | " + k.type + " | `" + k.default_value + "` |"), std::string::npos)
            << k.name << ": regenerate the table with `lmforge config keys`";
    }
}

}  // namespace
}  // namespace lmforge
