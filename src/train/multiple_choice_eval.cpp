#include "train/multiple_choice_eval.h"

#include <fmt/format.h>

#include <type_traits>

#include "core/error.h"
#include "model/causal_lm.h"

namespace lmforge {

namespace {

// The trainer's model is the lm task's decoder (the configuration refuses anything else).
template <class M>
auto& as_causal_lm(M& model) {
    using G = std::conditional_t<std::is_const_v<M>, const CausalLm, CausalLm>;
    auto* lm = dynamic_cast<G*>(&model);
    if (lm == nullptr) throw Error("eval.multiple_choice: the run's model is not a causal language model");
    return *lm;
}

}  // namespace

MultipleChoiceEval::MultipleChoiceEval(const TrainConfig& cfg, const Tokenizer* tokenizer, const Model& model)
    : path_(cfg.eval.multiple_choice),
      every_(cfg.eval.multiple_choice_every > 0 ? cfg.eval.multiple_choice_every : cfg.eval.every) {
    if (tokenizer == nullptr) {
        throw InputError(fmt::format("eval.multiple_choice = {}: the run has no tokenizer to read its items with",
                                     path_),
                         "set data.tokenizer, or prepare the data with a tokenizer saved beside it");
    }
    try {
        items_ = load_multiple_choice(path_, *tokenizer);
        check_items_fit(items_, as_causal_lm(model).context_length(), path_);
    } catch (const InputError& e) {  // the key too: the file's errors name only the file
        throw InputError(fmt::format("eval.multiple_choice: {}", e.what()), e.hint());
    }
}

ChoiceResult MultipleChoiceEval::evaluate(Model& model, Communicator& comm) const {
    return evaluate_multiple_choice(as_causal_lm(model), items_, comm);
}

std::vector<std::pair<std::string, double>> MultipleChoiceEval::metrics(const ChoiceResult& r) {
    return {{"mc_accuracy", r.accuracy()},
            {"mc_accuracy_norm", r.accuracy_norm()},
            {"mc_correct", static_cast<double>(r.correct)},
            {"mc_correct_norm", static_cast<double>(r.correct_norm)},
            {"mc_items", static_cast<double>(r.items)}};
}

std::string MultipleChoiceEval::describe(const ChoiceResult& r) {
    return fmt::format("multiple choice accuracy {:.4f} ({}/{}), length-normalised {:.4f} ({}/{})", r.accuracy(),
                       r.correct, r.items, r.accuracy_norm(), r.correct_norm, r.items);
}

}  // namespace lmforge
