#!/usr/bin/env python3
"""Writes tests/fixtures/rope_llama3.safetensors: rotary-embedding frequencies and cos/sin
tables as transformers computes them, for tests/grad/rope_test.cpp (kernels/rope.h).

  inv_freq/<case>   (HS/2) float32: LlamaRotaryEmbedding's inv_freq; the default rope for the
                    unscaled cases, ROPE_INIT_FUNCTIONS["llama3"] for the scaled ones
  cos/<case>/<pos0>, sin/<case>/<pos0>
                    (T, HS/2) float32: LlamaRotaryEmbedding.forward at positions pos0 .. pos0+T-1
                    (its first half: the second repeats it)
  metadata "meta"  JSON {"cases": [{name, HS, theta, scaling: null or {factor, low_freq_factor,
                    high_freq_factor, original_max_position_embeddings}}], "tables": [{case, pos0, T}],
                    "versions": {torch, transformers}} (one entry: safetensors writes several in
                    no fixed order, and a second run must write the same bytes)

    pip install torch==2.13.0 transformers==5.24.0 safetensors && python3 tools/make_rope_fixture.py
"""
import json
import os

import torch
import transformers
from safetensors.torch import save_file
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALINGS = {"": None, "_f8": (8.0, 1.0, 4.0, 8192), "_f32": (32.0, 1.0, 4.0, 8192)}
# HS = 96: not a power of two, so 2i/HS rounds in fp32, and rounding like transformers matters.
SHAPES = [(8, 10000.0), (8, 500000.0), (64, 10000.0), (64, 500000.0), (96, 500000.0)]
TABLES = [("hs64_theta500000_f32", 0, 4), ("hs64_theta500000_f32", 8188, 8), ("hs64_theta500000_f32", 131064, 8),
          ("hs8_theta10000", 8188, 8)]


def config(HS, theta, scaling):
    rope = {"rope_type": "default", "rope_theta": theta}
    if scaling is not None:
        factor, low, high, original = scaling
        rope = {"rope_type": "llama3", "rope_theta": theta, "factor": factor, "low_freq_factor": low,
                "high_freq_factor": high, "original_max_position_embeddings": original}
    return LlamaConfig(hidden_size=2 * HS, num_attention_heads=2, head_dim=HS, rope_parameters=rope,
                       max_position_embeddings=131072)


def main():
    tensors, cases, embeddings = {}, [], {}
    for HS, theta in SHAPES:
        for suffix, scaling in SCALINGS.items():
            name = f"hs{HS}_theta{int(theta)}{suffix}"
            cfg = config(HS, theta, scaling)
            emb = LlamaRotaryEmbedding(cfg)
            if scaling is not None:
                inv_freq, _ = ROPE_INIT_FUNCTIONS["llama3"](cfg)
                assert torch.equal(inv_freq, emb.inv_freq)
            tensors[f"inv_freq/{name}"] = emb.inv_freq.to(torch.float32).contiguous()
            embeddings[name] = emb
            keys = ["factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"]
            cases.append({"name": name, "HS": HS, "theta": theta,
                          "scaling": None if scaling is None else dict(zip(keys, scaling))})
    tables = []
    for name, pos0, T in TABLES:
        emb = embeddings[name]
        HS = 2 * emb.inv_freq.numel()
        x = torch.zeros(1, T, HS)
        cos, sin = emb(x, torch.arange(pos0, pos0 + T)[None, :])
        half = HS // 2
        assert torch.equal(cos[0, :, :half], cos[0, :, half:]) and torch.equal(sin[0, :, :half], sin[0, :, half:])
        tensors[f"cos/{name}/{pos0}"] = cos[0, :, :half].contiguous()
        tensors[f"sin/{name}/{pos0}"] = sin[0, :, :half].contiguous()
        tables.append({"case": name, "pos0": pos0, "T": T})
    out = os.path.join(ROOT, "tests", "fixtures", "rope_llama3.safetensors")
    meta = {"cases": cases, "tables": tables,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    save_file(tensors, out, metadata={"meta": json.dumps(meta)})
    print(f"wrote {out}: {len(cases)} cases, {len(tables)} tables")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
