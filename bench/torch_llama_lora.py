#!/usr/bin/env python3
"""PyTorch reference for lmforge's LoRA and full fine-tuning speed and memory (CPU).

transformers' LlamaForCausalLM built from a config with random weights (nothing from the
Hub), fine-tuned on random token ids with the causal-LM loss (labels = input ids, shifted
inside the model): with LoRA through peft (--lora R: r=R, alpha=2R, dropout 0, on q, k, v, o,
gate, up and down projections, the base frozen) or every weight (--lora 0). AdamW (lr 1e-4,
torch's other defaults) over the trainable parameters only, gradients clipped to norm 1.0 as
lmforge's step and transformers' Trainer do (--clip 0: none). It times full steps (zero grad,
forward, backward, clip, AdamW) after untimed warm-up steps and prints one JSON line
(--json) or a one-line summary.

Presets (--model) are lmforge's Llama shapes (src/model/llama_config.cpp): llama-3.2-1b
(llama-1b), tinyllama-1.1b, smollm2-135m, smollm2-360m, llama-micro, llama-nano, and tiny
(2 layers, 64 wide, vocab 512) for smoke tests. --layers, --embd, ... override a preset.

Precision:
  --dtype bf16     the whole model held in bfloat16 (built as such: no fp32 copy first). peft
                   then upcasts the LoRA adapters to fp32 (get_peft_model's default
                   autocast_adapter_dtype=True) and casts each adapted layer's input to fp32
                   for the adapter path; --adapter-dtype model keeps them in bf16 instead.
                   AdamW's moments take each parameter's dtype.
  --dtype fp32     everything in fp32; with --autocast, fp32 master weights and
                   torch.autocast("cpu", bfloat16) around forward (backward follows it).
--recompute: activation (gradient) checkpointing per decoder layer, non-reentrant, through
transformers (activation_checkpointing_enable, formerly gradient_checkpointing_enable), which
also makes the embeddings' output require grad, as a frozen base needs with reentrant
checkpointing. --compile wraps the model in torch.compile.

Peak RSS (max_rss_mb) is the process's ru_maxrss at the end: model build and every step,
which is what a user's fine-tuning run needs; run one configuration per process.
max_rss_build_mb is the peak after the model (and adapters, optimizer) are built.

Examples:
  python3 bench/torch_llama_lora.py --model llama-3.2-1b --lora 16 --dtype bf16 --recompute --json
  python3 bench/torch_llama_lora.py --model llama-3.2-1b --lora 0 --dtype bf16 --recompute --json
  python3 bench/torch_llama_lora.py --model tiny --seq 64 --steps 2 --warmup 1   # smoke test
Needs torch, transformers and peft (tools/requirements-test.txt pins the first two; peft
0.21.2 was used: pip install peft==0.21.2).
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time
import warnings


def shape(layers, heads, kv_heads, embd, intermediate, vocab, context, theta, tied, scaling=None):
    return dict(layers=layers, heads=heads, kv_heads=kv_heads, embd=embd, intermediate=intermediate,
                vocab=vocab, context=context, rope_theta=theta, tied=tied, rope_scaling=scaling)


LLAMA3_SCALING = dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=8192)
# The same shapes as lmforge's presets (the models' own config.json files).
PRESETS = {
    "llama-3.2-1b": shape(16, 32, 8, 2048, 8192, 128256, 131072, 500000.0, True, LLAMA3_SCALING),
    "llama-1b": shape(16, 32, 8, 2048, 8192, 128256, 131072, 500000.0, True, LLAMA3_SCALING),
    "tinyllama-1.1b": shape(22, 32, 4, 2048, 5632, 32000, 2048, 10000.0, False),
    "smollm2-135m": shape(30, 9, 3, 576, 1536, 49152, 8192, 100000.0, True),
    "smollm2-360m": shape(32, 15, 5, 960, 2560, 49152, 8192, 100000.0, True),
    "llama-micro": shape(4, 8, 2, 256, 704, 50257, 1024, 10000.0, True),
    "llama-nano": shape(2, 4, 2, 128, 352, 50257, 1024, 10000.0, True),
    "tiny": shape(2, 4, 2, 64, 256, 512, 2048, 10000.0, True),
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown"


def max_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def parse_args():
    """The arguments, and the model's shape: the preset with the overrides, checked."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="llama-3.2-1b", choices=list(PRESETS))
    for k in ("layers", "heads", "kv-heads", "embd", "intermediate", "vocab"):
        ap.add_argument("--" + k, type=int, help="override the preset's")
    ap.add_argument("--lora", type=int, default=16, metavar="R",
                    help="LoRA rank (alpha 2R, dropout 0, q/k/v/o/gate/up/down); 0: full fine-tuning")
    ap.add_argument("--adapter-dtype", default="peft", choices=["peft", "model"],
                    help="peft: what get_peft_model does (bf16/fp16 adapters upcast to fp32); "
                         "model: adapters in the model's dtype (autocast_adapter_dtype=False)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"], help="the weights' dtype")
    ap.add_argument("--autocast", action="store_true", help="torch.autocast(cpu, bfloat16) around forward")
    ap.add_argument("--recompute", action="store_true", help="activation checkpointing per decoder layer")
    ap.add_argument("--compile", action="store_true", help="use torch.compile")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before timing")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--clip", type=float, default=1.0, help="clip the gradient norm to this; 0: no clipping")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="torch.set_num_threads (default: every core this process may use)")
    ap.add_argument("--json", action="store_true", help="print one JSON line (the summary goes to stderr)")
    args = ap.parse_args()
    if args.lora < 0 or args.batch < 1 or args.seq < 2 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        ap.error("--lora must be >= 0, --batch, --steps and --threads >= 1, --seq >= 2, --warmup >= 0")
    cfg = dict(PRESETS[args.model])
    for k in ("layers", "heads", "kv_heads", "embd", "intermediate", "vocab"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    if cfg["embd"] % cfg["heads"] or cfg["heads"] % cfg["kv_heads"] or (cfg["embd"] // cfg["heads"]) % 2:
        ap.error(f"embd {cfg['embd']} must divide into heads {cfg['heads']} of an even size, "
                 f"and heads into kv-heads {cfg['kv_heads']}")
    if args.seq > cfg["context"]:
        ap.error(f"--seq {args.seq} is longer than {args.model}'s context of {cfg['context']}")
    return args, cfg


def build_model(args, cfg, torch, transformers):
    """transformers' LlamaForCausalLM of shape cfg with random weights, in training mode, with
    activation checkpointing if asked; returns it and its parameter count."""
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    # transformers 5 takes rope_theta and the scaling in one rope_parameters dict.
    rope = dict(rope_type="llama3" if cfg["rope_scaling"] else "default", rope_theta=cfg["rope_theta"],
                **(cfg["rope_scaling"] or {}))
    config = transformers.LlamaConfig(
        vocab_size=cfg["vocab"], hidden_size=cfg["embd"], intermediate_size=cfg["intermediate"],
        num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
        num_key_value_heads=cfg["kv_heads"], max_position_embeddings=cfg["context"],
        rms_norm_eps=1e-5, rope_parameters=rope,
        tie_word_embeddings=cfg["tied"], attention_bias=False, mlp_bias=False, use_cache=False,
        hidden_act="silu", attn_implementation="sdpa")
    # Built in the target dtype directly: a bf16 model never has an fp32 copy in memory.
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.train()
    params = sum(p.numel() for p in model.parameters())  # tied embeddings counted once
    if args.recompute:  # before peft wraps it, as peft's docs do
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            kwargs = {"use_reentrant": False}
            if hasattr(model, "activation_checkpointing_enable"):
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            # A frozen base's first layer takes an input that requires no grad; transformers
            # does this itself for input_ids models, peft's prepare step too: harmless twice.
            if args.lora > 0:
                model.enable_input_require_grads()
    return model, params


def add_adapters(args, model, peft):
    """The model with peft's LoRA adapters on LORA_TARGETS, and the adapters' dtypes."""
    lora = peft.LoraConfig(r=args.lora, lora_alpha=2 * args.lora, lora_dropout=0.0,
                           target_modules=LORA_TARGETS, bias="none", task_type="CAUSAL_LM")
    with warnings.catch_warnings():  # peft asks is_gradient_checkpointing, deprecated in transformers 5
        warnings.simplefilter("ignore", FutureWarning)
        model = peft.get_peft_model(model, lora, autocast_adapter_dtype=args.adapter_dtype == "peft")
    dtypes = {p.dtype for n, p in model.named_parameters() if "lora_" in n}
    return model, "+".join(sorted(str(d).replace("torch.", "") for d in dtypes))


def time_steps(args, cfg, torch, fwd, opt, trainable):
    """Runs the warm-up and timed steps on random ids: the timed steps' seconds, every loss."""
    def step(ids):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
            loss = fwd(input_ids=ids, labels=ids).loss
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(trainable, args.clip)
        opt.step()
        return loss.item(), time.perf_counter() - t0

    g = torch.Generator().manual_seed(1)
    times, losses = [], []
    for i in range(args.warmup + args.steps):
        ids = torch.randint(0, cfg["vocab"], (args.batch, args.seq), generator=g)
        loss, dt = step(ids)
        losses.append(loss)
        if i >= args.warmup:
            times.append(dt)
    return times, losses


def report(args, out):
    """Prints the JSON line (--json) and the one-line summary."""
    what = (f"LoRA r={args.lora} (adapters {out['adapter_dtype']})" if args.lora > 0 else "full fine-tuning")
    summary = (f"pytorch {args.model} {what}, {out['precision']}, recompute {out['recompute']}"
               f"{', compiled' if args.compile else ''}, B={args.batch} T={args.seq}, {out['threads']} threads: "
               f"{out['step_ms_median']:.1f} ms/step median, {out['tokens_per_s']:.1f} tokens/s, "
               f"{out['max_rss_mb']:.0f} MiB peak RSS ({out['max_rss_build_mb']:.0f} after build), "
               f"{out['params']:,} params ({out['trainable_params']:,} trainable), "
               f"loss {out['loss_first']:.4f} -> {out['loss_last']:.4f}")
    if args.json:
        print(summary, file=sys.stderr)
        print(json.dumps(out), flush=True)
    else:
        print(summary)


def main():
    args, cfg = parse_args()
    t_start = time.perf_counter()
    import torch
    import transformers
    peft = None
    if args.lora > 0:
        import peft
    if args.compile and not hasattr(torch, "compile"):
        raise SystemExit(f"torch {torch.__version__} has no torch.compile")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    model, params = build_model(args, cfg, torch, transformers)
    adapter_dtype = None
    if args.lora > 0:
        model, adapter_dtype = add_adapters(args, model, peft)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=args.lr)
    fwd = torch.compile(model) if args.compile else model
    build_s = time.perf_counter() - t_start
    rss_build = max_rss_mb()

    times, losses = time_steps(args, cfg, torch, fwd, opt, trainable)
    med = statistics.median(times)
    out = dict(
        impl="pytorch", model=args.model, layers=cfg["layers"], heads=cfg["heads"], kv_heads=cfg["kv_heads"],
        embd=cfg["embd"], intermediate=cfg["intermediate"], vocab=cfg["vocab"], tied=cfg["tied"],
        batch=args.batch, seq=args.seq, mode="lora" if args.lora > 0 else "full", lora_rank=args.lora,
        lora_alpha=2 * args.lora, lora_targets=LORA_TARGETS if args.lora > 0 else [],
        adapter_dtype=adapter_dtype, dtype=args.dtype, autocast=args.autocast,
        precision=args.dtype + ("+autocast" if args.autocast else ""),
        recompute="block" if args.recompute else "none", compile=args.compile,
        threads=torch.get_num_threads(), params=params, trainable_params=sum(p.numel() for p in trainable),
        steps=args.steps, warmup=args.warmup, step_ms_median=med * 1e3, step_ms_min=min(times) * 1e3,
        step_ms_max=max(times) * 1e3, tokens_per_s=args.batch * args.seq / med, loss_first=losses[0],
        loss_last=losses[-1], max_rss_mb=max_rss_mb(), max_rss_build_mb=rss_build, build_s=build_s,
        lr=args.lr, clip=args.clip, torch=torch.__version__, transformers=transformers.__version__,
        peft=peft.__version__ if peft else None, python=sys.version.split()[0], cpu=cpu_model())
    report(args, out)


if __name__ == "__main__":
    main()
