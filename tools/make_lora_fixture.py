#!/usr/bin/env python3
"""Writes the LoRA fixtures (tests/fixtures/hf/lora-*, issue 29): what PyPI's peft computes for a
LoRA adapter on the Llama fixtures, so the C++ tests check lmforge's LoRA gradients and its merged
export against peft without Python, and adapter directories written by peft's own save_pretrained,
so lmforge checks that its exporter writes the same format.

Two cases, each a base model from tests/fixtures/hf (from_pretrained, float32, eager attention)
wrapped by peft.get_peft_model with lora_dropout 0, bias "none", use_rslora False (scaling =
lora_alpha / r, peft's LoraLayer.scaling["default"]), no DoRA:

  causal  llama-gqa/ (LlamaForCausalLM, 2 layers, hidden 32, 4 heads over 2 key/value heads,
          intermediate 56, vocabulary 101, untied), task_type CAUSAL_LM, r 4, lora_alpha 8
          (scaling 2), targets q_proj k_proj v_proj o_proj gate_proj up_proj down_proj:
          28 trainable tensors, lora_A (4, in) and lora_B (out, 4) for 14 Linear layers
  cls     llama-cls/ (LlamaForSequenceClassification, 3 labels, pad_token_id 0), task_type
          SEQ_CLS, r 2, lora_alpha 4 (scaling 2), targets q_proj v_proj: 8 LoRA tensors, and
          peft adds "classifier" and "score" to modules_to_save, so score.weight (3, 32) is
          trained as a full copy (ModulesToSaveWrapper; the base's own score stays frozen)

peft initialises lora_B to zero (the adapter a no-op); here every trainable tensor -- each
lora_A and lora_B, and the cls case's score copy -- is overwritten in named_parameters order with
N(0, 0.1^2) from the case's own generator (seed 500 causal, 600 cls), so the adapters and the
score change the logits and every gradient is non-zero.

  lora-expected.safetensors
    ids                 (2, 13) int32: llama-expected.safetensors' ids
    targets             (2, 13) int32: ids shifted left, -100 at the last position
    logits              (2, 13, 101) float32: the peft model on ids (no attention mask)
    loss                (1,) float32: mean cross-entropy over the 24 counted targets
                        (what transformers returns for labels=ids)
    grad/<name>         the gradient of loss for each trainable tensor
    param/<name>        its value (the same bytes as in lora-adapter/adapter_model.safetensors)
    merged_logits       (2, 13, 101) float32: logits of merge_and_unload()'s plain
                        LlamaForCausalLM (W + scaling * B @ A folded in): equal to logits up to
                        float32 rounding
    cls/ids             (3, 13) int32: llama-expected's llama-cls/cls_ids (0 pads at the ends)
    cls/labels          (3,) int32: llama-expected's llama-cls/cls_labels
    cls/logits          (3, 3) float32, cls/loss (1,) mean cross-entropy over the 3 rows,
    cls/grad/<name>, cls/param/<name>  as above, the score copy included
    cls/merged_logits   (3, 3) float32: merge_and_unload()'s LlamaForSequenceClassification,
                        whose score is the trained copy
  <name> is the name peft's get_peft_model_state_dict gives and adapter_model.safetensors holds:
  the parameter's name without the adapter name "default", e.g.
  base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight for the parameter
  ...q_proj.lora_A.default.weight, and base_model.model.score.weight for the modules_to_save
  copy base_model.model.score.modules_to_save.default.weight.
  The metadata entry `meta` is JSON: per case the base, r, alpha, scaling, targets, task_type,
  modules_to_save, the trainable names with their shapes; the keys; the peft, torch and
  transformers versions.

  lora-adapter/, lora-cls-adapter/   model.save_pretrained(dir): adapter_config.json and
    adapter_model.safetensors (float32). Two changes to what peft writes, both for identical
    bytes on every run: target_modules is written sorted (peft keeps it as a set and writes it in
    the set's order, which changes with PYTHONHASHSEED), and base_model_name_or_path is the
    project-relative "tests/fixtures/hf/llama-gqa" (-cls) rather than the absolute path it was
    loaded from. The model card README.md save_pretrained also writes is removed: loading
    does not read it.

    scripts/install-python-deps.sh     # tools/requirements-test.txt: torch 2.13.0, transformers 5.24.0, peft 0.21.2
    .venv/bin/python tools/make_lora_fixture.py
Deterministic (fixed generators, one thread; a second run writes the same bytes). After writing
it checks itself: PeftModel.from_pretrained(base, adapter dir) gives the expected logits within
1e-6 and holds the param/ tensors exactly; merged_logits are within 1e-5 of logits; the base
model run with W + (lora_alpha / r) * B @ A made by hand from param/ (and the score from param/),
without peft, gives logits within 1e-5, the loss and the grad/ tensors within 1e-5 relative; and an
adapter_config.json holding only the fields the loader needs (MINIMAL_CONFIG_KEYS: peft_type, r,
lora_alpha, target_modules) gives the same logits, while dropping any one of them changes the
logits or fails to load in at least one of the two cases -- it prints what each drop does, and
what task_type does to the classifier's score. `--out DIR` writes elsewhere (to compare two
runs); the base models are always read from tests/fixtures/hf.
"""
import argparse
import copy
import json
import os
import shutil
import tempfile
import warnings

import peft
import torch
import torch.nn.functional as F
import transformers
from peft import LoraConfig, PeftModel, TaskType, get_peft_model, get_peft_model_state_dict
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import LlamaForCausalLM, LlamaForSequenceClassification
from transformers.utils import logging as hf_logging

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "hf")
EXPECTED = "lora-expected.safetensors"
LLAMA_EXPECTED = "llama-expected.safetensors"
ADAPTER = "default"

CASES = {  # prefix of the keys: the case
    "": dict(name="causal", base="llama-gqa", cls=LlamaForCausalLM, adapter_dir="lora-adapter", seed=500,
             r=4, alpha=8, task_type=TaskType.CAUSAL_LM,
             targets=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    "cls/": dict(name="cls", base="llama-cls", cls=LlamaForSequenceClassification, adapter_dir="lora-cls-adapter",
                 seed=600, r=2, alpha=4, task_type=TaskType.SEQ_CLS, targets=["q_proj", "v_proj"]),
}
# The adapter_config.json fields PeftModel.from_pretrained(base, dir) needs to give the logits
# (verify() checks that they suffice and that each is needed in one case or the other): peft_type
# picks the config class (KeyError without it); r defaults to 8 (a shape mismatch); lora_alpha
# defaults to 8 (the causal case's own value: the cls case's scaling goes wrong); target_modules
# defaults to peft's list for the architecture (Llama: q_proj, v_proj, the cls case's own: the
# causal case loses five targets). task_type is not needed for the logits, but a classifier's
# adapter should have it (or modules_to_save ["score"]): without either peft writes the adapter's
# score over the base model's instead of wrapping it (verify() shows both).
MINIMAL_CONFIG_KEYS = ["peft_type", "r", "lora_alpha", "target_modules"]


def load_base(case):
    return case["cls"].from_pretrained(os.path.join(FIXTURES, case["base"]), dtype=torch.float32,
                                       attn_implementation="eager")


def saved_name(pname):
    """The name get_peft_model_state_dict and adapter_model.safetensors give the parameter PNAME."""
    if f".modules_to_save.{ADAPTER}." in pname:
        return pname.replace(f".modules_to_save.{ADAPTER}.", ".")
    assert f".{ADAPTER}." in pname, pname
    return pname.replace(f".{ADAPTER}.", ".")


def make_peft_model(case):
    base = load_base(case)
    config = LoraConfig(r=case["r"], lora_alpha=case["alpha"], lora_dropout=0.0, target_modules=case["targets"],
                        bias="none", task_type=case["task_type"])
    model = get_peft_model(base, config)
    g = torch.Generator().manual_seed(case["seed"])
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.requires_grad:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    return model


def trainable(model):
    """[(saved name, parameter)] in named_parameters order; checks the names against peft's own."""
    out = [(saved_name(n), p) for n, p in model.named_parameters() if p.requires_grad]
    state = get_peft_model_state_dict(model)
    assert [n for n, _ in out] == list(state), (list(state), [n for n, _ in out])
    assert all(torch.equal(state[n], p) for n, p in out)
    return out


def scalings(model):
    """Every LoRA layer's scaling["default"] (peft's factor on B @ A x)."""
    return {m.scaling[ADAPTER] for m in model.modules() if hasattr(m, "scaling") and isinstance(m.scaling, dict)}


def run_case(prefix, case, inputs, out):
    model = make_peft_model(case)
    scaling = scalings(model)
    assert scaling == {case["alpha"] / case["r"]}, scaling
    names = trainable(model)
    model.train()  # lora_dropout and attention_dropout are 0: train mode only so that gradients flow as in training
    ids = inputs["ids"].long()
    tensors = {f"{prefix}ids": inputs["ids"]}
    if case["cls"] is LlamaForCausalLM:
        targets = torch.cat([ids[:, 1:], torch.full((ids.shape[0], 1), -100)], dim=1)
        res = model(input_ids=ids, labels=ids)
        loss = F.cross_entropy(res.logits.reshape(-1, res.logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
        tensors[f"{prefix}targets"] = targets.to(torch.int32).contiguous()
    else:
        labels = inputs["labels"].long()
        res = model(input_ids=ids, labels=labels)
        loss = F.cross_entropy(res.logits, labels)
        tensors[f"{prefix}labels"] = inputs["labels"]
    assert abs(loss.item() - res.loss.item()) <= 1e-6 * loss.item(), (loss.item(), res.loss.item())
    res.loss.backward()
    logits = res.logits.detach().float().contiguous()
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, logits)
        merged = copy.deepcopy(model).merge_and_unload()
        assert type(merged) is case["cls"], type(merged)
        assert not any("lora" in n or "modules_to_save" in n for n, _ in merged.named_parameters())
        merged_logits = merged(input_ids=ids).logits.float().contiguous()
    merge_diff = (merged_logits - logits).abs().max().item()
    assert merge_diff < 1e-5, merge_diff
    assert all(p.grad is not None and p.grad.abs().max() > 0 for _, p in names)
    tensors.update({f"{prefix}logits": logits, f"{prefix}loss": res.loss.detach().reshape(1).float(),
                    f"{prefix}merged_logits": merged_logits})
    tensors.update({f"{prefix}grad/{n}": p.grad.detach().clone().contiguous() for n, p in names})
    tensors.update({f"{prefix}param/{n}": p.detach().clone().contiguous() for n, p in names})

    path = os.path.join(out, case["adapter_dir"])
    shutil.rmtree(path, ignore_errors=True)
    config = model.peft_config[ADAPTER]
    config.target_modules = sorted(config.target_modules)  # a set: written in hash order otherwise
    config.base_model_name_or_path = f"tests/fixtures/hf/{case['base']}"
    model.save_pretrained(path)
    os.remove(os.path.join(path, "README.md"))
    assert sorted(os.listdir(path)) == ["adapter_config.json", "adapter_model.safetensors"], os.listdir(path)

    meta = {"base": case["base"], "class": case["cls"].__name__, "task_type": case["task_type"].value,
            "r": case["r"], "alpha": case["alpha"], "scaling": scaling.pop(), "targets": case["targets"],
            "modules_to_save": config.modules_to_save, "init_seed": case["seed"],
            "trainable": [[n, list(p.shape)] for n, p in names], "adapter_dir": case["adapter_dir"]}
    stats = {"loss": res.loss.item(), "max_abs_logit": logits.abs().max().item(), "merged_vs_peft": merge_diff,
             "max_abs_grad": max(p.grad.abs().max().item() for _, p in names),
             "min_max_abs_grad": min(p.grad.abs().max().item() for _, p in names)}
    return tensors, meta, stats


def meta_json(cases):
    return json.dumps({
        "tool": "tools/make_lora_fixture.py", "peft": peft.__version__, "torch": torch.__version__,
        "transformers": transformers.__version__, "cases": cases,
        "init": "every trainable tensor (lora_A, lora_B, the score copy) N(0, 0.1^2), named_parameters order, "
                "torch.Generator().manual_seed(init_seed); lora_dropout 0, bias none, use_rslora False",
        "names": "as get_peft_model_state_dict / adapter_model.safetensors: the parameter name without "
                 "'.default' (modules_to_save: without '.modules_to_save.default')",
        "keys": {
            "ids": "(2, 13) int32, llama-expected.safetensors' ids",
            "targets": "(2, 13) int32, ids shifted left, -100 last",
            "logits": "(2, 13, 101) float32, the peft model on ids, no mask",
            "loss": "(1,) float32, mean cross-entropy over the 24 counted targets",
            "grad/<name>": "gradient of loss for every trainable tensor",
            "param/<name>": "its value",
            "merged_logits": "(2, 13, 101) float32, merge_and_unload()'s LlamaForCausalLM on ids",
            "cls/ids": "(3, 13) int32, llama-expected's llama-cls/cls_ids",
            "cls/labels": "(3,) int32, llama-expected's llama-cls/cls_labels",
            "cls/logits": "(3, 3) float32", "cls/loss": "(1,) float32, mean over the 3 rows",
            "cls/grad/<name>": "as grad/, the score copy included", "cls/param/<name>": "as param/",
            "cls/merged_logits": "(3, 3) float32, merge_and_unload()'s LlamaForSequenceClassification",
        },
    }, sort_keys=True)


def read(path):
    with safe_open(path, "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def load_adapter(prefix, case, adapter_dir, exp):
    """PeftModel.from_pretrained(base, ADAPTER_DIR) on a fresh base: (model, logits on the case's ids)."""
    base = load_base(case)
    model = PeftModel.from_pretrained(base, adapter_dir).eval()
    with torch.no_grad():
        return model, model(input_ids=exp[f"{prefix}ids"].long()).logits


def try_config(prefix, case, adapter_dir, fields, exp):
    """Load ADAPTER_DIR's adapter_model.safetensors beside an adapter_config.json of FIELDS alone:
    (max logit difference or None if it failed to load, the model or the error, a line to print)."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(adapter_dir, "adapter_model.safetensors"), tmp)
        with open(os.path.join(tmp, "adapter_config.json"), "w") as f:
            json.dump(fields, f)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model, got = load_adapter(prefix, case, tmp, exp)
        except Exception as e:  # noqa: BLE001 -- a failure to load is the outcome to report
            return None, e, f"fails: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
    d = (got - exp[f"{prefix}logits"]).abs().max().item()
    return d, model, (f"loads, logits within {d:.1e}" if d <= 1e-6 else f"loads, WRONG logits (off by {d:.3g})")


def by_hand(prefix, case, exp):
    """The case without peft: the base model through functional_call with each target weight
    replaced by W + (alpha / r) * B @ A from param/, and the score by param/'s copy; autograd
    gives the gradients of A, B and the score. Returns the largest differences from the file."""
    base = load_base(case).eval()
    scaling = case["alpha"] / case["r"]
    adapter = {k.removeprefix(f"{prefix}param/base_model.model."): v.clone().requires_grad_(True)
               for k, v in exp.items() if k.startswith(f"{prefix}param/")}
    weights, used = {}, set()
    for n, p in base.named_parameters():
        a, b = n.replace(".weight", ".lora_A.weight"), n.replace(".weight", ".lora_B.weight")
        if a in adapter:
            weights[n] = p.detach() + scaling * adapter[b] @ adapter[a]
            used |= {a, b}
        elif n in adapter:  # modules_to_save: the adapter's copy replaces the base tensor
            weights[n] = adapter[n]
            used.add(n)
        else:
            weights[n] = p.detach()
    assert used == set(adapter), set(adapter) - used
    ids = exp[f"{prefix}ids"].long()
    labels = ids if case["cls"] is LlamaForCausalLM else exp[f"{prefix}labels"].long()
    res = torch.func.functional_call(base, weights, (ids,), {"labels": labels})
    res.loss.backward()
    logits = (res.logits - exp[f"{prefix}logits"]).abs().max().item()
    loss = abs(res.loss.item() - exp[f"{prefix}loss"].item()) / exp[f"{prefix}loss"].item()
    grad = max(((t.grad - exp[f"{prefix}grad/base_model.model.{k}"]).abs().max()
                / exp[f"{prefix}grad/base_model.model.{k}"].abs().max()).item() for k, t in adapter.items())
    return logits, loss, grad


def verify(out):
    """Load the adapter directories as a user would and check them against the expected file; then
    find which adapter_config.json fields PeftModel.from_pretrained needs."""
    exp = read(os.path.join(out, EXPECTED))
    needed = dict.fromkeys(MINIMAL_CONFIG_KEYS, False)  # whether dropping the field broke some case
    for prefix, case in CASES.items():
        path = os.path.join(out, case["adapter_dir"])
        model, logits = load_adapter(prefix, case, path, exp)
        diff = (logits - exp[f"{prefix}logits"]).abs().max().item()
        assert diff <= 1e-6, (case["name"], diff)
        merged = (exp[f"{prefix}merged_logits"] - exp[f"{prefix}logits"]).abs().max().item()
        assert merged < 1e-5, (case["name"], merged)
        stored = read(os.path.join(path, "adapter_model.safetensors"))
        params = {k.removeprefix(f"{prefix}param/"): v for k, v in exp.items() if k.startswith(f"{prefix}param/")}
        grads = {k.removeprefix(f"{prefix}grad/") for k in exp if k.startswith(f"{prefix}grad/")}
        assert set(stored) == set(params) == grads, case["name"]
        assert all(torch.equal(stored[k], params[k]) and stored[k].dtype == torch.float32 for k in stored)
        assert scalings(model) == {case["alpha"] / case["r"]}
        with open(os.path.join(path, "adapter_config.json")) as f:
            full = json.load(f)
        print(f"{case['name']}: {case['adapter_dir']}/ reloaded by PeftModel.from_pretrained: logits within "
              f"{diff:.1e}; merged_logits within {merged:.1e} of logits; {len(stored)} tensors, float32")
        print(f"  adapter_config.json ({len(full)} fields): {json.dumps(full, sort_keys=True)}")
        hand = by_hand(prefix, case, exp)
        assert max(hand) <= 1e-5, (case["name"], hand)
        print(f"  by hand (W + {case['alpha']}/{case['r']} * B @ A, no peft): logits within {hand[0]:.1e}, loss "
              f"within {hand[1]:.1e} relative, gradients within {hand[2]:.1e} of each tensor's largest")

        minimal = {k: full[k] for k in MINIMAL_CONFIG_KEYS}
        d, _, outcome = try_config(prefix, case, path, minimal, exp)
        assert d is not None and d <= 1e-6, (case["name"], outcome)
        print(f"  minimal adapter_config.json {json.dumps(minimal)}: {outcome}")
        for k in MINIMAL_CONFIG_KEYS:
            d, _, outcome = try_config(prefix, case, path, {j: v for j, v in minimal.items() if j != k}, exp)
            needed[k] = needed[k] or d is None or d > 1e-6
            print(f"    without {k}: {outcome}")
        if prefix == "cls/":
            # The score: without task_type or modules_to_save, peft loads base_model.model.score.weight
            # straight over the base model's own score (same logits, but the base is changed and
            # disable_adapter() no longer gives the base's logits); with either it wraps the score in
            # a ModulesToSaveWrapper and keeps the base's.
            for extra in ({}, {"task_type": "SEQ_CLS"}, {"modules_to_save": ["score"]}):
                d, m, outcome = try_config(prefix, case, path, {**minimal, **extra}, exp)
                assert d is not None and d <= 1e-6, (extra, outcome)
                wrapped = type(m.base_model.model.score).__name__ == "ModulesToSaveWrapper"
                assert wrapped == bool(extra), extra
                print(f"    minimal{' + ' + json.dumps(extra) if extra else ''}: {type(m).__name__}, "
                      f"{outcome}, score {'wrapped (modules_to_save)' if wrapped else 'written over the base score'}")
    # each field, dropped, breaks loading in at least one case: a peft that makes one optional fails here
    assert all(needed.values()), needed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=FIXTURES, help="directory to write into (default: tests/fixtures/hf)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    hf_logging.disable_progress_bar()
    # peft 0.21 calls transformers' deprecated is_gradient_checkpointing
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
    os.makedirs(args.out, exist_ok=True)
    llama = read(os.path.join(FIXTURES, LLAMA_EXPECTED))
    inputs = {"": {"ids": llama["ids"]},
              "cls/": {"ids": llama["llama-cls/cls_ids"], "labels": llama["llama-cls/cls_labels"]}}
    tensors, cases = {}, {}
    for prefix, case in CASES.items():
        t, meta, stats = run_case(prefix, case, inputs[prefix], args.out)
        tensors.update(t)
        cases[case["name"]] = meta
        print(f"{case['name']}: " + ", ".join(f"{k} {v:.6g}" for k, v in stats.items()))
        print(f"  scaling {meta['scaling']}, modules_to_save {meta['modules_to_save']}, "
              f"{len(meta['trainable'])} trainable tensors:")
        for n, shape in meta["trainable"]:
            print(f"    {n} {shape}")
    save_file(tensors, os.path.join(args.out, EXPECTED), metadata={"meta": meta_json(cases)})
    print(f"wrote {args.out}: {EXPECTED} ({len(tensors)} tensors), "
          + ", ".join(c["adapter_dir"] + "/" for c in CASES.values()))
    verify(args.out)


if __name__ == "__main__":
    main()
