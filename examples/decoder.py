"""A Llama-3-8B-shaped decoder whose projections all run through Slot-Filling, against the same model dense.

Several transformer layers of Llama-3-8B's shapes (hidden 4096, FFN 14336, 32 query and 8 key/value heads, RoPE,
RMSNorm, SwiGLU, a KV cache, attention in torch), random weights pruned to 50 % the way pruning methods prune
(per row, by |w| times the input channel's activation norm, with outlier channels, as Wanda does; --prune 2:4
keeps the 2 best of every 4 along K, as Wanda's 2:4 mode does). Every projection of every layer (q, k, v, o, gate,
up, down) becomes sptune.slotfill_linear; the embedding and the output head stay dense. One decode step (all
layers, the head and the greedy choice of the next token) is captured in a CUDA graph for each model and batch,
and replayed to generate tokens. Prints per batch size the prefill tokens/s (the batch's prompts, batch x --prompt
tokens through every layer at once: the large-batch kernels) and the decode tokens/s of both models and their
ratios, after
checking that the Slot-Filling model's logits match the dense model's (the same pruned weights) within bf16
tolerance, at prefill and at every decode step (teacher-forced on the dense model's tokens).

With --relu the FFN is ReLU-gated instead (relu(x Wg^T) * x Wu^T, then Wd) with activations as sparse as a trained
ReLU model's (each neuron's firing rate set by a bias: log-normal around 0.3 %, 30 % of neurons dead, folded into
the gate through a constant channel of the residual stream), and the example times prefill instead: --prefill
tokens (sequences of --prompt tokens) through the same model with its FFNs dense (torch) and through
sptune.twell_ffn (the neurons as drawn, and in the hot order sptune.hot_order gives from the calibration pass's
counts), checking that the last tokens' logits agree.

    PYTHONPATH=python python3 examples/decoder.py --layers 8 --batch 1,4,16 --prune unstructured
    PYTHONPATH=python python3 examples/decoder.py --relu --prompt 1024 --prefill 16384
    (SPTUNE_LIB=<prefix>/lib/libsptune.so.0.5 when the library is not installed where sptune finds it)

Needs torch with CUDA and one GPU with room for both models (about 0.9 GB a layer); exits 2 on bad options,
3 without a GPU, 1 when the outputs disagree."""
import argparse
import copy
import math
import sys
import time


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=8, help="transformer layers (Llama-3-8B has 32; default 8)")
    p.add_argument("--batch", default="1,16,64,256", help="decode batch sizes, comma-separated (default 1,16,64,256)")
    p.add_argument("--prune", choices=("unstructured", "2:4"), default="unstructured",
                   help="50 %% unstructured per row (default) or 2:4")
    p.add_argument("--steps", type=int, default=64, help="decode steps timed per batch (default 64)")
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens per sequence (default 32)")
    p.add_argument("--vocab", type=int, default=128256, help="vocabulary size (Llama-3: 128256)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--tolerance", type=float, default=3e-2,
                   help="largest relative error of the logits against the dense model (default 3e-2)")
    p.add_argument("--relu", action="store_true",
                   help="a ReLU-gated FFN with sparse activations; time prefill through twell-ffn instead of decode")
    p.add_argument("--prefill", type=int, default=16384,
                   help="with --relu: tokens per prefill, whole sequences of --prompt tokens (default 16384)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        a.batch = [int(b) for b in a.batch.split(",")]
    except ValueError:
        p.error(f"--batch: {a.batch!r} is not a comma-separated list of integers")
    for name in ("layers", "steps", "prompt", "vocab", "hidden", "ffn", "heads", "kv_heads", "prefill"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(a.batch) < 1 or max(a.batch) > 256:
        p.error("--batch sizes go from 1 to 256")
    if a.relu and a.prefill % a.prompt:
        p.error("--prefill must be a whole number of --prompt sequences")
    if a.hidden % a.heads or a.heads % a.kv_heads or (a.hidden // a.heads) % 2:
        p.error("--hidden must split into --heads of an even width, and --heads into --kv-heads groups")
    return a


def prune(torch, w, scale, kind):
    """w (M x K) pruned to 50 %: per row by |w| x the input channel's scale (Wanda's score), or 2:4 along K."""
    score = w.float().abs() * scale
    if kind == "2:4":
        g = score.view(w.shape[0], -1, 4)
        keep = torch.zeros_like(g, dtype=torch.bool).scatter_(2, g.topk(2, dim=2).indices, True)
        return w * keep.view_as(w)
    K = w.shape[1]
    keep = score >= score.kthvalue(K - K // 2 + 1, dim=1, keepdim=True).values   # the K // 2 best
    return w * keep


class Model:
    """The decoder's weights and one forward pass over a static KV cache (graph-safe: positions are tensors)."""

    def __init__(self, torch, a):
        self.t, self.a = torch, a
        dev, bf = "cuda", torch.bfloat16
        D, F, H, KV = a.hidden, a.ffn, a.heads, a.kv_heads
        self.hd = D // H
        g = torch.Generator(device=dev).manual_seed(a.seed)

        def randn(*shape, std):
            return (torch.randn(*shape, device=dev, generator=g) * std).to(bf)

        # the activations' channel norms that pruning scores by: log-normal, 0.5 % outlier channels 20x
        def channel_scale(K):
            s = torch.exp(0.6 * torch.randn(K, device=dev, generator=g))
            s[torch.randperm(K, device=dev, generator=g)[: max(1, K // 200)]] *= 20
            return s

        self.embed = randn(a.vocab, D, std=1.0)
        self.head = randn(a.vocab, D, std=D ** -0.5)
        self.layers = []
        shapes = {"q": (D, D), "k": (KV * self.hd, D), "v": (KV * self.hd, D), "o": (D, D),
                  "gate": (F, D), "up": (F, D), "down": (D, F)}
        for _ in range(a.layers):
            layer = {"norm1": torch.ones(D, device=dev, dtype=bf), "norm2": torch.ones(D, device=dev, dtype=bf)}
            for name, (m, k) in shapes.items():
                w = prune(torch, randn(m, k, std=k ** -0.5), channel_scale(k), a.prune)
                layer[name] = w
            self.layers.append(layer)
        self.ffn, self.calibrating, self.inputs = None, False, None
        self.active, self.busiest, self.counts = [], [], []   # per layer, from the calibration pass
        if a.relu:
            # a constant channel (0) of the residual stream that no layer writes, through which each neuron's bias
            # reaches its gate: bias = the pre-activation's spread x the normal quantile of 1 - its firing rate
            self.embed[:, 0] = 8.0
            self.bias = []
            for layer in self.layers:
                layer["o"][0].zero_()
                layer["down"][0].zero_()
                rate = torch.exp(math.log(0.002) + torch.randn(F, device=dev, generator=g)).clamp(max=0.5)
                rate[torch.rand(F, device=dev, generator=g) < 0.3] = 1e-6   # dead neurons (a finite bias)
                spread = layer["gate"].float().norm(dim=1)
                self.bias.append(spread * torch.special.ndtri(1 - rate))
                layer["down_t"] = layer["down"].T.contiguous()   # twell-ffn takes W_down as F x D (row j: neuron j)
        inv = 1.0 / (500000.0 ** (torch.arange(0, self.hd, 2, device=dev).float() / self.hd))
        ang = torch.outer(torch.arange(a.prompt + a.steps + 8, device=dev).float(), inv)
        self.cos, self.sin = ang.cos(), ang.sin()

    def build(self, make):
        """Each projection's callable: make(weight) (a dense or a Slot-Filling linear)."""
        self.proj = [{n: make(layer[n]) for n in ("q", "k", "v", "o", "gate", "up", "down")} for layer in self.layers]

    def cache(self, batch):
        t, a = self.t, self.a
        shape = (len(self.layers), batch, a.kv_heads, a.prompt + a.steps + 8, self.hd)
        return t.zeros(shape, device="cuda", dtype=t.bfloat16), t.zeros(shape, device="cuda", dtype=t.bfloat16)

    def _norm(self, x, w):
        x32 = x.float()
        return (x32 * self.t.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    def _rope(self, x, pos):
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]   # (1, 1, T, hd/2)
        x1, x2 = x[..., : self.hd // 2].float(), x[..., self.hd // 2:].float()
        return self.t.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1).to(x.dtype)

    def forward(self, tokens, pos, kc, vc):
        """tokens (B, T) at positions pos (T,) (a device tensor); writes the KV cache there; logits of the last."""
        t, a = self.t, self.a
        B, T = tokens.shape
        H, KV, hd = a.heads, a.kv_heads, self.hd
        x = self.embed[tokens]
        Tmax = kc.shape[3]
        # causal over the cache: position j is seen from position p when j <= p
        mask = t.arange(Tmax, device="cuda")[None, :] > pos[:, None]            # (T, Tmax)
        for i, (w, p) in enumerate(zip(self.layers, self.proj)):
            h = self._norm(x, w["norm1"])
            q = p["q"](h).view(B, T, H, hd).transpose(1, 2)
            k = p["k"](h).view(B, T, KV, hd).transpose(1, 2)
            v = p["v"](h).view(B, T, KV, hd).transpose(1, 2)
            q, k = self._rope(q, pos), self._rope(k, pos)
            kc[i].index_copy_(2, pos, k)
            vc[i].index_copy_(2, pos, v)
            if T > 1:   # a prompt from position 0: causal attention over itself (flash attention)
                rep = H // KV
                o = t.nn.functional.scaled_dot_product_attention(
                    q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), is_causal=True)
            else:
                qg = q.reshape(B, KV, H // KV * T, hd)          # the query heads of each key/value head together
                s = (qg.float() @ kc[i].float().transpose(-1, -2)) * hd ** -0.5   # (B, KV, G*T, Tmax)
                s = s.view(B, KV, H // KV, T, Tmax).masked_fill(mask, float("-inf"))
                o = (s.softmax(-1).view(B, KV, H // KV * T, Tmax) @ vc[i].float()).to(x.dtype)
            o = o.reshape(B, H, T, hd).transpose(1, 2).reshape(B, T, H * hd)
            x = x + p["o"](o)
            h = self._norm(x, w["norm2"])
            if self.calibrating:   # the bias through the constant channel, at its value in this layer
                w["gate"][:, 0] = (-self.bias[i] / h[..., 0].float().mean()).to(w["gate"].dtype)
            if self.inputs is not None:
                self.inputs.append(h)
            if self.ffn is not None:
                x = x + self.ffn(i, h)
                continue
            gate = p["gate"](h)
            if self.calibrating:
                on = gate > 0
                per_token = on.sum(-1)
                self.active.append(per_token.float().mean().item())
                self.busiest.append(int(per_token.max().item()))
                self.counts.append(on.sum(dim=(0, 1)))
            act = t.relu(gate) if a.relu else t.nn.functional.silu(gate)
            x = x + p["down"](act * p["up"](h))
        return t.nn.functional.linear(x[:, -1], self.head).float()


def prefill(torch, sptune, a, model):
    """--relu: the prompt batch through the model with its FFNs dense, through twell-ffn with the neurons as drawn, and
    through twell-ffn with them in hot order (calibrated: most frequent first, as sptune.hot_order lays them out);
    tokens/s of the whole prefill, time of the FFNs alone on each layer's own inputs, and agreement."""
    model.build(lambda w: (lambda x, w=w: torch.nn.functional.linear(x, w)))
    B = a.prefill // a.prompt
    g = torch.Generator(device="cuda").manual_seed(a.seed)
    tokens = torch.randint(0, a.vocab, (B, a.prompt), device="cuda", generator=g)
    pos = torch.arange(a.prompt, device="cuda")
    kc, vc = model.cache(B)
    with torch.no_grad():   # the biases set layer by layer at the channel's value there, active neurons counted
        model.calibrating = True
        model.forward(tokens, pos, kc, vc)
        model.calibrating = False
    nnz = max(1, round(sum(model.active) / len(model.active)))
    print(f"ReLU-gated FFN: active neurons per token {min(model.active):.0f}-{max(model.active):.0f} over the layers "
          f"(mean {nnz} of {a.ffn}; the busiest token of a layer up to {max(model.busiest)}); prefill of {B} x "
          f"{a.prompt} tokens", flush=True)
    for w, counts in zip(model.layers, model.counts):   # the calibrated layout: rows most frequent neuron first
        perm = torch.tensor(sptune.hot_order(counts.tolist()), device="cuda")
        w["hot"] = (w["gate"][perm].contiguous(), w["up"][perm].contiguous(), w["down_t"][perm].contiguous())

    def twell(calibrated):
        def ffn(i, h):
            w = model.layers[i]
            ws = w["hot"] if calibrated else (w["gate"], w["up"], w["down_t"])
            return sptune.twell_ffn(h.reshape(-1, a.hidden), *ws, nnz=nnz, calibrated=calibrated).view_as(h)
        return ffn

    def dense_ffn(i, h):
        w = model.layers[i]
        lin = torch.nn.functional.linear
        return lin(torch.relu(lin(h, w["gate"])) * lin(h, w["up"]), w["down"])

    def timed(fn, runs=5):
        fn()
        ts = []
        for _ in range(runs):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
        return sorted(ts)[len(ts) // 2]

    with torch.no_grad():   # each layer's FFN input, for the FFNs timed alone
        model.inputs = []
        model.forward(tokens, pos, kc, vc)
        inputs, model.inputs = model.inputs, None
    res = {}
    for name, ffn in (("dense", None), ("twell-ffn", twell(False)), ("twell-ffn, hot order", twell(True))):
        model.ffn = ffn
        with torch.no_grad():
            logits = model.forward(tokens, pos, kc, vc)
            ms = timed(lambda: model.forward(tokens, pos, kc, vc))
            f = ffn or dense_ffn
            ffn_ms = timed(lambda: [f(i, h) for i, h in enumerate(inputs)])
        res[name] = (logits, ms, ffn_ms)
    model.ffn = None
    ref, failed = res["dense"], 0
    print(f"{'prefill FFNs':22} {'tok/s':>9} {'ms':>8} {'speed-up':>8} {'FFNs alone':>11} {'speed-up':>8} "
          f"{'logits err':>11}")
    for name, (logits, ms, ffn_ms) in res.items():
        err = ((logits - ref[0]).norm() / ref[0].norm()).item()
        ok = err <= a.tolerance
        failed += not ok
        print(f"{name:22} {a.prefill / ms * 1e3:9.0f} {ms:8.2f} {ref[1] / ms:7.2f}x {ffn_ms:9.2f} ms "
              f"{ref[2] / ffn_ms:7.2f}x {err:11.2e}{'' if ok else '  FAILED: logits differ more than --tolerance'}",
              flush=True)
    return 1 if failed else 0


def main(argv):
    a = options(argv)
    try:
        import torch
    except ImportError:
        print("decoder: needs torch (pip install torch)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("decoder: no CUDA device", file=sys.stderr)
        return 3
    import sptune

    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    t0 = time.time()
    model = Model(torch, a)
    print(f"{a.layers} layers of hidden {a.hidden}, FFN {a.ffn}, {a.heads}/{a.kv_heads} heads, vocab {a.vocab}; "
          f"weights pruned {a.prune} to 50 % ({time.time() - t0:.0f} s)", flush=True)
    if a.relu:
        return prefill(torch, sptune, a, model)
    dense = copy.copy(model)   # the same weights, its own projections
    dense.build(lambda w: (lambda x, w=w: torch.nn.functional.linear(x, w)))
    t0 = time.time()
    model.build(lambda w: sptune.slotfill_linear(w))
    enc = dict(kv.split("=") for kv in model.proj[0]["gate"].weights.fixed.split(","))
    print(f"encoded {7 * a.layers} projections for Slot-Filling ({enc.get('decode')} layout) in "
          f"{time.time() - t0:.0f} s", flush=True)

    failed = 0
    print(f"{'batch':>5} {'prefill tok/s: dense':>21} {'sptune':>9} {'speed-up':>9} {'decode tok/s: dense':>20} "
          f"{'sptune':>9} {'speed-up':>9} {'logits err':>11}  greedy agree")
    for B in a.batch:
        g = torch.Generator(device="cuda").manual_seed(a.seed + B)
        prompt = torch.randint(0, a.vocab, (B, a.prompt), device="cuda", generator=g)
        runs = {}
        for name, m in (("dense", dense), ("sptune", model)):
            kc, vc = m.cache(B)
            pos = torch.arange(a.prompt, device="cuda")
            with torch.no_grad():
                logits = m.forward(prompt, pos, kc, vc)
                # prefill speed: the same prompts again (the cache rewritten in place), kernels got above
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(3):
                    m.forward(prompt, pos, kc, vc)
                e1.record()
                e1.synchronize()
            prefill_tps = 3 * B * a.prompt / (e0.elapsed_time(e1) / 1e3)
            tok = logits.argmax(-1, keepdim=True)
            step_pos = torch.full((1,), a.prompt, device="cuda", dtype=torch.long)
            out = torch.empty(B, a.vocab, device="cuda")
            # the decode step: forward of the last token, greedy next token, position advanced; warmed up and
            # its kernels got before the capture
            def step(m=m, tok=tok, step_pos=step_pos, out=out, kc=kc, vc=vc):
                out.copy_(m.forward(tok, step_pos, kc, vc))
                tok.copy_(out.argmax(-1, keepdim=True))
                step_pos.add_(1)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.no_grad(), torch.cuda.stream(side):
                step()
            torch.cuda.current_stream().wait_stream(side)
            step_pos.fill_(a.prompt)
            tok.copy_(logits.argmax(-1, keepdim=True))
            graph = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(graph):
                step()
            step_pos.fill_(a.prompt)
            tok.copy_(logits.argmax(-1, keepdim=True))
            runs[name] = dict(m=m, kc=kc, vc=vc, logits=logits, tok=tok, pos=step_pos, out=out, graph=graph,
                              prefill=prefill_tps)
        # correctness: prefill logits, then every step teacher-forced on the dense model's token
        d, s = runs["dense"], runs["sptune"]
        err = ((s["logits"] - d["logits"]).norm() / d["logits"].norm()).item()
        agree, n = (s["logits"].argmax(-1) == d["logits"].argmax(-1)).sum().item(), B
        for _ in range(min(a.steps, 16)):
            s["tok"].copy_(d["tok"])
            d["graph"].replay()
            s["graph"].replay()
            err = max(err, ((s["out"] - d["out"]).norm() / d["out"].norm()).item())
            agree += (s["out"].argmax(-1) == d["out"].argmax(-1)).sum().item()
            n += B
        # speed: a fresh run of `steps` decode steps per model, greedy on its own tokens
        tps = {}
        for name, r in runs.items():
            r["pos"].fill_(a.prompt)
            r["tok"].copy_(r["logits"].argmax(-1, keepdim=True))
            for _ in range(3):
                r["graph"].replay()
            r["pos"].fill_(a.prompt)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(a.steps):
                r["graph"].replay()
            e1.record()
            e1.synchronize()
            tps[name] = B * a.steps / (e0.elapsed_time(e1) / 1e3)
        ok = err <= a.tolerance
        failed += not ok
        pf = {name: r["prefill"] for name, r in runs.items()}
        print(f"{B:5d} {pf['dense']:21.0f} {pf['sptune']:9.0f} {pf['sptune'] / pf['dense']:8.2f}x {tps['dense']:20.1f} "
              f"{tps['sptune']:9.1f} {tps['sptune'] / tps['dense']:8.2f}x {err:11.2e}  "
              f"{agree}/{n}{'' if ok else '  FAILED: logits differ more than --tolerance'}", flush=True)
        del runs
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
