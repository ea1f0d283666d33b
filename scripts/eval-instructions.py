#!/usr/bin/env python3
"""Greedy answers of a model to held-out instruction examples (docs/fine-tuning.md).

    scripts/eval-instructions.py RUN data/kjv-instruct.jsonl [--val-fraction 0.05] [--rfa build/rfa]

The held-out examples are the validation split `rfa data prepare` makes of the file: its last
floor(D x val_fraction) examples (D = the non-blank lines). Each is answered by
`rfa generate RUN --instruction I [--input X] --greedy -n N` (the run's template; --template for
a model not tuned on instructions), and the script reports, per task (the instruction) and in
all:
  - stop: the share of answers that ended with the end-of-sequence token before N tokens;
  - exact: the share whose text (up to EOS, spaces at the ends trimmed) is the expected output;
  - first word: the share whose first word is the expected output's first word.
Python's standard library only; prints a table, or one JSON object with --json.
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", help="run directory or checkpoint")
    p.add_argument("data", help="the JSON Lines file of alpaca examples the run was tuned on")
    p.add_argument("--val-fraction", type=float, default=0.05, help="data.val_fraction of the run (default 0.05)")
    p.add_argument("--rfa", default=os.path.join(os.path.dirname(__file__), "..", "build", "rfa"))
    p.add_argument("-n", type=int, default=64, help="tokens to generate at most (default 64)")
    p.add_argument("--template", default="", help="alpaca|alpaca_short for a model not tuned on instructions")
    p.add_argument("--threads", default="1")
    p.add_argument("--limit", type=int, default=0, help="answer only the first N held-out examples")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()

    with open(a.data, encoding="utf-8") as f:
        examples = [json.loads(line) for line in f if line.strip()]
    held = examples[len(examples) - int(len(examples) * a.val_fraction):]
    if a.limit:
        held = held[: a.limit]
    stats = {}
    for ex in held:
        cmd = [a.rfa, "--threads", a.threads, "generate", a.run, "--instruction", ex["instruction"], "--greedy",
               "-n", str(a.n)]
        if ex.get("input"):
            cmd += ["--input", ex["input"]]
        if a.template:
            cmd += ["--template", a.template]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
        if r.returncode != 0:
            sys.exit(f"rfa generate failed ({r.returncode}): {r.stderr.strip()}")
        answer = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout  # rfa generate ends with one newline
        stopped = "1 of 1 sample(s) stopped at the end-of-sequence token" in r.stderr
        want = ex["output"].strip()
        got = answer.strip()
        s = stats.setdefault(ex["instruction"], {"examples": 0, "stop": 0, "exact": 0, "first_word": 0})
        s["examples"] += 1
        s["stop"] += stopped
        s["exact"] += got == want
        s["first_word"] += bool(got.split()) and got.split()[0] == want.split()[0]
    total = {"examples": 0, "stop": 0, "exact": 0, "first_word": 0}
    for s in stats.values():
        for k in total:
            total[k] += s[k]
    stats["all"] = total
    if a.json:
        print(json.dumps({"run": a.run, "data": a.data, "tasks": stats}))
        return
    print(f"{'task':50} {'examples':>8} {'stop':>7} {'exact':>7} {'1st word':>8}")
    for task, s in stats.items():
        n = s["examples"]
        print(f"{task[:50]:50} {n:8d} {s['stop'] / n:7.1%} {s['exact'] / n:7.1%} {s['first_word'] / n:8.1%}")


if __name__ == "__main__":
    main()
