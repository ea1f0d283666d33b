#!/usr/bin/python3
"""Draws the loss curves of one or more rfa runs into one PNG.

    scripts/plot-runs.py RUN [RUN ...] [-o FILE.png] [--title TEXT] [--smooth N]

Left panel: loss against optimizer step; right panel: loss against wall time (minutes, as
recorded in metrics.jsonl, so a resumed run continues its clock). Each run has one colour;
its training loss is the thin line, its validation loss (every evaluation) the markers.
Runs are labelled "name (attention kind)", the kind read from RUN/config.yaml.

Debian's python3-matplotlib (scripts/install-deps.sh installs it) draws; it is a script and not
an `rfa plot` subcommand because a plotting library is the one thing the C++ tool has no
business carrying, and matplotlib is the well-kept one every reader already knows.
"""

import argparse
import json
import os
import sys


def fail(message):
    print(f"plot-runs: {message}", file=sys.stderr)
    sys.exit(2)


def attention_kind(run_dir):
    """attention.kind from the run's resolved config (nested `attention:` / `kind:` or flat key)."""
    path = os.path.join(run_dir, "config.yaml")
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        return "?"
    section = ""
    for line in lines:
        text = line.split("#", 1)[0].rstrip()
        if not text.strip():
            continue
        if not line[0].isspace():
            key, _, value = text.partition(":")
            section = key.strip()
            if section == "attention.kind":
                return value.strip().strip("'\"")
            continue
        key, _, value = text.strip().partition(":")
        if section == "attention" and key.strip() == "kind":
            return value.strip().strip("'\"")
    return "?"


def read_metrics(run_dir):
    """(train, val): lists of (step, elapsed_s, loss) from RUN/metrics.jsonl."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isdir(run_dir):
        fail(f"'{run_dir}' is not a directory; give a run directory (train.run_dir of a run)")
    if not os.path.isfile(path):
        fail(f"'{path}' does not exist; is '{run_dir}' a run directory that has logged a step?")
    train, val = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
                step, elapsed = int(row["step"]), float(row["elapsed_s"])
                if row.get("type") == "train":
                    train.append((step, elapsed, float(row["loss"])))
                elif row.get("type") == "eval":
                    val.append((step, elapsed, float(row["val_loss"])))
            except (ValueError, KeyError, TypeError) as e:
                # A run killed mid-write can leave one torn last line; anything else is a damaged file.
                print(f"plot-runs: {path}:{number}: skipped an unreadable line ({e})", file=sys.stderr)
    if not train and not val:
        fail(f"'{path}' holds no train or eval lines yet")
    return train, val


def smoothed(values, window):
    """Trailing mean over `window` points (window 1 = as logged)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    parser = argparse.ArgumentParser(description="Plot train and validation loss of rfa runs.")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories (train.run_dir)")
    parser.add_argument("-o", "--output", default="loss.png", help="PNG file to write (default: loss.png)")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument("--smooth", type=int, default=1, metavar="N",
                        help="trailing mean over N logged train points (default 1: as logged)")
    args = parser.parse_args()
    if args.smooth < 1:
        fail(f"--smooth is {args.smooth}; it must be >= 1 (1 = no smoothing)")
    if not args.output.lower().endswith(".png"):
        fail(f"-o '{args.output}': the output is a PNG file; name it *.png")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        fail(f"-o '{args.output}': the directory '{out_dir}' does not exist")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is missing: run scripts/install-deps.sh (Debian package python3-matplotlib)")

    runs = [(os.path.basename(os.path.normpath(r)), attention_kind(r), *read_metrics(r)) for r in args.runs]

    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, kind, train, val) in enumerate(runs):
        colour = colours[i % len(colours)]
        label = f"{name} ({kind})"
        if train:
            steps, times, losses = zip(*train)
            losses = smoothed(list(losses), args.smooth)
            by_step.plot(steps, losses, color=colour, linewidth=0.8, alpha=0.55, label=f"{label} train")
            by_time.plot([t / 60 for t in times], losses, color=colour, linewidth=0.8, alpha=0.55)
        if val:
            steps, times, losses = zip(*val)
            by_step.plot(steps, losses, color=colour, marker="o", markersize=4, linewidth=1.6,
                         label=f"{label} val")
            by_time.plot([t / 60 for t in times], losses, color=colour, marker="o", markersize=4, linewidth=1.6)

    by_step.set_xlabel("optimizer step")
    by_time.set_xlabel("wall time (minutes)")
    by_step.set_ylabel("loss (nats per token)")
    for axes in (by_step, by_time):
        axes.grid(True, alpha=0.3)
    by_step.legend(fontsize=8, loc="upper right")
    fig.suptitle(args.title or "training (thin) and validation (markers) loss")
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output} ({len(runs)} run{'s' if len(runs) != 1 else ''})")


if __name__ == "__main__":
    main()
