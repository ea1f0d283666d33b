#!/usr/bin/env python3
"""How many key-value pairs one RFA head's state can give back, with the keys RFA sees.

An upper bound for the MQAR task (docs/recall.md), apart from learning: P random keys in R^Dh, l2-normalised
as RFA normalises q and k, scaled by sigma (the learned per-head inverse temperature, `attention.sigma_init`,
default 1) and mapped by RFA's trig random features phi(k) = [sin W(sigma k), cos W(sigma k)] / sqrt(D)
(|phi| = 1; E[phi(x).phi(y)] = exp(-sigma^2 |x - y|^2 / 2)). Values are random vectors in R^Dh (a head's
value width) chosen among 256 candidates (the answer vocabulary). The state is written by plain addition
and read with RFA's denominator (rfa, rfa_gate without decay), or by the delta rule (beta 1, in order,
no denominator: rfa_delta); each key is read back and decoded to the nearest candidate. Prints the fraction
of pairs recalled, mean of 20 draws. numpy only (Debian's python3-numpy); optional, not in the test suite.
Usage: scripts/mqar-capacity.py
"""
import numpy as np


def recall(rng, D, P, sigma, Dh=32, candidates=256):
    W = rng.standard_normal((D, Dh))
    K = rng.standard_normal((P, Dh))
    K /= np.linalg.norm(K, axis=1, keepdims=True)
    u = K @ (sigma * W).T
    phi = np.concatenate([np.sin(u), np.cos(u)], axis=1) / np.sqrt(D)
    cand = rng.standard_normal((candidates, Dh))
    idx = rng.choice(candidates, P, replace=False)
    V = cand[idx]
    added = V.T @ phi                 # (Dh, 2D): sum of v phi^T
    delta = np.zeros((Dh, 2 * D))
    for i in range(P):
        delta += np.outer(V[i] - delta @ phi[i], phi[i])
    read_added = (phi @ added.T) / (phi @ phi.sum(axis=0))[:, None]
    read_delta = phi @ delta.T
    out = []
    for R in (read_added, read_delta):
        d = ((R[:, None, :] - cand[None, :, :]) ** 2).sum(-1)
        out.append(np.mean(np.argmin(d, axis=1) == idx))
    return out


def main():
    rng = np.random.default_rng(0)
    print("D (F = 2D)  pairs  sigma  additive  delta rule")
    for D in (32, 64):
        for P in (16, 64):
            for sigma in (1, 2, 3, 4):
                r = np.mean([recall(rng, D, P, sigma) for _ in range(20)], axis=0)
                print(f"{D:3d} ({2 * D:3d})   {P:3d}    {sigma:3d}    {r[0]:.3f}     {r[1]:.3f}")


if __name__ == "__main__":
    main()
