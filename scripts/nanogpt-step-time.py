#!/usr/bin/python3
"""Times nanoGPT's training step on the CPU at one shape, for scripts/bench-vs-nanogpt.sh.

Imports GPT and GPTConfig from the model.py of a nanoGPT checkout the caller names
(nothing of nanoGPT is part of rfa), builds the model at the given shape with fp32,
no dropout and no biases (nanoGPT's train.py defaults), and times what one step of
its train.py does: forward with loss, backward, gradient clipping at 1.0, AdamW
(its configure_optimizers) and zero_grad, on random tokens. Prints one line:
    median_ms=<median over the timed steps> min_ms=<fastest> cpu_ms=<median CPU time of the process per step>
    steps=<n> threads=<n>
(CPU time counts every thread and not the time other processes held the cores: the steadier
figure on a shared machine, with OMP_WAIT_POLICY=passive so idle threads do not spin.)
"""
import argparse
import os
import statistics
import sys
import time


def blas_check(torch):
    """Refuses a comparison against the reference BLAS: Debian's python3-torch calls its products
    through libblas.so.3, which is netlib's unoptimised BLAS unless an optimised one provides it.
    Found on a fresh machine: nanoGPT ran 12x slower (758 ms a step at nano), a ratio that would
    flatter rfa by as much."""
    torch.ones(64, 64) @ torch.ones(64, 64)  # loads the BLAS if it is loaded lazily
    with open("/proc/self/maps") as maps:
        libs = {line.split()[-1] for line in maps if "blas" in line.split()[-1].lower()}
    # netlib's libblas.so.3 lives in .../blas/; OpenBLAS's in .../openblas-*/ (its LAPACK may be
    # loaded beside the reference BLAS, so the BLAS itself is what is checked).
    reference = sorted(lib for lib in libs
                       if os.path.basename(lib).startswith("libblas.so") and os.path.basename(os.path.dirname(lib)) == "blas")
    if reference:
        sys.exit("nanogpt-step-time: PyTorch's products run in the reference BLAS (" + ", ".join(reference)
                 + "), not an optimised one, so nanoGPT would be timed many times too slow; install OpenBLAS "
                 "(Debian: apt-get install libopenblas0-openmp) and run again")
    print("blas=" + ",".join(sorted(libs)) if libs else "blas=(linked into torch)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("nanogpt_dir", help="a nanoGPT checkout (the directory holding model.py)")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--context", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("nanogpt-step-time: PyTorch is not installed (Debian: apt-get install python3-torch)")
    sys.path.insert(0, a.nanogpt_dir)
    try:
        from model import GPT, GPTConfig
    except ImportError as e:
        sys.exit(f"nanogpt-step-time: no nanoGPT model.py in {a.nanogpt_dir}: {e}")

    torch.manual_seed(1337)
    torch.set_num_threads(a.threads)
    blas_check(torch)
    config = GPTConfig(block_size=a.context, vocab_size=a.vocab, n_layer=a.layers, n_head=a.heads,
                       n_embd=a.width, dropout=0.0, bias=False)
    model = GPT(config)
    model.train()
    optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cpu")
    x = torch.randint(a.vocab, (a.batch, a.context))
    y = torch.randint(a.vocab, (a.batch, a.context))
    times, cpu = [], []
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        c0 = time.process_time()
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        ms = (time.perf_counter() - t0) * 1e3
        cpu_ms = (time.process_time() - c0) * 1e3
        if step >= a.warmup:
            times.append(ms)
            cpu.append(cpu_ms)
    print(f"median_ms={statistics.median(times):.2f} min_ms={min(times):.2f} cpu_ms={statistics.median(cpu):.2f} "
          f"steps={a.steps} threads={torch.get_num_threads()}")


if __name__ == "__main__":
    main()
