#!/usr/bin/env python3
"""Writes the Llama fixtures (tests/fixtures/hf/llama-*, issue 29): small randomly initialised models
made by transformers' own Llama classes and saved by save_pretrained (safetensors), and what
transformers computes on them, so the C++ tests check Llama parity without Python.

Every model: vocabulary 101, max_position_embeddings 64, SiLU, no attention or MLP biases,
attention_dropout 0, bos/eos/pad None (pad 0 for llama-cls), eager attention. Every weight is
drawn N(0, 0.1²) and every RMSNorm weight 1 + N(0, 0.1²), so the logits are far from 0 and a
norm weight left out or swapped shows.

  llama-gqa/   LlamaForCausalLM: 2 layers, hidden 32, 4 heads over 2 key/value heads (GQA,
               head_dim 8), intermediate 56, rope_theta 10000 without scaling, rms_norm_eps 1e-6,
               untied (lm_head.weight stored), float32
  llama-tied/  LlamaForCausalLM: 2 layers, hidden 32, 4 heads over 1 key/value head (MQA), intermediate
               48, rope_theta 500000 with llama3 scaling (factor 8, low_freq_factor 1, high_freq_factor
               4, original_max_position_embeddings 8192: at head_dim 8 the four frequencies fall
               high, high, medium, low), rms_norm_eps 1e-5, tie_word_embeddings (no lm_head.weight
               in the file), stored in bfloat16 (dtype bfloat16) as SmolLM2 ships: its expected
               values are those of the bfloat16 weights widened to float32
  llama-mha/   LlamaForCausalLM: 1 layer, hidden 48, 6 heads, 6 key/value heads (plain MHA,
               head_dim 8), intermediate 64, rope_theta 10000 with llama3 scaling (factor 32,
               low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 128: the
               wavelengths 2π·10000^(i/4) = 6.3, 63, 628, 6283 fall in the high band (< 32, kept),
               the medium band (32..128, smoothed, smooth factor 0.35) and the low band (> 128,
               divided by 32) -- every branch of the rule, none near a boundary),
               rms_norm_eps 1e-5, untied, float32
  llama-cls/   LlamaForSequenceClassification: 3 labels, pad_token_id 0 (the head reads each
               row's last token that is not 0), the shape of llama-gqa with its own weights;
               score.weight, no bias
  llama-expected.safetensors, keys prefixed by the model's directory ("llama-gqa/logits"):
    ids                      (2, 13) int32, ids in 0..100, shared by the causal models (no padding)
    <m>/logits               (2, 13, 101) float32: model(ids), no attention mask
    <m>/targets              (2, 13) int32: ids shifted left, -100 at the last position
    <m>/loss                 (1,) float32: mean cross-entropy over the 24 counted targets (what
                             transformers returns for labels=ids)
    <m>/grad/<name>          the gradient of that loss for every tensor of the model's
                             model.safetensors, under its name there (llama-tied: the embedding's
                             gradient includes the LM head's; there is no lm_head entry)
    <m>/rope_inv_freq        (4,) float32: transformers' inverse frequencies, llama3 rule applied
    <m>/gen_prompt           (5,) int32, ids in 1..100 (the same prompt for the three)
    <m>/gen_ids              (17,) int32: model.generate(prompt, max_new_tokens=12, do_sample=False),
                             the prompt and 12 greedy tokens (no eos: it always runs 12 steps)
    llama-cls/cls_ids        (3, 13) int32: ids in 1..100, rows 0 and 2 padded with 0 after 9 and 4
                             tokens (no attention mask: under causal attention padding at the end
                             reaches no real token)
    llama-cls/cls_labels     (3,) int32
    llama-cls/cls_logits     (3, 3) float32: the pooled logits
    llama-cls/cls_loss       (1,) float32: mean cross-entropy over the 3 rows
    llama-cls/cls_grad/<name>  its gradient for every tensor of llama-cls/model.safetensors
  The metadata entry `meta` holds a JSON description: each model's shape and rope parameters,
  the keys and their meaning, the versions of torch and transformers.

transformers 5 writes `rope_parameters` (rope_theta inside it) and `dtype` into config.json; configs
written by transformers 4 (SmolLM2's, Llama 3's) have rope_theta and rope_scaling at the top level
and torch_dtype.

    pip install torch==2.13.0 transformers==5.24.0 safetensors && python3 tools/make_llama_fixtures.py
Deterministic (fixed generators, one thread; a second run writes the same bytes). After writing
it checks itself: each directory reloaded with from_pretrained in float32 gives the expected
logits within 1e-6, its config.json holds the intended fields and its model.safetensors the
intended names. `--out DIR` writes elsewhere (to compare two runs).
"""
import argparse
import copy
import json
import os
import shutil

import torch
import torch.nn.functional as F
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "hf")
EXPECTED = "llama-expected.safetensors"
V, T, NEW_TOKENS = 101, 13, 12

COMMON = dict(vocab_size=V, max_position_embeddings=64, hidden_act="silu", attention_bias=False, mlp_bias=False,
              attention_dropout=0.0, initializer_range=0.1, bos_token_id=None, eos_token_id=None,
              pad_token_id=None, attn_implementation="eager")
GQA = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=56,
           rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
           tie_word_embeddings=False)
MODELS = {  # name: (class, config, dtype stored, seed of its weights)
    "llama-gqa": (LlamaForCausalLM, GQA, torch.float32, 100),
    "llama-tied": (LlamaForCausalLM, dict(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=1, intermediate_size=48,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 8192},
        tie_word_embeddings=True), torch.bfloat16, 200),
    "llama-mha": (LlamaForCausalLM, dict(
        num_hidden_layers=1, hidden_size=48, num_attention_heads=6, num_key_value_heads=6, intermediate_size=64,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 32.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 128},
        tie_word_embeddings=False), torch.float32, 300),
    "llama-cls": (LlamaForSequenceClassification, dict(GQA, num_labels=3, pad_token_id=0), torch.float32, 400),
}


def make_model(name):
    """The model NAME with its weights drawn from its own generator, in named_parameters order."""
    cls, kw, _, seed = MODELS[name]
    model = cls(LlamaConfig(**{**COMMON, **kw}))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            noise = 0.1 * torch.randn(p.shape, generator=g)
            p.copy_(1.0 + noise if pname.endswith("norm.weight") else noise)
    if model.config.tie_word_embeddings:
        assert model.lm_head.weight is model.model.embed_tokens.weight
    return model


def save(model, name, out):
    """save_pretrained into OUT/NAME in the model's stored dtype; returns the model in float32, with
    exactly the weights the directory holds (bfloat16 ones widened). Only the parameters are
    rounded: model.to(bfloat16) would round the rotary inverse frequencies too (a buffer), which
    from_pretrained in float32 computes afresh in float32 (2e-5 in the logits)."""
    dtype = MODELS[name][2]
    path = os.path.join(out, name)
    shutil.rmtree(path, ignore_errors=True)
    if dtype == torch.float32:
        model.save_pretrained(path)
    else:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(dtype).float())
        copy.deepcopy(model).to(dtype).save_pretrained(path)
    assert model.model.rotary_emb.inv_freq.dtype == torch.float32
    return model


def grads(model, prefix):
    return {f"{prefix}/{n}": p.grad.detach().clone().contiguous() for n, p in model.named_parameters()}


def greedy_check(model, prompt, gen):
    """Greedy decoding by full forward passes (no KV cache) gives generate's tokens; returns the smallest
    gap between the chosen token's logit and the runner-up's, so a reader knows ties are far."""
    seq, gap = prompt.clone(), float("inf")
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            last = model(seq[None]).logits[0, -1]
            top = torch.topk(last, 2).values
            gap = min(gap, (top[0] - top[1]).item())
            seq = torch.cat([seq, last.argmax().reshape(1)])
    assert torch.equal(seq, gen), (seq, gen)
    return gap


def causal_case(name, out, ids, prompt):
    model = save(make_model(name), name, out)
    model.eval()
    with torch.no_grad():
        logits = model(ids).logits.float()
    targets = torch.cat([ids[:, 1:], torch.full((ids.shape[0], 1), -100)], dim=1)
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    res = model(ids, labels=ids)
    loss = F.cross_entropy(res.logits.reshape(-1, V), targets.reshape(-1), ignore_index=-100)
    assert torch.equal(res.logits, logits) and abs(loss.item() - res.loss.item()) <= 1e-6 * loss.item()
    res.loss.backward()
    model.eval()
    with torch.no_grad():
        gen = model.generate(prompt[None], attention_mask=torch.ones_like(prompt)[None], max_new_tokens=NEW_TOKENS,
                             do_sample=False, eos_token_id=None, pad_token_id=None)[0]
    assert gen.shape == (5 + NEW_TOKENS,)
    gap = greedy_check(model, prompt, gen)
    tensors = {f"{name}/logits": logits.contiguous(), f"{name}/targets": targets.to(torch.int32).contiguous(),
               f"{name}/loss": res.loss.detach().reshape(1).float(),
               f"{name}/rope_inv_freq": model.model.rotary_emb.inv_freq.detach().float().clone(),
               f"{name}/gen_prompt": prompt.to(torch.int32).contiguous(),
               f"{name}/gen_ids": gen.to(torch.int32).contiguous(),
               **grads(model, f"{name}/grad")}
    stats = {"max_abs_logit": logits.abs().max().item(), "loss": res.loss.item(), "greedy_min_gap": gap}
    return tensors, stats


def cls_case(out):
    name = "llama-cls"
    model = save(make_model(name), name, out)
    g = torch.Generator().manual_seed(401)
    ids = torch.randint(1, V, (3, T), generator=g)
    ids[0, 9:] = 0  # 9 real tokens
    ids[2, 4:] = 0  # 4 real tokens; row 1 has none padded
    labels = torch.tensor([2, 0, 1])
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    res = model(ids, labels=labels)
    res.loss.backward()
    tensors = {f"{name}/cls_ids": ids.to(torch.int32).contiguous(), f"{name}/cls_labels": labels.to(torch.int32),
               f"{name}/cls_logits": res.logits.detach().float().contiguous(),
               f"{name}/cls_loss": res.loss.detach().reshape(1).float(), **grads(model, f"{name}/cls_grad")}
    stats = {"max_abs_logit": res.logits.abs().max().item(), "loss": res.loss.item()}
    return tensors, stats


def meta():
    models = {}
    for name, (cls, kw, dtype, _) in MODELS.items():
        cfg = {**COMMON, **kw}
        cfg.pop("attn_implementation")
        models[name] = {"class": cls.__name__, "stored_dtype": str(dtype).removeprefix("torch."),
                        "head_dim": kw["hidden_size"] // kw["num_attention_heads"], **cfg}
    return {
        "tool": "tools/make_llama_fixtures.py", "torch": torch.__version__, "transformers": transformers.__version__,
        "models": models,
        "init": "every weight N(0, 0.1^2); RMSNorm weights 1 + N(0, 0.1^2)",
        "ids": "(2, 13) int32, ids in 0..100, shared by llama-gqa, llama-tied, llama-mha; no padding, no mask",
        "causal_keys": {
            "<m>/logits": "(2, 13, 101) float32, model(ids)",
            "<m>/targets": "(2, 13) int32, ids shifted left, -100 at the last position",
            "<m>/loss": "(1,) float32, mean cross-entropy over the 24 counted targets (transformers' labels=ids)",
            "<m>/grad/<name>": "gradient of loss for every tensor of <m>/model.safetensors (tied: no lm_head)",
            "<m>/rope_inv_freq": "(head_dim/2,) float32, transformers' inverse frequencies after rope scaling",
            "<m>/gen_prompt": "(5,) int32, the same prompt for the three models",
            "<m>/gen_ids": "(17,) int32, generate(prompt, max_new_tokens=12, do_sample=False): prompt + 12 tokens",
        },
        "cls_keys": {
            "llama-cls/cls_ids": "(3, 13) int32, rows 0 and 2 padded with id 0 after 9 and 4 real tokens, no mask",
            "llama-cls/cls_labels": "(3,) int32",
            "llama-cls/cls_logits": "(3, 3) float32, pooled at each row's last non-pad token",
            "llama-cls/cls_loss": "(1,) float32, mean cross-entropy over the 3 rows",
            "llama-cls/cls_grad/<name>": "gradient of cls_loss for every tensor of llama-cls/model.safetensors",
        },
        "expected_from": "float32 computation on the stored weights (llama-tied: bfloat16 widened to float32)",
    }


def verify(out):
    """Reload what was written as a user would and check it against the expected file; print the
    config fields and tensor names the C++ side reads."""
    exp = {}
    with safe_open(os.path.join(out, EXPECTED), "pt") as f:
        for k in f.keys():
            exp[k] = f.get_tensor(k)
    ids = exp["ids"].long()
    for name, (cls, kw, dtype, _) in MODELS.items():
        path = os.path.join(out, name)
        model = cls.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
        with torch.no_grad():
            if cls is LlamaForCausalLM:
                diff = (model(ids).logits - exp[f"{name}/logits"]).abs().max().item()
                grad_prefix = f"{name}/grad/"
            else:
                diff = (model(exp[f"{name}/cls_ids"].long()).logits - exp[f"{name}/cls_logits"]).abs().max().item()
                grad_prefix = f"{name}/cls_grad/"
        assert diff <= 1e-6, (name, diff)
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        for key in ("num_key_value_heads", "tie_word_embeddings", "rms_norm_eps", "head_dim"):
            want = kw.get(key, kw["hidden_size"] // kw["num_attention_heads"] if key == "head_dim" else None)
            assert cfg[key] == want, (name, key, cfg[key], want)
        assert cfg["rope_parameters"] == kw["rope_parameters"], (name, cfg["rope_parameters"])
        assert cfg["dtype"] == str(dtype).removeprefix("torch."), (name, cfg["dtype"])
        assert cfg["bos_token_id"] is None and cfg["eos_token_id"] is None
        with safe_open(os.path.join(path, "model.safetensors"), "pt") as f:
            stored = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape())) for k in f.keys()}
        graded = {k.removeprefix(grad_prefix): tuple(v.shape) for k, v in exp.items() if k.startswith(grad_prefix)}
        assert graded == {k: s for k, (_, s) in stored.items()}, name
        want_dtype = "BF16" if dtype is torch.bfloat16 else "F32"
        assert all(d == want_dtype for d, _ in stored.values()), name
        print(f"{name}: reloaded logits within {diff:.1e}; config.json: architectures {cfg['architectures']}, "
              f"num_key_value_heads {cfg['num_key_value_heads']}, head_dim {cfg['head_dim']}, "
              f"rms_norm_eps {cfg['rms_norm_eps']}, tie_word_embeddings {cfg['tie_word_embeddings']}, "
              f"dtype {cfg['dtype']}, rope_parameters {json.dumps(cfg['rope_parameters'], sort_keys=True)}"
              + (f", pad_token_id {cfg['pad_token_id']}, num_labels {len(cfg['id2label'])}" if "id2label" in cfg
                 else ""))
        print(f"  model.safetensors: {len(stored)} tensors, {want_dtype}")
        for k in sorted(stored, key=lambda k: [int(w) if w.isdigit() else w for w in k.split(".")]):
            print(f"    {k} {list(stored[k][1])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=OUT, help="directory to write into (default: tests/fixtures/hf)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)
    ids = torch.randint(0, V, (2, T), generator=torch.Generator().manual_seed(1))
    prompt = torch.randint(1, V, (5,), generator=torch.Generator().manual_seed(2))
    tensors = {"ids": ids.to(torch.int32).contiguous()}
    for name, (cls, *_) in MODELS.items():
        t, stats = causal_case(name, args.out, ids, prompt) if cls is LlamaForCausalLM else cls_case(args.out)
        tensors.update(t)
        print(f"{name}: " + ", ".join(f"{k} {v:.6g}" for k, v in stats.items()))
    save_file(tensors, os.path.join(args.out, EXPECTED), metadata={"meta": json.dumps(meta(), sort_keys=True)})
    print(f"wrote {args.out}: {EXPECTED} ({len(tensors)} tensors) and {', '.join(MODELS)}")
    verify(args.out)


if __name__ == "__main__":
    main()
