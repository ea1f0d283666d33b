#!/usr/bin/env python3
"""How many key-value pairs one RFA head's state can give back, with ideal keys and values.

An upper bound for the MQAR task (docs/recall.md), apart from learning: P keys far apart in R^Dh
(so their Gaussian kernel is ~0), trig random features phi(k) = [sin Wk, cos Wk] / sqrt(D) as RFA
draws them (|phi| = 1), values random vectors in R^Dh (a head's value width) chosen among 256
candidates (the answer vocabulary). The state is written by the delta rule (beta 1, in order) or by
plain addition (linear attention without a gate), then each key is read back and decoded to the
nearest candidate. Prints the fraction of pairs recalled, mean of 20 draws. numpy only; optional
(not part of the test suite). Usage: scripts/mqar-capacity.py
"""
import numpy as np


def recall(rng, D, P, Dh=32, candidates=256):
    W = rng.standard_normal((D, Dh))
    K = rng.standard_normal((P, Dh)) * 3.0
    phi = np.concatenate([np.sin(K @ W.T), np.cos(K @ W.T)], axis=1) / np.sqrt(D)
    cand = rng.standard_normal((candidates, Dh))
    idx = rng.choice(candidates, P, replace=False)
    V = cand[idx]
    delta = np.zeros((Dh, 2 * D))
    added = np.zeros((Dh, 2 * D))
    for i in range(P):
        delta += np.outer(V[i] - delta @ phi[i], phi[i])
        added += np.outer(V[i], phi[i])
    out = []
    for S in (delta, added):
        R = phi @ S.T
        d = ((R[:, None, :] - cand[None, :, :]) ** 2).sum(-1)
        out.append(np.mean(np.argmin(d, axis=1) == idx))
    return out


def main():
    rng = np.random.default_rng(0)
    print("D (features F = 2D)  pairs  delta rule  additive")
    for D in (16, 32, 64, 128):
        for P in (8, 16, 64):
            r = np.mean([recall(rng, D, P) for _ in range(20)], axis=0)
            print(f"{D:3d} ({2 * D:3d})            {P:3d}    {r[0]:.3f}       {r[1]:.3f}")


if __name__ == "__main__":
    main()
