#!/usr/bin/env python3
"""Slot-Filling against torch's 2:4 sparse path (cuSPARSELt, or CUTLASS where torch has no cuSPARSELt) and dense
cuBLAS, through torch on the GPU machine, on the same matrices:

    SPTUNE_LIB=build-static/prefix/lib/libsptune.so.0.5 PYTHONPATH=python \\
        python3 bench/experiments/slotfill-peer.py [--shapes 14336x4096,...] [--tokens 64,...,8192] [--prune 2:4,rows]

Per shape, W (M x K, bf16, N(0, 0.02) with 1 % outlier input channels 8x larger) pruned 2:4 (the 2 largest |w|
of every 4 along K) or per row to 50 % (rows: the bitmap layout; torch has no peer for it). sptune runs as an
engine would: sptune.slotfill_linear(W) without a dense copy, the kernel served for each batch from the shipped
results. The peer: torch.sparse.to_sparse_semi_structured(W) in F.linear. Every output checked against the fp32
product (relative error of the whole output). Times: CUDA events, at least 3 calls and 20 ms of warm-up, the
median of 15 calls each between its own events, the implementations taken in turn. Needs torch with CUDA; the
peer's rows say "n/a" where torch refuses the shape or has no semi-structured support. Prints a markdown table."""
import argparse
import statistics
import sys

import torch


def timed(fn, calls=15):
    t0 = torch.cuda.Event(enable_timing=True)
    t1 = torch.cuda.Event(enable_timing=True)
    n, spent = 0, 0.0
    while n < 3 or spent < 20.0:   # warm-up
        t0.record(); fn(); t1.record(); t1.synchronize()
        spent += t0.elapsed_time(t1); n += 1
    ms = []
    for _ in range(calls):
        t0.record(); fn(); t1.record(); t1.synchronize()
        ms.append(t0.elapsed_time(t1))
    return statistics.median(ms)


def pruned(M, K, kind, g):
    w = torch.randn(M, K, device="cuda", generator=g) * 0.02
    w[:, torch.randperm(K, device="cuda", generator=g)[:max(1, K // 100)]] *= 8
    if kind == "2:4":
        a = w.abs().view(M, K // 4, 4)
        keep = torch.zeros_like(a, dtype=torch.bool).scatter_(2, a.topk(2, dim=2).indices, True)
        w = w * keep.view(M, K)
    else:
        thr = w.abs().kthvalue(K // 2, dim=1, keepdim=True).values
        w = torch.where(w.abs() > thr, w, torch.zeros_like(w))
    return w.to(torch.bfloat16)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="14336x4096,4096x14336,4096x4096,1024x4096")
    p.add_argument("--tokens", default="64,256,1024,2048,4096,8192")
    p.add_argument("--prune", default="2:4,rows")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("slotfill-peer: no CUDA device", file=sys.stderr)
        return 3
    import sptune
    g = torch.Generator(device="cuda").manual_seed(7)
    rows, failed = [], 0
    for shape in a.shapes.split(","):
        M, K = (int(v) for v in shape.split("x"))
        for kind in a.prune.split(","):
            w = pruned(M, K, kind, g)
            layer = sptune.slotfill_linear(w)
            peer = None
            if kind == "2:4":
                try:
                    peer = torch.sparse.to_sparse_semi_structured(w)
                except Exception as e:   # no semi-structured support for this shape or build
                    print(f"peer {shape}: {e}", file=sys.stderr)
            for N in (int(v) for v in a.tokens.split(",")):
                x = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
                ref = x.float() @ w.float().t()
                impl = {"dense": lambda: torch.nn.functional.linear(x, w), "sptune": lambda: layer(x)}
                if peer is not None:
                    impl["peer"] = lambda: torch.nn.functional.linear(x, peer)
                err, ms = {}, {}
                for name, fn in impl.items():
                    try:
                        y = fn()
                        torch.cuda.synchronize()
                        err[name] = ((y.float() - ref).norm() / ref.norm()).item()
                    except Exception as e:
                        print(f"{name} {shape} N={N}: {e}", file=sys.stderr)
                for name, fn in impl.items():   # in turn, after every check
                    if name in err:
                        ms[name] = timed(fn)
                bad = [n for n, e in err.items() if e > 1e-2]
                failed += len(bad)
                k = layer.kernel_for(N)[0]
                peer_cell = (f"{ms['peer']:.4f} ({ms['dense'] / ms['peer']:.2f}x)" if "peer" in ms else "n/a")
                rows.append(f"| {shape} | {kind} | {N} | {ms['dense']:.4f} | {ms['sptune']:.4f} "
                            f"({ms['dense'] / ms['sptune']:.2f}x) | {peer_cell} | "
                            f"{max(err.values()):.1e}{' FAILED ' + ','.join(bad) if bad else ''} | "
                            f"{k.config if hasattr(k, 'config') else ''} |")
                print(rows[-1], flush=True)
            del layer, peer
            torch.cuda.empty_cache()
    print("\n| W (M x K) | pruning | N | dense ms | sptune ms (x dense) | torch 2:4 ms (x dense) | max err | sptune config |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
