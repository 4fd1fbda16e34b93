#!/usr/bin/env python3
"""Turns the SpamAssassin e-mails (lmforge data get spam-assassin) into instruction data in
Alpaca's format, for generative fine-tuning (train.task = "sft", configs/spam-sft.toml): each
e-mail's first characters as the input, the question as the instruction, "spam" or "ham" as
the response. The model answers in words; the test split's exact-match rate is its accuracy.

    python3 tools/make_spam_instructions.py --input ~/.cache/lmforge/spam-assassin/spam_assassin.jsonl \\
        --output data/spam_instructions.jsonl
    lmforge prepare --instructions --input data/spam_instructions.jsonl --max-len 512 --output data/spam-sft
"""
import argparse
import json

INSTRUCTION = "Is this e-mail spam or ham? Answer with one word."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", required=True, help="spam_assassin.jsonl")
    ap.add_argument("--output", required=True)
    ap.add_argument("--chars", type=int, default=700, help="characters of each e-mail kept (its start)")
    args = ap.parse_args()
    n = 0
    with open(args.input, encoding="utf-8") as src, open(args.output, "w", encoding="utf-8") as out:
        for line in src:
            mail = json.loads(line)
            text = mail["text"][: args.chars].strip()
            if not text:
                continue
            out.write(json.dumps({"instruction": INSTRUCTION, "input": text, "output": mail["label"]}) + "\n")
            n += 1
    print(f"wrote {n} examples to {args.output}")


if __name__ == "__main__":
    main()
