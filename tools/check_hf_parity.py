#!/usr/bin/env python3
"""Live check of Hugging Face interop with transformers itself (the committed fixtures and
tests/e2e/hf_interop_test.cpp check the same without Python):

  1. a randomly initialised GPT2LMHeadModel, GPT2ForSequenceClassification, BertForMaskedLM or
     BertForSequenceClassification, saved with save_pretrained (fp32, then bf16);
  2. `lmforge import` -> `lmforge logits` gives transformers' logits within 1e-4;
  3. `lmforge export` of that checkpoint -> from_pretrained gives the same logits within 1e-4.

    pip install torch==2.13.0 transformers safetensors && python3 tools/check_hf_parity.py
Exit status 1 if any comparison fails.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, GPT2Config,
                          GPT2ForSequenceClassification, GPT2LMHeadModel)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-4


def lmforge(binary, *args):
    subprocess.run([binary, *args], check=True, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    args = ap.parse_args()
    torch.manual_seed(0)
    failed = False
    gpt2 = [dict(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=24),
            dict(n_layer=3, n_head=4, n_embd=64, vocab_size=50257, n_positions=64),
            dict(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=24, num_labels=3, pad_token_id=0)]
    bert = [dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64, vocab_size=101,
                 max_position_embeddings=24),
            dict(num_hidden_layers=3, num_attention_heads=4, hidden_size=64, intermediate_size=256, vocab_size=50261,
                 max_position_embeddings=64),
            dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64, vocab_size=101,
                 max_position_embeddings=24, num_labels=3)]
    cases = [(GPT2Config, s) for s in gpt2] + [(BertConfig, s) for s in bert]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (config, shape) in enumerate(cases):
            shape = dict(shape)
            if config is BertConfig:  # what lmforge trains with: no dropout; one eager code path
                shape.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
                kind = BertForSequenceClassification if "num_labels" in shape else BertForMaskedLM
                shape["n_layer"], shape["n_embd"], shape["n_positions"] = (
                    shape["num_hidden_layers"], shape["hidden_size"], shape["max_position_embeddings"])
            else:
                kind = GPT2ForSequenceClassification if "num_labels" in shape else GPT2LMHeadModel
            hf_shape = {k: v for k, v in shape.items() if config is GPT2Config or k not in ("n_layer", "n_embd", "n_positions")}
            for dtype in (torch.float32, torch.bfloat16):
                model = kind(config(**hf_shape)).eval()
                hf_dir, ckpt, back = (os.path.join(tmp, f"{k}{i}{dtype}") for k in ("hf", "ckpt", "back"))
                model.to(dtype).save_pretrained(hf_dir)
                model = model.to(torch.float32)  # what lmforge computes: the stored weights, widened
                ids = torch.randint(1, shape["vocab_size"], (1, shape["n_positions"] - 3))  # no pad id
                with torch.no_grad():
                    want = model(ids).logits[0]
                lmforge(args.lmforge, "import", "--hf", hf_dir, "--output", ckpt)
                out = os.path.join(tmp, "logits.safetensors")
                lmforge(args.lmforge, "logits", "--checkpoint", ckpt, "--ids", " ".join(map(str, ids[0].tolist())),
                        "--output", out)
                got = load_file(out)["logits"][0] if "num_labels" in shape else load_file(out)["logits"]
                err_import = (got - want).abs().max().item()
                lmforge(args.lmforge, "export", "--checkpoint", ckpt, "--hf", back)
                with torch.no_grad():
                    again = kind.from_pretrained(back).eval()(ids).logits[0]
                err_export = (again - want).abs().max().item()
                ok = err_import <= TOL and err_export <= TOL
                failed |= not ok
                print(f"{'ok  ' if ok else 'FAIL'} {kind.__name__} {shape['n_layer']}x{shape['n_embd']} V={shape['vocab_size']} "
                      f"{str(dtype)[6:]}: import max |diff| {err_import:.2e}, export {err_export:.2e} (tol {TOL:g})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
