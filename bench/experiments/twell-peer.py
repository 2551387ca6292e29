#!/usr/bin/env python3
"""twell-ffn side by side with the SakanaAI TwELL gated MLP, on the GPU machine:

    SPTUNE_LIB=build-static/prefix/lib/libsptune.so.0.5 PYTHONPATH=python \
        python3 bench/experiments/twell-peer.py [--peer PATH] [--shapes 4096x2048x5632,...] [--nnz 40]

PATH: a checkout of github.com/SakanaAI/sparser-faster-llms (MIT), kept outside this repository (never
committed); its custom_models/twell_modules is built by torch's extension loader on first use. Without it the
run times sptune against the dense baseline alone.

One data set per shape, shared by everyone: activations like real ReLU FFNs' (the recipe of
tuner/sp_twell_dist.c: heavy-tailed firing rates rank^-0.7 over shuffled ranks, 30 % dead neurons, 0.5 %
dense tokens of ~2000 active neurons, token 0 among them; nnz = the batch mean including them). Each
implementation gets the same layer: the peer and the torch baseline the weights as drawn, sptune the
rows of Wg, Wu and Wd in the order its hot/cold split wants (calibrated on every fourth token, the most
frequent neuron first, as sptune_twell_hot_order computes): the same function. Every output is checked
against the fp32 reference (gate rounded to bf16 as the kernels store it): the relative error of the
whole output and the outputs off by more than 2^-7 |ref| + 1e-3 rms(ref) + the bf16 rounding allowance of
h (the tuner's check, tuner/sp_case_twell_ffn.c). --gen 1 makes the activations by the layer instead (the tuner's
second generator: Gaussian tokens of log-normal gains, sigma --spread, through gate weights whose biases set the
rates). --describe: sptune's kernels are those served for the layer described from its first 4096 tokens
(sptune.describe_twell), the engine's path on data unlike the default's. sptune.twell_ffn(autotune=True) rows:
autotuned on their first call (the check's), which prints what it chose, into a fresh database unless --db says
otherwise (one run's records served to the next would measure the records, not the served kernels). Times: CUDA
events, in three rounds that take the implementations in turn (each round starting one further along, at least 3
calls and 20 ms of unmeasured warm-up before each one's samples), so that none is timed only right after another's
heavy run: per call (the median of 21 calls, each between its own events: the host's work before the first kernel
counts) and back to back (the median of 6 groups of 7 calls between one pair of events: the kernels' own time).
--profile adds, per implementation, its kernels' times under torch's profiler (their sum against the back-to-back
time: what the gaps between kernels cost) and the SM clock it ran at (NVML).
Prints a markdown table last."""
import argparse
import importlib.util
import math
import os
import sys

import torch


def activations(M, D, F, nnz, seed, dead=0.30, tail=0.7, dense=0.005, dense_nnz=2000.0, gen=0, spread=0.5):
    """X (M x D) and Wg (F x D), bf16, so that relu(X Wg^T) fires as described above (gen 1: made by the layer)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    is_dead = torch.rand(F, generator=g) < dead
    weight = (1.0 + torch.randint(0, F, (F,), generator=g).double()) ** -tail
    weight[is_dead] = 0
    ndense = max(1, math.ceil(M * dense)) if dense > 0 else 0
    rows = torch.zeros(M, dtype=torch.bool)
    if ndense:
        rows[0] = True
        rows[1 + torch.randperm(M - 1, generator=g)[: ndense - 1]] = True
    normal = torch.distributions.Normal(0.0, 1.0)
    count_dense = dense_nnz
    for _ in range(2):   # ordinary rates so that the batch mean is nnz (dense tokens as achieved)
        ordinary = (nnz * M - ndense * count_dense) / max(M - ndense, 1)
        if ordinary < 0.25:
            raise SystemExit(f"nnz={nnz} is below what the dense tokens alone give at M={M}")
        lo, hi = 0.0, 1.0
        while (hi * weight).clamp(max=0.95).sum() < ordinary:
            hi *= 2
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if (mid * weight).clamp(max=0.95).sum() < ordinary else (lo, mid)
        prob = (hi * weight).clamp(max=0.95)
        z = torch.where(is_dead, torch.full_like(prob, -8.0), normal.icdf(prob.clamp(min=1e-12)))
        a, b = -1.1, 1.0   # dense tokens fire live neuron j with Phi(lambda z_j)
        for _ in range(60):
            mid = 0.5 * (a + b)
            s = normal.cdf(mid * z[~is_dead]).sum().item()
            a, b = (mid, b) if s > dense_nnz else (a, mid)
        lam = 0.5 * (a + b)
        count_dense = normal.cdf(lam * z[~is_dead]).sum().item()
    if gen == 1:
        return layer_made(M, D, g, is_dead, z, prob, rows, dense_nnz, spread)
    cd = math.copysign(math.sqrt(lam * lam / (16 - 12 * lam * lam)), lam)
    c = torch.where(rows, torch.tensor(cd, dtype=torch.float64), torch.tensor(0.5, dtype=torch.float64))
    X = c[:, None] + torch.rand(M, D, generator=g, dtype=torch.float64) - 0.5
    X[:, 0] = 1.0   # the dead neurons' bias input
    u = z * (math.sqrt(D) / 3.0) / (D / 2.0)
    Wg = u[:, None] + torch.rand(F, D, generator=g, dtype=torch.float64) * 2 - 1
    Wg[:, 0] = torch.where(is_dead, torch.tensor(-1e3, dtype=torch.float64), Wg[:, 0])
    return X.to(torch.bfloat16), Wg.to(torch.bfloat16)


def layer_made(M, D, g, is_dead, z, prob, rows, dense_nnz, spread, gains=24):
    """The tuner's second generator (gen=1, tuner/sp_twell_dist.c): x = (1, a n), n ~ N(0, I), the gain a
    log-normal (sigma `spread`) for ordinary tokens and large for dense ones; Wg[j] = (c z_j, w_j), w_j ~ N(0, I /
    (D - 1)), so that neuron j fires with Phi(c z_j / a): the activations come out of the layer, some tokens far
    busier than others. c gives the ordinary tokens the rates' mean count over their gains."""
    normal = torch.distributions.Normal(0.0, 1.0)
    live = z[~is_dead]
    q = torch.exp(spread * normal.icdf((torch.arange(gains, dtype=torch.float64) + 0.5) / gains)).tolist()
    target = prob[~is_dead].sum().item()

    def count(c, a):
        return normal.cdf(c * live / a).sum().item()

    lo, hi = 0.05, 20.0
    for _ in range(50):   # a larger c, rarer firing
        c = math.sqrt(lo * hi)
        lo, hi = (c, hi) if sum(count(c, a) for a in q) / gains > target else (lo, c)
    c = math.sqrt(lo * hi)
    glo, ghi = 1.0, 1000.0
    for _ in range(50):   # the dense tokens' gain: dense_nnz (past about half the live neurons no gain reaches)
        a = math.sqrt(glo * ghi)
        glo, ghi = (a, ghi) if count(c, a) < dense_nnz else (glo, a)
    gain = torch.exp(spread * torch.randn(M, generator=g, dtype=torch.float64)).clamp(max=1000.0)
    gain[rows] = math.sqrt(glo * ghi)
    X = gain[:, None] * torch.randn(M, D, generator=g, dtype=torch.float64)
    X[:, 0] = 1.0
    Wg = torch.randn(z.numel(), D, generator=g, dtype=torch.float64) / math.sqrt(D - 1)
    Wg[:, 0] = torch.where(is_dead, torch.tensor(-16384.0, dtype=torch.float64), c * z)
    return X.to(torch.bfloat16), Wg.to(torch.bfloat16)


def reference(x, wg, wu, wd):
    g = torch.relu(x.float() @ wg.float().T).to(torch.bfloat16).float()
    h = g * (x.float() @ wu.float().T)
    allow = 2.0 ** -6 * torch.sqrt((h * h) @ (wd.float() * wd.float()))
    return h @ wd.float(), allow, (g > 0).sum(1).float().mean().item()


def check(y, ref, allow):
    d = (y.float() - ref).abs()
    rms = ref.pow(2).mean().sqrt()
    bad = (~torch.isfinite(y.float())) | (d > 2.0 ** -7 * ref.abs() + 1e-3 * rms + allow)
    return ((y.float() - ref).norm() / ref.norm()).item(), int(bad.sum().item())


class SmClock:
    """The SM clock (MHz) sampled through NVML every ~2 ms by a thread, credited to the implementation named in
    `now` (None: not sampled): a card that runs power-limited under a sustained load slows whatever runs then, and
    which clock each implementation ran at tells a slower kernel from a slower card. No NVML: no samples."""

    def __init__(self, index):
        import ctypes
        import threading
        self.now, self.samples, self.stop = None, {}, threading.Event()
        try:
            nv = ctypes.CDLL("libnvidia-ml.so.1")
            dev = ctypes.c_void_p()
            if nv.nvmlInit_v2() != 0 or nv.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(dev)) != 0:
                raise OSError("nvml")
        except OSError:
            self.thread = None
            return

        def run():
            mhz = ctypes.c_uint()
            while not self.stop.wait(0.002):
                n = self.now
                if n is not None and nv.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(mhz)) == 0:   # NVML_CLOCK_SM
                    self.samples.setdefault(n, []).append(mhz.value)
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def mean(self, name):
        v = self.samples.get(name)
        return f"{sum(v) / len(v):.0f} MHz ({len(v)} samples)" if v else "not sampled"

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join()


def profiled(fns, reps=7):
    """{name: [(kernel, µs per call)]}: each implementation's kernels under torch's profiler (CUPTI sees the
    driver-API launches of libsptune too), reps calls after one unprofiled, run right after the timed rounds
    (the card in the same state)."""
    from torch.profiler import ProfilerActivity, profile
    out = {}
    for n, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                fn()
            torch.cuda.synchronize()
        rows = []
        for e in prof.key_averages():
            if str(getattr(e, "device_type", "")).endswith("CUDA"):
                us = getattr(e, "self_device_time_total", None)
                if us is None:
                    us = e.self_cuda_time_total
                rows.append((e.key, us / reps))
        out[n] = sorted(rows, key=lambda r: -r[1])
    return out


def timed(fns, rounds=3, reps=7, clock=None):
    """{name: (per call, back to back)} in ms for the implementations fns ({name: fn}), in rounds that take them in
    turn (round r starts at the r-th): per call, the median of rounds x reps calls each between its own events (the
    host's launch work before the first kernel counts, as for one layer called alone); back to back, the median of
    rounds x 2 groups of reps calls between one pair of events (the host launches ahead: the kernels' own time)."""
    names = list(fns)
    per, b2b = {n: [] for n in names}, {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            # after another implementation's calls: unmeasured ones for at least 3 calls and 20 ms (the method of
            # `sptune check`), so that each is timed at the clock its own load settles at
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for i in range(1000):
                fns[n]()
                if i >= 2:
                    b.record()
                    b.synchronize()
                    if a.elapsed_time(b) >= 20.0:
                        break
            torch.cuda.synchronize()
            if clock:
                clock.now = n
            for _ in range(reps):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fns[n]()
                b.record()
                b.synchronize()
                per[n].append(a.elapsed_time(b))
            for _ in range(2):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(reps):
                    fns[n]()
                b.record()
                b.synchronize()
                b2b[n].append(a.elapsed_time(b) / reps)
            if clock:
                clock.now = None
    med = lambda v: sorted(v)[len(v) // 2]
    return {n: (med(per[n]), med(b2b[n])) for n in names}


def failed(shape, mean_nnz, name, e):
    """A table row for an implementation that raised e."""
    return (shape, mean_nnz, name, "failed: " + str(e).splitlines()[0][:80]) + ("",) * 5


def load_peer(path):
    mod_dir = os.path.join(path, "custom_models", "twell_modules")
    spec = importlib.util.spec_from_file_location("peer_twell", os.path.join(mod_dir, "twell.py"))
    if spec is None:
        raise SystemExit(f"no custom_models/twell_modules/twell.py under {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", default=None,
                    help="checkout of SakanaAI/sparser-faster-llms (without it: sptune and the dense baseline only)")
    ap.add_argument("--shapes", default="4096x2048x5632,16384x2048x5632,16384x2048x8192",
                    help="MxDxF list (the peer needs sm_90a; a shape it refuses is recorded as a failed row)")
    ap.add_argument("--nnz", type=float, default=40)
    ap.add_argument("--dense", type=float, default=0.5, help="percent of dense tokens (0: none)")
    ap.add_argument("--gen", type=int, choices=(0, 1), default=0,
                    help="how the activations are made: 0 each neuron fires at its rate (the recipe above), 1 by the "
                         "layer itself (Gaussian tokens of log-normal gains through biased gate weights)")
    ap.add_argument("--spread", type=float, default=0.5, help="--gen 1: sigma of the tokens' log-gain")
    ap.add_argument("--describe", action="store_true",
                    help="serve sptune the layer described from its first 4096 tokens (sptune.describe_twell), as an "
                         "engine does, instead of nnz and the dense share alone")
    ap.add_argument("--db", default=None,
                    help="the tuning database sptune reads and autotune=True records into (default: a fresh one for "
                         "this run, so that one run's autotuned records are neither served to the next nor left in "
                         "the user's; 'user': the user's own, as an application would)")
    ap.add_argument("--config", action="append", default=[],
                    help="a twell-ffn configuration to time next to the served one (order=1 weights; repeatable)")
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds (each takes the implementations in turn)")
    ap.add_argument("--profile", action="store_true",
                    help="after the timing, each implementation's kernels under torch's profiler (µs per call), and "
                         "the SM clock each ran at during its timed calls (NVML)")
    args = ap.parse_args()
    if args.db != "user":
        import tempfile
        os.environ["SPTUNE_DB"] = args.db or os.path.join(tempfile.mkdtemp(prefix="twell-peer-"), "tuning.db")
    import sptune
    peer = load_peer(args.peer) if args.peer else None
    rows = []
    for layer, shape in enumerate(args.shapes.split(",")):
        M, D, F = (int(v) for v in shape.split("x"))
        x, wg = activations(M, D, F, args.nnz, seed=layer + 1, dense=args.dense / 100.0, gen=args.gen,
                            spread=args.spread)
        gen = torch.Generator(device="cpu").manual_seed(100 + layer)
        wu = (torch.rand(F, D, generator=gen) * 2 - 1).to(torch.bfloat16)
        wd = (torch.rand(F, D, generator=gen) * 2 - 1).to(torch.bfloat16)
        x, wg, wu, wd = (t.cuda() for t in (x, wg, wu, wd))
        ref, allow, mean_nnz = reference(x, wg, wu, wd)
        # sptune's layout: calibrated on every fourth token, the most frequent neuron first
        counts = (torch.relu(x[1::4].float() @ wg.float().T) > 0).sum(0)
        perm = torch.sort(-counts, stable=True).indices
        pg, pu, pd = wg[perm].contiguous(), wu[perm].contiguous(), wd[perm].contiguous()

        def dense():
            return (torch.relu(x @ wg.T) * (x @ wu.T)) @ wd

        out = {"torch bf16 dense (cuBLAS)": dense}
        # the kernel the runtime API serves for this problem, launched on preallocated buffers (what an
        # engine does; sptune.twell_ffn adds the Python op's allocation and dispatch)
        problem = f"M={sptune.token_bucket(M)},D={D},F={F},nnz={int(round(args.nnz))},dense={args.dense:g}"
        probs = {o: problem + f",order={o}" for o in (1, 0)}
        if args.describe:   # the engine's path: the layer described from its first 4096 tokens' gate
            for o, w in ((1, pg), (0, wg)):
                fired = torch.relu(x[:4096] @ w.T) > 0
                probs[o] = sptune.describe_twell(fired.sum(1).tolist(), fired.sum(0).tolist(), M, D, order=o)
                del fired
            print(f"{shape}: described as {probs[1]}", flush=True)
        ks = [sptune.kernel("twell-ffn", probs[o]) for o in (1, 0)]
        for o, k in zip((1, 0), ks):
            print(f"{shape}: sptune serves for order={o} {k.config} ({k.origin})", flush=True)
        fixed = [sptune.kernel("twell-ffn", problem + ",order=1", fixed=cfg) for cfg in args.config]
        ks += fixed
        ys = torch.empty((M, D), dtype=torch.bfloat16, device=x.device)
        ws = torch.empty(max(max(k.workspace for k in ks), 1), dtype=torch.uint8, device=x.device)

        def sptune_ffn(k, wts):
            named = {"X": x, "Wg": wts[0], "Wu": wts[1], "Wd": wts[2], "Y": ys}
            k.launch_ws([named[n].data_ptr() for n in k.tensor_names], ws.data_ptr(), k.workspace,
                        torch.cuda.current_stream().cuda_stream, tokens=M)
            return ys

        out["sptune twell-ffn (order=1)"] = lambda: sptune_ffn(ks[0], (pg, pu, pd))
        out["sptune twell-ffn, weights as drawn (order=0)"] = lambda: sptune_ffn(ks[1], (wg, wu, wd))
        for i, k in enumerate(fixed):
            print(f"  --config {i + 1}: {k.config}", flush=True)
            out[f"sptune twell-ffn (order=1), --config {i + 1}"] = lambda k=k: sptune_ffn(k, (pg, pu, pd))
        if args.describe:
            out["sptune.twell_ffn (Python op, described)"] = lambda: sptune.twell_ffn(x, pg, pu, pd, calibrated=True,
                                                                                      problem=probs[1])
        elif args.dense == 0.5:   # the Python op asks for the default distribution
            out["sptune.twell_ffn (Python op)"] = lambda: sptune.twell_ffn(x, pg, pu, pd, nnz=int(round(args.nnz)),
                                                                           calibrated=True)
        # autotuned on its first call (here the correctness check's): the faster of sptune's fastest and cuBLAS
        for cal, w in ((True, (pg, pu, pd)), (False, (wg, wu, wd))):
            out[f"sptune.twell_ffn(autotune=True), order={int(cal)}"] = (
                lambda cal=cal, w=w: sptune.twell_ffn(x, *w, nnz=int(round(args.nnz)), calibrated=cal, autotune=True))
        try:
            if peer:
                layer_mod = peer.TwELLGatedMLP(layer, wg, wu, wd)
                out["SakanaAI TwELLGatedMLP"] = lambda: layer_mod(x)
        except Exception as e:   # noqa: BLE001 - the peer's refusal is a result to record
            rows.append(failed(shape, mean_nnz, "SakanaAI TwELLGatedMLP", e))
        # each checked first (autotune=True tunes on this call), then all timed together
        checked = {}
        for name, fn in out.items():
            try:
                y = fn()
                torch.cuda.synchronize()
                checked[name] = check(y, ref, allow)
            except Exception as e:   # noqa: BLE001
                rows.append(failed(shape, mean_nnz, name, e))
                continue
            if "autotune" in name:
                c = sptune.twell_ffn_choice(M, D, F, nnz=int(round(args.nnz)), calibrated=name.endswith("1"))
                print(f"  {name} chose {'cuBLAS dense' if c['dense'] else c['config']}: sptune {c['ms']:.4f} ms, "
                      f"dense {c['dense_ms']:.4f} ms on the first call's tensors; "
                      f"autotuned: {c['detail'].split('autotuned: ')[-1][:240]}", flush=True)
        clock = SmClock(torch.cuda.current_device()) if args.profile else None
        try:
            times = timed({n: out[n] for n in checked}, rounds=args.rounds, clock=clock)
            kernels = profiled({n: out[n] for n in checked}) if args.profile else {}
        except Exception as e:   # noqa: BLE001
            rows += [failed(shape, mean_nnz, n, e) for n in checked]
            continue
        finally:
            if clock:
                clock.close()
        for name, per_kernel in kernels.items():
            total = sum(us for _, us in per_kernel)
            print(f"{shape} profile {name}: kernels {total:.1f} µs a call against {times[name][1] * 1e3:.1f} back to "
                  f"back; SM clock {clock.mean(name)}", flush=True)
            for kname, us in per_kernel:
                print(f"    {us:9.1f} µs  {kname[:110]}", flush=True)
        base_ms, base_b2b = times[next(iter(checked))] if checked else (None, None)
        for name, (err, bad) in checked.items():
            ms, b2b = times[name]
            rows.append((shape, mean_nnz, name, f"{ms:.4f}", f"{base_ms / ms:.2f}x", f"{b2b:.4f}",
                         f"{base_b2b / b2b:.2f}x", f"{err:.1e}", str(bad)))
            print(f"{shape} nnz {mean_nnz:.1f} {name}: {ms:.4f} ms per call, {b2b:.4f} ms back to back, error {err:.1e},"
                  f" {bad} outputs off", flush=True)
    print()
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; peer: {args.peer}; dense tokens {args.dense} %;"
          f" data generator {args.gen}" + (f", spread {args.spread}" if args.gen == 1 else ""))
    print("| M x d x d_ff | nnz/token | implementation | ms per call | vs dense | ms back to back | vs dense |"
          " rel. error | outputs off |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.1f} | {r[2]} | {' | '.join(r[3:])} |")


if __name__ == "__main__":
    sys.exit(main())
