#!/usr/bin/env python3
"""Live check of Hugging Face interop with transformers itself (the committed fixtures and
tests/e2e/hf_interop_test.cpp check the same without Python):

  1. a randomly initialised GPT2LMHeadModel, GPT2ForSequenceClassification, BertForMaskedLM,
     BertForSequenceClassification, DistilBertForMaskedLM or DistilBertForSequenceClassification,
     saved with save_pretrained (fp32, then bf16);
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
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, DistilBertConfig,
                          DistilBertForMaskedLM, DistilBertForSequenceClassification, GPT2Config,
                          GPT2ForSequenceClassification, GPT2LMHeadModel)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-4


def lmforge(binary, *args):
    subprocess.run([binary, *args], check=True, capture_output=True, text=True)


def cases():
    """(model class, its config) for every case: each family's smallest shape, a wider one with a
    real vocabulary, and a classifier; no dropout, as lmforge trains."""
    gpt2 = [dict(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=24),
            dict(n_layer=3, n_head=4, n_embd=64, vocab_size=50257, n_positions=64),
            dict(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=24, num_labels=3, pad_token_id=0)]
    bert = [dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64, vocab_size=101,
                 max_position_embeddings=24),
            dict(num_hidden_layers=3, num_attention_heads=4, hidden_size=64, intermediate_size=256, vocab_size=50261,
                 max_position_embeddings=64),
            dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64, vocab_size=101,
                 max_position_embeddings=24, num_labels=3)]
    distilbert = [dict(n_layers=2, n_heads=2, dim=32, hidden_dim=64, vocab_size=101, max_position_embeddings=24),
                  dict(n_layers=3, n_heads=4, dim=64, hidden_dim=256, vocab_size=30522, max_position_embeddings=64),
                  dict(n_layers=2, n_heads=2, dim=32, hidden_dim=64, vocab_size=101, max_position_embeddings=24,
                       num_labels=3)]
    no_dropout = {BertConfig: dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                  DistilBertConfig: dict(dropout=0.0, attention_dropout=0.0, seq_classif_dropout=0.0)}
    families = [(GPT2Config, gpt2, GPT2LMHeadModel, GPT2ForSequenceClassification),
                (BertConfig, bert, BertForMaskedLM, BertForSequenceClassification),
                (DistilBertConfig, distilbert, DistilBertForMaskedLM, DistilBertForSequenceClassification)]
    for config, shapes, lm, classifier in families:
        for shape in shapes:
            yield (classifier if "num_labels" in shape else lm), config(**shape, **no_dropout.get(config, {}))


def check(binary, kind, config, dtype, tmp):
    """Import, logits and export of one model saved in DTYPE; True if both agree with transformers."""
    model = kind(config).eval()
    hf_dir, ckpt, back = (os.path.join(tmp, f"{k}-{kind.__name__}-{config.vocab_size}-{dtype}")
                          for k in ("hf", "ckpt", "back"))
    model.to(dtype).save_pretrained(hf_dir)
    model = model.to(torch.float32)  # what lmforge computes: the stored weights, widened
    ids = torch.randint(1, config.vocab_size, (1, config.max_position_embeddings - 3))  # no pad id
    with torch.no_grad():
        want = model(ids).logits[0]
    lmforge(binary, "import", "--hf", hf_dir, "--output", ckpt)
    out = os.path.join(tmp, "logits.safetensors")
    lmforge(binary, "logits", "--checkpoint", ckpt, "--ids", " ".join(map(str, ids[0].tolist())), "--output", out,
            "--overwrite")
    classifies = kind.__name__.endswith("SequenceClassification")
    got = load_file(out)["logits"][0] if classifies else load_file(out)["logits"]
    err_import = (got - want).abs().max().item()
    lmforge(binary, "export", "--checkpoint", ckpt, "--hf", back)
    with torch.no_grad():
        again = kind.from_pretrained(back).eval()(ids).logits[0]
    err_export = (again - want).abs().max().item()
    ok = err_import <= TOL and err_export <= TOL
    print(f"{'ok  ' if ok else 'FAIL'} {kind.__name__} {config.num_hidden_layers}x{config.hidden_size} "
          f"V={config.vocab_size} {str(dtype)[6:]}: import max |diff| {err_import:.2e}, export {err_export:.2e} "
          f"(tol {TOL:g})")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lmforge", default=os.path.join(ROOT, "build", "release", "lmforge"))
    args = ap.parse_args()
    torch.manual_seed(0)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for kind, config in cases():
            for dtype in (torch.float32, torch.bfloat16):
                failed |= not check(args.lmforge, kind, config, dtype, tmp)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
