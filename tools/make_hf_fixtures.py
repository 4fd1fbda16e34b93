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
  bert-mlm/    BertForMaskedLM (2 layers, 2 heads, width 32, FFN 64, vocabulary 101, 24 positions,
               2 token types, pad_token_id 0); the decoder is tied to the word embeddings and
               to cls.predictions.bias
  bert-cls/    BertForSequenceClassification (3 labels), same shape, its own weights
  bert-expected.safetensors
               mlm_ids (2, 13) int32 with padding (id 0) at the end of sequence 0, mlm_mask
               (1 real, 0 pad), mlm_logits (2, 13, 101) at every position (token types all 0),
               mlm_labels (-100 except 4 real positions a sequence), mlm_loss and its gradients
               mlm_grad/<name>; cls_ids (3, 13), cls_mask, cls_labels (3), cls_logits (3, 3),
               cls_loss and its gradients cls_grad/<name>
  distilbert-mlm/  DistilBertForMaskedLM of the same shape (no token types; vocab_projector tied)
  distilbert-cls/  DistilBertForSequenceClassification (3 labels): pre_classifier + ReLU
  distilbert-expected.safetensors
               as bert-expected.safetensors, for the two DistilBERT models

    pip install torch==2.13.0 transformers safetensors && python3 tools/make_hf_fixtures.py
Deterministic (fixed seeds, one thread). tools/check_hf_parity.py is the live check.
"""
import os

import torch
from safetensors.torch import save_file
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, DistilBertConfig,
                          DistilBertForMaskedLM, DistilBertForSequenceClassification, GPT2Config,
                          GPT2ForSequenceClassification, GPT2LMHeadModel)

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


def bert_config(**kw):
    return BertConfig(vocab_size=101, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=24, type_vocab_size=2, hidden_act="gelu",
                      layer_norm_eps=1e-12, pad_token_id=0, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0, attn_implementation="eager", **kw)


def distilbert_config(**kw):
    return DistilBertConfig(vocab_size=101, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                            max_position_embeddings=24, activation="gelu", pad_token_id=0, dropout=0.0,
                            attention_dropout=0.0, seq_classif_dropout=0.0, attn_implementation="eager", **kw)


def perturbed_bert(cls, cfg):
    """Non-trivial layernorm and bias values (the decoder's bias included), so a swapped tensor shows."""
    model = cls(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model


def padded_batch(rows, real, generator):
    """Ids in 1..100, padded with id 0 after real[i] tokens; the attention mask marks the real ones."""
    ids = torch.randint(1, 101, (rows, 13), generator=generator)
    mask = torch.ones_like(ids)
    for i, n in enumerate(real):
        ids[i, n:] = 0
        mask[i, n:] = 0
    return ids, mask


def bert_grads(model, prefix, names):
    return {f"{prefix}/{name}": p.grad.detach().clone().contiguous()
            for name, p in model.named_parameters() if name in names}


def bert_mlm_case():
    """Logits at every position, padded ones included; the loss over 4 labelled real positions a sequence."""
    torch.manual_seed(4)
    model = perturbed_bert(BertForMaskedLM, bert_config()).eval()
    model.save_pretrained(os.path.join(OUT, "bert-mlm"))
    g = torch.Generator().manual_seed(5)
    ids, mask = padded_batch(2, (9, 13), g)  # sequence 0 has 9 real tokens
    types = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, n in enumerate((9, 13)):
        positions = torch.randperm(n, generator=g)[:4]
        labels[i, positions] = torch.randint(1, 101, (4,), generator=g)
    with torch.no_grad():
        logits = model(ids, attention_mask=mask, token_type_ids=types).logits
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    out = model(ids, attention_mask=mask, token_type_ids=types, labels=labels)
    out.loss.backward()
    grads = bert_grads(model, "mlm_grad", (
        "bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
        "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
        "bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.1.output.LayerNorm.bias",
        "cls.predictions.bias", "cls.predictions.transform.dense.weight"))
    return {"mlm_ids": ids.to(torch.int32).contiguous(), "mlm_mask": mask.to(torch.int32).contiguous(),
            "mlm_logits": logits.float().contiguous(), "mlm_labels": labels.to(torch.int32).contiguous(),
            "mlm_loss": out.loss.detach().reshape(1), **grads}


def bert_cls_case():
    """The head reads the pooled first token; padding (id 0) at the ends of sequences 0 and 2."""
    torch.manual_seed(6)
    model = perturbed_bert(BertForSequenceClassification, bert_config(num_labels=3))
    model.save_pretrained(os.path.join(OUT, "bert-cls"))
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    ids, mask = padded_batch(3, (9, 13, 4), torch.Generator().manual_seed(7))
    labels = torch.tensor([2, 0, 1])
    out = model(ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids), labels=labels)
    out.loss.backward()
    grads = bert_grads(model, "cls_grad", (
        "classifier.weight", "classifier.bias", "bert.pooler.dense.weight",
        "bert.encoder.layer.0.attention.self.key.weight", "bert.embeddings.word_embeddings.weight",
        "bert.embeddings.token_type_embeddings.weight"))
    return {"cls_ids": ids.to(torch.int32).contiguous(), "cls_mask": mask.to(torch.int32).contiguous(),
            "cls_labels": labels.to(torch.int32), "cls_logits": out.logits.detach().contiguous(),
            "cls_loss": out.loss.detach().reshape(1), **grads}


def distilbert_mlm_case():
    """As bert_mlm_case, for DistilBertForMaskedLM (no token types)."""
    torch.manual_seed(8)
    model = perturbed_bert(DistilBertForMaskedLM, distilbert_config()).eval()
    model.save_pretrained(os.path.join(OUT, "distilbert-mlm"))
    g = torch.Generator().manual_seed(9)
    ids, mask = padded_batch(2, (9, 13), g)
    labels = torch.full_like(ids, -100)
    for i, n in enumerate((9, 13)):
        positions = torch.randperm(n, generator=g)[:4]
        labels[i, positions] = torch.randint(1, 101, (4,), generator=g)
    with torch.no_grad():
        logits = model(ids, attention_mask=mask).logits
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    out = model(ids, attention_mask=mask, labels=labels)
    out.loss.backward()
    grads = bert_grads(model, "mlm_grad", (
        "distilbert.embeddings.word_embeddings.weight", "distilbert.embeddings.position_embeddings.weight",
        "distilbert.embeddings.LayerNorm.weight", "distilbert.transformer.layer.0.attention.q_lin.weight",
        "distilbert.transformer.layer.1.output_layer_norm.bias", "vocab_projector.bias",
        "vocab_transform.weight"))
    return {"mlm_ids": ids.to(torch.int32).contiguous(), "mlm_mask": mask.to(torch.int32).contiguous(),
            "mlm_logits": logits.float().contiguous(), "mlm_labels": labels.to(torch.int32).contiguous(),
            "mlm_loss": out.loss.detach().reshape(1), **grads}


def distilbert_cls_case():
    """As bert_cls_case, for DistilBertForSequenceClassification (pre_classifier + ReLU on the first token)."""
    torch.manual_seed(10)
    model = perturbed_bert(DistilBertForSequenceClassification, distilbert_config(num_labels=3))
    model.save_pretrained(os.path.join(OUT, "distilbert-cls"))
    model.train()  # dropout is 0: train mode only so that gradients flow as in training
    ids, mask = padded_batch(3, (9, 13, 4), torch.Generator().manual_seed(11))
    labels = torch.tensor([2, 0, 1])
    out = model(ids, attention_mask=mask, labels=labels)
    out.loss.backward()
    grads = bert_grads(model, "cls_grad", (
        "classifier.weight", "classifier.bias", "pre_classifier.weight",
        "distilbert.transformer.layer.0.attention.k_lin.weight", "distilbert.embeddings.word_embeddings.weight"))
    return {"cls_ids": ids.to(torch.int32).contiguous(), "cls_mask": mask.to(torch.int32).contiguous(),
            "cls_labels": labels.to(torch.int32), "cls_logits": out.logits.detach().contiguous(),
            "cls_loss": out.loss.detach().reshape(1), **grads}


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
    save_file({**bert_mlm_case(), **bert_cls_case()}, os.path.join(OUT, "bert-expected.safetensors"))
    save_file({**distilbert_mlm_case(), **distilbert_cls_case()}, os.path.join(OUT, "distilbert-expected.safetensors"))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
