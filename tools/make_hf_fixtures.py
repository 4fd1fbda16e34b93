#!/usr/bin/env python3
"""Writes the Hugging Face interop fixtures (tests/fixtures/hf/): small randomly initialised
models saved by transformers' own save_pretrained, and the logits transformers computes for a
fixed batch, so the C++ tests check import and export without Python.

  gpt2-f32/    GPT2LMHeadModel (2 layers, 2 heads, width 32, vocabulary 101, context 24)
  gpt2-bf16/   the same weights stored in bfloat16 (torch_dtype bfloat16)
  gpt2-cls/    GPT2ForSequenceClassification (3 labels, pad_token_id 0), same shape
  gpt2-expected.safetensors
               ids (2, 13) int32; logits_f32 (2, 13, 101) from gpt2-f32; logits_bf16 from
               gpt2-bf16's weights widened to float32 (what lmforge computes after import);
               cls_ids (3, 13) with padding (id 0) at the ends, cls_labels (3), cls_logits
               (3, 3), cls_loss, and the gradients grad/<name> of the mean loss

    pip install torch==2.13.0 transformers safetensors && python3 tools/make_hf_fixtures.py
Deterministic (fixed seeds, one thread). tools/check_hf_parity.py is the live check.
"""
import os

import torch
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2ForSequenceClassification, GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "hf")


def classification_case():
    """Sequences padded with id 0 at the end; the head reads each one's last non-pad token."""
    torch.manual_seed(2)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=24, num_labels=3,
                     pad_token_id=0, bos_token_id=None, eos_token_id=None,
                     attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0, summary_first_dropout=0.0)
    model = GPT2ForSequenceClassification(cfg)
    model.save_pretrained(os.path.join(OUT, "gpt2-cls"))
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1, cfg.vocab_size, (3, 13), generator=g)
    ids[0, 9:] = 0  # 9 real tokens
    ids[2, 4:] = 0  # 4 real tokens; sequence 1 has none padded
    labels = torch.tensor([2, 0, 1])
    out = model(ids, labels=labels)
    out.loss.backward()
    grads = {f"grad/{name}": p.grad.detach().clone().contiguous()
             for name, p in model.named_parameters()
             if name in ("score.weight", "transformer.wte.weight", "transformer.h.0.attn.c_attn.weight",
                         "transformer.ln_f.weight")}
    return {"cls_ids": ids.to(torch.int32).contiguous(), "cls_labels": labels.to(torch.int32),
            "cls_logits": out.logits.detach().contiguous(), "cls_loss": out.loss.detach().reshape(1), **grads}


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=101, n_positions=24,
                     bos_token_id=None, eos_token_id=None)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # non-trivial layernorm and bias values, so a swapped tensor shows
        for name, p in model.named_parameters():
            if "ln" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    os.makedirs(OUT, exist_ok=True)
    model.save_pretrained(os.path.join(OUT, "gpt2-f32"))
    ids = torch.randint(0, cfg.vocab_size, (2, 13), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits_f32 = model(ids).logits.float()
        model_bf16 = GPT2LMHeadModel(cfg).eval()
        model_bf16.load_state_dict(model.state_dict())
        model_bf16.to(torch.bfloat16).save_pretrained(os.path.join(OUT, "gpt2-bf16"))
        widened = model_bf16.to(torch.float32)
        logits_bf16 = widened(ids).logits.float()
    tensors = {"ids": ids.to(torch.int32).contiguous(), "logits_f32": logits_f32.contiguous(),
               "logits_bf16": logits_bf16.contiguous()}
    tensors.update(classification_case())
    save_file(tensors, os.path.join(OUT, "gpt2-expected.safetensors"))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
