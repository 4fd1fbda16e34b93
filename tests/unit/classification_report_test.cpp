// The classification report's figures against a confusion matrix worked by hand.
#include "train/classification_report.h"

#include <gtest/gtest.h>

#include "train/baselines.h"
#include "train/classify_task.h"
#include "train/task.h"

namespace lmforge {
namespace {

TEST(ClassificationReport, MatchesHandComputedFigures) {
    // truth -> predicted: a->a x3, a->b, b->b x2, b->c x2, c->c, c->a.
    ConfusionMatrix m(3);
    for (int i = 0; i < 3; i++) m.add(0, 0);
    m.add(0, 1);
    for (int i = 0; i < 2; i++) m.add(1, 1);
    for (int i = 0; i < 2; i++) m.add(1, 2);
    m.add(2, 2);
    m.add(2, 0);
    const ClassificationReport r = classification_report(m);
    EXPECT_EQ(r.total, 10);
    EXPECT_DOUBLE_EQ(r.accuracy, 0.6);
    ASSERT_EQ(r.per_class.size(), 3u);
    EXPECT_DOUBLE_EQ(r.per_class[0].precision, 0.75);
    EXPECT_DOUBLE_EQ(r.per_class[1].precision, 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(r.per_class[2].precision, 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(r.per_class[0].recall, 0.75);
    EXPECT_DOUBLE_EQ(r.per_class[1].recall, 0.5);
    EXPECT_DOUBLE_EQ(r.per_class[2].recall, 0.5);
    EXPECT_NEAR(r.per_class[1].f1, 4.0 / 7.0, 1e-12);
    EXPECT_NEAR(r.per_class[2].f1, 0.4, 1e-12);
    EXPECT_EQ(r.per_class[0].support, 4);
    EXPECT_EQ(r.per_class[2].support, 2);
    EXPECT_NEAR(r.macro.precision, 7.0 / 12.0, 1e-12);
    EXPECT_NEAR(r.macro.recall, 7.0 / 12.0, 1e-12);
    EXPECT_NEAR(r.macro.f1, (0.75 + 4.0 / 7.0 + 0.4) / 3.0, 1e-12);
    EXPECT_NEAR(r.weighted.precision, 0.4 * 0.75 + 0.4 * 2.0 / 3.0 + 0.2 / 3.0, 1e-12);
    EXPECT_NEAR(r.weighted.recall, 0.6, 1e-12);
    EXPECT_NEAR(r.weighted.f1, 0.4 * 0.75 + 0.4 * 4.0 / 7.0 + 0.2 * 0.4, 1e-12);

    const std::vector<std::string> names = {"a", "b", "c"};
    const std::string table = format_report(r, m, names);
    EXPECT_NE(table.find("macro avg"), std::string::npos) << table;
    EXPECT_NE(table.find("0.6000"), std::string::npos) << table;
    const auto j = report_json(r, m, names);
    EXPECT_EQ(j["confusion_matrix"][1][2], 2);
    EXPECT_DOUBLE_EQ(j["classes"]["b"]["recall"].get<double>(), 0.5);
}

// A class that is never predicted has precision 0 (and F1 0), not a division by zero.
TEST(ClassificationReport, ClassNeverPredictedScoresZero) {
    ConfusionMatrix m(2);
    m.add(0, 0);
    m.add(1, 0);
    m.add(1, 0);
    const ClassificationReport r = classification_report(m);
    EXPECT_DOUBLE_EQ(r.per_class[1].precision, 0.0);
    EXPECT_DOUBLE_EQ(r.per_class[1].recall, 0.0);
    EXPECT_DOUBLE_EQ(r.per_class[1].f1, 0.0);
    EXPECT_DOUBLE_EQ(r.per_class[0].precision, 1.0 / 3.0);
    EXPECT_NEAR(r.accuracy, 1.0 / 3.0, 1e-12);
}

// As scikit-learn's: a class absent from the split and never predicted stays out of the macro
// average (a perfect classifier scores 1, not 2/3), one that is predicted but absent stays in.
TEST(ClassificationReport, MacroAverageLeavesOutClassesThatNeverOccur) {
    ConfusionMatrix perfect(3);
    perfect.add(0, 0);
    perfect.add(1, 1);
    const ClassificationReport r = classification_report(perfect);
    EXPECT_DOUBLE_EQ(r.macro.f1, 1.0);
    EXPECT_DOUBLE_EQ(r.macro.precision, 1.0);
    ConfusionMatrix wrong(3);
    wrong.add(0, 0);
    wrong.add(1, 2);
    const ClassificationReport w = classification_report(wrong);
    EXPECT_DOUBLE_EQ(w.macro.recall, 1.0 / 3.0);  // classes 0, 1 and the predicted 2
    EXPECT_DOUBLE_EQ(w.macro.f1, 1.0 / 3.0);
}

// Whether an evaluation of `metric` (value, loss) beats the best so far (value, loss):
// higher accuracy or F1 wins, a tie goes to the lower validation loss (the first epoch stayed
// best while F1 was stuck and the loss kept falling); loss: lower wins.
bool better(const std::string& metric, double value, double loss, double best, double best_loss) {
    const auto rank = [&](double v, double l) {
        return classify_rank_metric(metric, l, metric == "accuracy" ? v : 0, metric == "macro_f1" ? v : 0);
    };
    const Evaluation e{.loss = loss, .metrics = {}, .rank_metric = rank(value, loss)};
    return e.better_than(rank(best, best_loss), best_loss);
}

TEST(BestEvaluation, ATieOnTheMetricGoesToTheLowerLoss) {
    EXPECT_TRUE(better("macro_f1", 0.8, 0.5, 0.7, 0.1));
    EXPECT_TRUE(better("macro_f1", 0.8, 0.2, 0.8, 0.3));
    EXPECT_FALSE(better("macro_f1", 0.8, 0.3, 0.8, 0.3));
    EXPECT_FALSE(better("accuracy", 0.7, 0.1, 0.8, 0.9));
    EXPECT_TRUE(better("loss", 0.2, 0.2, 0.3, 0.3));
    EXPECT_FALSE(better("loss", 0.3, 0.3, 0.3, 0.3));
}

}  // namespace
}  // namespace lmforge

namespace lmforge {
namespace {

// Texts of one word said three times: class 1's is token 7, class 0's token 2.
LabelledSplit one_token_split(const std::vector<int32_t>& labels) {
    LabelledSplit s;
    s.max_len = 3;
    for (int32_t label : labels) {
        const int32_t word = label == 1 ? 7 : 2;
        s.tokens.insert(s.tokens.end(), {word, word, word});
        s.lengths.push_back(3);
        s.labels.push_back(label);
        s.source.push_back(static_cast<int64_t>(s.source.size()));
    }
    return s;
}

TEST(Baselines, MajorityPredictsTheCommonestTrainingLabel) {
    const LabelledSplit train = one_token_split({0, 0, 0, 1}), test = one_token_split({1, 0, 1});
    const ConfusionMatrix m = majority_baseline(train, test, 2);
    EXPECT_EQ(m.at(0, 0), 1);
    EXPECT_EQ(m.at(1, 0), 2);
    EXPECT_NEAR(classification_report(m).accuracy, 1.0 / 3.0, 1e-12);
}

TEST(Baselines, BagOfWordsLearnsAWordThatGivesTheClassAway) {
    const LabelledSplit train = one_token_split({0, 0, 0, 1, 1}), test = one_token_split({1, 0, 1, 0});
    const ConfusionMatrix m = bag_of_words_baseline(train, test, 2, 10);
    EXPECT_DOUBLE_EQ(classification_report(m).accuracy, 1.0);
}

}  // namespace
}  // namespace lmforge
