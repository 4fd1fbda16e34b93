#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzing harnesses, fuzz/corpus/<harness>/: small files of
each format as lmforge and other tools write them, and a few edge cases. Seeds that stand for
several files join them with the separator line of fuzz/fuzz_util.h. Deterministic: running
it again rewrites the same bytes.

    python3 tools/make_fuzz_corpus.py
"""
import gzip
import io
import json
import os
import shutil
import struct
import tarfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "fuzz", "corpus")
SEP = b"\n=====\n"  # fuzz::kPartSeparator
STRESS = open(os.path.join(ROOT, "tests/fixtures/tokenizer/unicode_stress.txt"), "rb").read()


def write(harness, name, data):
    os.makedirs(os.path.join(OUT, harness), exist_ok=True)
    with open(os.path.join(OUT, harness, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def parts(*files):
    return SEP.join(f if isinstance(f, bytes) else f.encode() for f in files)


# --- safetensors -------------------------------------------------------------------------

def safetensors(tensors, metadata=None, pad_to=8):
    """tensors: [(name, dtype, shape, bytes)] in data order."""
    header, offset, data = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((pad_to - len(text) % pad_to) % pad_to)
    return struct.pack("<Q", len(text)) + text + data


def make_safetensors():
    f32 = struct.pack("<6f", 0.5, -1, 2, 0, 3.25, -7)
    write("safetensors", "weights.safetensors", safetensors(
        [("h.0.attn.c_attn.bias", "F32", [6], f32), ("wte.weight", "F32", [2, 3], f32)],
        {"format": "pt", "lmforge_config": '{"arch": "gpt2", "n_layer": 1}'}))
    write("safetensors", "ints.safetensors", safetensors(
        [("inputs", "I32", [2, 2], struct.pack("<4i", 1, 2, 3, -4)), ("source", "I64", [2], struct.pack("<2q", 7, 8)),
         ("bf16", "BF16", [3], struct.pack("<3H", 0x3F80, 0xC000, 0x7F80)), ("mask", "BOOL", [2], b"\x01\x00")]))
    write("safetensors", "empty_tensor.safetensors", safetensors([("e", "F32", [0, 4], b""), ("s", "F32", [], f32[:4])]))
    write("safetensors", "no_tensors.safetensors", safetensors([], {"format": "pt"}))
    write("safetensors", "unpadded.safetensors", safetensors([("x", "U8", [3], b"abc")], pad_to=1))


# --- tokenizers --------------------------------------------------------------------------

def byte_alphabet():
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest shift to U+0100+."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, shifted = {}, 256
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(shifted)
            shifted += 1
    return table


def show(bs):
    alphabet = byte_alphabet()
    return "".join(alphabet[b] for b in bs)


MERGES = [(b" ", b"t"), (b"h", b"e"), (b" t", b"he"), (b"i", b"n"), (b" ", b"a"), (b"e", b"r"), (b" ", b"s"),
          (b"o", b"n"), (b"'", b"s"), (b"1", b"2")]


def vocab_and_merges():
    vocab = {show(bytes([b])): i for i, b in enumerate(range(256))}
    for a, b in MERGES:
        vocab.setdefault(show(a + b), len(vocab))
    merges = [f"{show(a)} {show(b)}" for a, b in MERGES]
    return vocab, merges


TEXT = "The theory of everything: it's in 12 parts, isn't it?  <|endoftext|> caf\u00e9 \u65e5\u672c\n"


def make_gpt2_files():
    vocab, merges = vocab_and_merges()
    eot = dict(vocab, **{"<|endoftext|>": len(vocab)})
    bpe = "#version: 0.2\n" + "\n".join(merges) + "\n"
    write("gpt2_files", "gpt2_style", parts(json.dumps(eot), bpe, "", TEXT))
    write("gpt2_files", "no_added_tokens", parts(json.dumps(eot), bpe))
    added = {"<|endoftext|>": len(vocab), "[PAD]": len(vocab) + 1, "<s> ": len(vocab) + 2}
    write("gpt2_files", "added_tokens", parts(json.dumps(eot), bpe, json.dumps(added), "[PAD]<s> x" + TEXT))
    write("gpt2_files", "crlf_bytes_only", parts(json.dumps({show(bytes([b])): b for b in range(256)}),
                                                 "#version: 0.2\r\n", "{}", b"\xff\xfe bytes"))


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def make_tokenizer_json():
    vocab, merges = vocab_and_merges()
    hf = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": len(vocab), "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": True, "special": True}],
          "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
          "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                    "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                    "vocab": vocab, "merges": [m.split(" ") for m in merges]}}
    write("tokenizer_json", "hf_bpe", parts(json.dumps(hf, indent=2, ensure_ascii=False), TEXT))
    hf["model"]["merges"] = merges  # older files: "a b" strings
    write("tokenizer_json", "hf_bpe_string_merges", parts(json.dumps(hf), TEXT))
    # Llama 3's pre-tokenizer (a regex Split, PCRE2) with ignore_merges and an added token that
    # is not special; SmolLM2's (Digits, then GPT-2's split).
    hf["model"]["merges"] = [m.split(" ") for m in merges]
    hf["model"]["ignore_merges"] = True
    hf["added_tokens"].append({"id": len(vocab) + 1, "content": "<tool>", "single_word": False, "lstrip": False,
                               "rstrip": False, "normalized": True, "special": False})
    hf["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    write("tokenizer_json", "hf_llama3", parts(json.dumps(hf, indent=1), TEXT + "<tool> 1234567\r\n"))
    hf["model"]["ignore_merges"] = False
    hf["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    write("tokenizer_json", "hf_smollm2", parts(json.dumps(hf, indent=1), TEXT + " 2024"))
    chars = {"lmforge_tokenizer": "char", "chars": sorted(set("hello world\n\u00e9\u65e5")),
             "special_tokens": {"<|endoftext|>": 10}}
    write("tokenizer_json", "char", parts(json.dumps(chars, indent=1), "hello w\u00e9rld\n"))


def make_texts(harness):
    write(harness, "unicode_stress.txt", STRESS)
    for i, line in enumerate(STRESS.split(b"\n")[:12]):
        if line:
            write(harness, f"line_{i:02d}.txt", line)
    write(harness, "specials.txt", "a<|endoftext|>b[CLS]x[SEP][PAD][MASK]<|endoftext|")
    write(harness, "invalid_utf8.bin", b"ab\xff\xfe cd \xc3 \xe6\x97 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf")
    write(harness, "spaces.txt", " \t\n \u00a0\u2003 x  \r\n\r\n  y   ")


# --- config ------------------------------------------------------------------------------

def make_config():
    for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        shutil.copy(os.path.join(ROOT, "configs", name), os.path.join(OUT, "config", name))
    write("config", "minimal_with_sets", parts('[data]\ndir = "data/x"\n', "optim.lr=3e-4", "train.task=sft",
                                               "log.tensorboard=false", "sample.prompt=Once upon a time"))
    write("config", "strings", '[data]\ndir = \'C:\\data\\x\'\ntokenizer = "tok\\u00e9\\n"\n[sample]\n'
                               'prompt = """multi\nline"""\ntemperature = 0\n[run]\ndir = "runs/\\"q\\""\n')


# --- JSONL and CSV -----------------------------------------------------------------------

def make_jsonl():
    write("jsonl", "labelled.jsonl", '{"text": "Win money now!!!", "label": "spam"}\n'
                                     '{"text": "Lunch at noon?", "label": "ham"}\n\n'
                                     '{"text": "caf\\u00e9 \\ud83d\\ude00", "label": 1}\r\n'
                                     '{"text": "ok", "label": true}\n')
    write("jsonl", "alpaca.jsonl", '{"instruction": "Add the numbers.", "input": "2 and 3", "output": "5"}\n'
                                   '{"instruction": "Say hi.", "input": "", "output": "Hi!"}\n')
    write("jsonl", "prompt_response.jsonl", '{"prompt": "Q: 1+1?\\nA:", "response": " 2"}\n'
                                            '{"prompt": "Q: sky?\\nA:", "response": " blue"}\n')
    write("jsonl", "documents.jsonl", '{"text": "First document."}\n{"text": ""}\n{"text": "Third", "id": 3}\n')


def make_csv():
    write("csv", "labelled.csv", 'text,label\n"Win money, now!!!",spam\nLunch at noon?,ham\n'
                                 '"multi\nline ""quoted""",ham\n')
    write("csv", "bom_crlf.csv", "\ufefflabel,text,extra\r\n1,caf\u00e9,x\r\n0,\"a,\"\"b\"\"\",y\r\n")
    write("csv", "blank_lines.csv", "text,label\n\nhello,  spaced  \n\n")


# --- shards ------------------------------------------------------------------------------

TOKENS = struct.pack("<8H", 464, 2068, 7586, 21831, 18045, 625, 262, 50256)


def npy(header_dict, data, major=1):
    header = header_dict
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode()
    size = struct.pack("<H", len(header)) if major == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + size + header + data


def make_shard():
    llmc = struct.pack("<256i", 20240520, 1, 8, *([0] * 253)) + TOKENS
    npy_header = "{'descr': '<u2', 'fortran_order': False, 'shape': (8,), }"
    write("shard", "npy_v1", b"\x00" + npy(npy_header, TOKENS))
    write("shard", "npy_v2", b"\x00" + npy(npy_header, TOKENS, major=2))
    write("shard", "llmc", b"\x01" + llmc)
    write("shard", "nanogpt_raw", b"\x02" + TOKENS)
    write("shard", "nanogpt_llmc_header", b"\x02" + llmc)
    write("shard", "llmc_empty", b"\x01" + struct.pack("<256i", 20240520, 1, 0, *([0] * 253)))


# --- checkpoints -------------------------------------------------------------------------

GPT2 = {"arch": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 32, "vocab_size": 64, "block_size": 16, "num_labels": 0}
BERT = {"arch": "bert", "n_layer": 2, "n_head": 2, "hidden": 32, "intermediate": 128, "vocab_size": 101,
        "max_position": 64, "type_vocab_size": 2, "num_labels": 3, "layer_norm_eps": 1e-12}


def make_checkpoint_state():
    state = {"task": "classify", "step": 40, "optimizer_steps": 40,
             "data": {"epoch": 1, "position": 128, "order_seed": 1337},
             "best_metric": -0.9375, "best_loss": 0.21, "best_step": 30,
             "epoch_loss": {"sum": 12.5, "count": 64, "correct": 50}, "tokens_seen": 81920,
             "train_seconds": 12.75, "global_batch": 16, "max_steps": 80, "eval_sequences": 32,
             "data_fingerprint": "sha256:0f1e2d3c", "model": GPT2}
    write("checkpoint_state", "classify.json", json.dumps(state, indent=2) + "\n")
    lm = dict(state, task="lm", best_metric=None, best_loss=None, best_step=-1, data={"loader": {"shard": 0}})
    write("checkpoint_state", "lm_nulls.json", json.dumps(lm))
    older = {"step": 100, "optimizer_steps": 100, "loader": {"shard": 1, "position": 4096},
             "sample_rng": [1, 2, 3, 4], "best_val_loss": 3.5, "batch_tokens": 8192, "tokens_seen": 819200,
             "train_seconds": 60.5}
    write("checkpoint_state", "older.json", json.dumps(older))


def make_checkpoint_model():
    write("checkpoint_model", "gpt2.json", json.dumps(GPT2))
    write("checkpoint_model", "gpt2_classifier.json", json.dumps(dict(GPT2, num_labels=2)))
    write("checkpoint_model", "bert.json", json.dumps(BERT))
    write("checkpoint_model", "no_arch.json", json.dumps({k: v for k, v in GPT2.items() if k != "arch"}))


def make_hf_config():
    hf = os.path.join(ROOT, "tests/fixtures/hf")
    for name in sorted(os.listdir(hf)):
        config = os.path.join(hf, name, "config.json")
        if os.path.exists(config):
            shutil.copy(config, os.path.join(OUT, "hf_config", name + ".json"))
    write("hf_config", "gpt2_minimal.json", json.dumps({"model_type": "gpt2", "n_layer": 1, "n_head": 1, "n_embd": 8,
                                                        "vocab_size": 10, "n_positions": 4}))


def make_prepared_data():
    lm = {"task": "lm", "inputs": ["data/moby.txt"], "tokenizer": "gpt2", "tokenizer_kind": "bpe",
          "vocab_size": 50257, "eot_id": 50256, "val_fraction": 0.1, "split": "documents", "seed": 1337,
          "documents": {"train": 9, "val": 1}, "tokens": {"train": 4, "val": 0}, "shards": ["train_000000.bin"],
          "bytes": 1234}
    labels = {"labels": ["ham", "spam"], "pad_id": 50256, "max_len": 256}
    instructions = {"format": "alpaca", "pad_id": 50256, "max_len": 256, "truncated": 3}
    write("prepared_data", "lm", parts(json.dumps(lm, indent=2)))
    write("prepared_data", "classify", parts(json.dumps(dict(lm, task="classify", eot_id=None)), json.dumps(labels)))
    write("prepared_data", "sft", parts(json.dumps(dict(lm, task="sft")), "", json.dumps(instructions, indent=2)))
    write("prepared_data", "small_vocab", parts(json.dumps({"vocab_size": 500, "eot_id": 499})))


# --- tar.gz ------------------------------------------------------------------------------

def tar(fmt, entries):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as t:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1700000000, 0o644
            t.addfile(info, io.BytesIO(data))
        d = tarfile.TarInfo("package/dir")
        d.type, d.mtime = tarfile.DIRTYPE, 1700000000
        t.addfile(d)
    return out.getvalue()


def make_tar_gz():
    long = "package/" + "long_directory_name/" * 6 + "data.txt"
    entries = [("package/package.json", b'{"name": "x"}\n'), ("package/data/data.txt", b"hello\n" * 3), (long, b"x")]
    for fmt, name in [(tarfile.USTAR_FORMAT, "ustar"), (tarfile.PAX_FORMAT, "pax"), (tarfile.GNU_FORMAT, "gnu")]:
        raw = tar(fmt, entries if fmt != tarfile.USTAR_FORMAT else entries[:2])
        write("tar_gz", name + ".tar", b"\x01" + raw)  # odd first byte: the harness gzips it
        write("tar_gz", name + ".tar.gz", b"\x00" + gzip.compress(raw, mtime=0))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for harness in ["config", "hf_config"]:
        os.makedirs(os.path.join(OUT, harness))
    make_safetensors()
    make_gpt2_files()
    make_tokenizer_json()
    make_texts("bpe")
    make_texts("pretokenizer")
    make_config()
    make_jsonl()
    make_csv()
    make_shard()
    make_checkpoint_state()
    make_checkpoint_model()
    make_hf_config()
    make_prepared_data()
    make_tar_gz()


if __name__ == "__main__":
    main()
