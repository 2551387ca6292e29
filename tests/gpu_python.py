"""GPU test of the Python package (needs torch with CUDA and libsptune; exits 77, skipped, otherwise):
sptune.twell_ffn against a torch reference of the gated FFN on realistic-ish activations, through the
eager call, torch.compile and a captured CUDA graph replayed with new inputs, and autotuned on its first call
(the faster of sptune's fastest and the dense layer on cuBLAS; refused inside a capture); then the time of a call
against the C launch it wraps (the Python overhead) and the torch dense layer. sptune.slotfill_linear
(2:4-pruned and 50 % unstructured weights, with a bias) against torch's linear the same three ways, a
3-D input, the dense route for large batches with keep_dense, and the host time of a call.

    SPTUNE_LIB=build/libsptune.so.0.5 PYTHONPATH=python python3 tests/gpu_python.py"""
import sys
import time

try:
    import torch
except ImportError:
    print("gpu_python: skipped (no torch)")
    sys.exit(77)
if not torch.cuda.is_available():
    print("gpu_python: skipped (no CUDA device)")
    sys.exit(77)
import sptune

torch.manual_seed(0)
M, D, F = 3000, 2048, 5632
dev = "cuda"
x = torch.rand(M, D, device=dev).to(torch.bfloat16)
bias = -0.025 - 0.025 * torch.rand(F, 1, device=dev)   # ~1% of neurons fire, some far more often
wg = (torch.rand(F, D, device=dev) * 2 - 1 + bias).to(torch.bfloat16)
wu = (torch.rand(F, D, device=dev) * 2 - 1).to(torch.bfloat16)
wd = (torch.rand(F, D, device=dev) * 2 - 1).to(torch.bfloat16)


def reference(x, wg, wu, wd):
    g = torch.relu(x.float() @ wg.float().T).to(torch.bfloat16).float()
    return ((g * (x.float() @ wu.float().T)) @ wd.float()).to(torch.bfloat16)


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


failed = 0
ref = reference(x, wg, wu, wd)
# dense_fallback=False: sptune's kernels even where the records say the dense layer is faster (here the kernel path
# is what is tested; the fallback itself is checked after)
y = sptune.twell_ffn(x, wg, wu, wd, dense_fallback=False)
torch.cuda.synchronize()
e = rel(y, ref)
print(f"eager: relative error {e:.2e} (active per token: {(x.float() @ wg.float().T > 0).sum(1).float().mean():.0f})")
failed += not e < 1e-2
comp = torch.compile(lambda a, b, c, d: sptune.twell_ffn(a, b, c, d, dense_fallback=False))
e = rel(comp(x, wg, wu, wd), ref)
print(f"torch.compile: relative error {e:.2e}")
failed += not e < 1e-2
xs = x.clone()
graph = torch.cuda.CUDAGraph()
sptune.twell_ffn(xs, wg, wu, wd, dense_fallback=False)   # get and load the kernel outside the capture
torch.cuda.synchronize()
with torch.cuda.graph(graph):
    yg = sptune.twell_ffn(xs, wg, wu, wd, dense_fallback=False)
x2 = torch.rand(M, D, device=dev).to(torch.bfloat16)
xs.copy_(x2)
graph.replay()
torch.cuda.synchronize()
e = rel(yg, reference(x2, wg, wu, wd))
print(f"CUDA graph replayed with new inputs: relative error {e:.2e}")
failed += not e < 1e-2
for m in (1, 77, 1000):   # other batch sizes: kernels got per power-of-two bucket, launched for m tokens
    xm = x[:m].contiguous()
    e = rel(sptune.twell_ffn(xm, wg, wu, wd, dense_fallback=False), reference(xm, wg, wu, wd))
    print(f"M={m} (kernel got for M={sptune.token_bucket(m)}): relative error {e:.2e}")
    failed += not e < 1e-2
# the default: where the record served says the dense layer is faster, the dense layer on cuBLAS runs (exact too)
kd = sptune.kernel("twell-ffn", f"M={sptune.token_bucket(M)},D={D},F={F},nnz=40,order=0")
e = rel(sptune.twell_ffn(x, wg, wu, wd), ref)
print(f"default (dense fallback): {'cuBLAS dense' if kd.baseline_ms > 0 and kd.expected_ms > kd.baseline_ms else 'sptune'}"
      f" (record {kd.expected_ms:.4f} ms, dense {kd.baseline_ms:.4f} ms), relative error {e:.2e}")
failed += not e < 1e-2

# autotune on the first call: the faster of the fastest sptune kernel and the dense layer on cuBLAS, both timed on
# these tensors; exact either way; a first call inside a CUDA graph capture refused
for cal in (False, True):
    ya = sptune.twell_ffn(x, wg, wu, wd, nnz=33, calibrated=cal, autotune=True)
    c = sptune.twell_ffn_choice(M, D, F, nnz=33, calibrated=cal)
    e = rel(ya, ref)
    ok = c is not None and c["dense"] == (c["dense_ms"] < c["ms"]) and e < 1e-2
    print(f"autotune (calibrated={cal}): {'cuBLAS dense' if c and c['dense'] else c and c['config']} "
          f"(sptune {c and c['ms']:.4f} ms, dense {c and c['dense_ms']:.4f} ms), relative error {e:.2e}")
    failed += not ok
    e = rel(sptune.twell_ffn(x2, wg, wu, wd, nnz=33, calibrated=cal, autotune=True), reference(x2, wg, wu, wd))
    failed += not (e < 1e-2 and sptune.twell_ffn_choice(M, D, F, nnz=33, calibrated=cal) is c)   # not tuned again
try:
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        sptune.twell_ffn(xs, wg, wu, wd, nnz=34, autotune=True)
    print("autotune inside a capture: not refused")
    failed += 1
except sptune.SptuneError as err:
    print(f"autotune inside a capture: refused ({str(err)[:60]}...)")


def timed(fn, n=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


k = sptune.kernel("twell-ffn", f"M={M},D={D},F={F},nnz=40")
print(f"sptune.twell_ffn {timed(lambda: sptune.twell_ffn(x, wg, wu, wd, dense_fallback=False)):.4f} ms per call (wall, "
      f"with allocation);"
      f" torch dense gated FFN {timed(lambda: (torch.relu(x @ wg.T) * (x @ wu.T)) @ wd):.4f} ms; kernel {k}")

def host_us(fn, n=101):
    """Host time of a call: the median of n calls, each on an idle stream (a loop of unsynchronized calls fills the
    launch queue behind a slower GPU and then times the GPU, not the host)."""
    fn()
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return sorted(times)[n // 2] * 1e6


x16 = x[:16].contiguous()
k16 = sptune.kernel("twell-ffn", f"M=16,D={D},F={F},nnz=40")
y16 = torch.empty_like(x16)
ws = torch.empty(k16.workspace_bytes(), dtype=torch.uint8, device=dev)
ptrs = [x16.data_ptr(), wg.data_ptr(), wu.data_ptr(), wd.data_ptr(), y16.data_ptr()]
stream = torch.cuda.current_stream().cuda_stream
direct = host_us(lambda: k16.launch_ws(ptrs, ws.data_ptr(), ws.numel(), stream))
op = host_us(lambda: sptune.twell_ffn(x16, wg, wu, wd, dense_fallback=False))
print(f"host time per call at M=16: Kernel.launch_ws (ctypes) {direct:.1f} us, sptune.twell_ffn (checks, output and "
      f"workspace allocation, custom op) {op:.1f} us: the Python op adds {op - direct:.1f} us")

# ---- sptune.slotfill_linear ---------------------------------------------------------------------------
Mo, Ki = 4096, 4096
w = (torch.randn(Mo, Ki, device=dev) * 0.05).to(torch.bfloat16)
w24 = w.view(Mo, Ki // 4, 4).clone()
keep = w24.float().abs().topk(2, dim=-1).indices          # 2:4: the two largest of every four
w24 = torch.zeros_like(w24).scatter_(-1, keep, w24.gather(-1, keep)).view(Mo, Ki)
wun = torch.where(torch.rand(Mo, Ki, device=dev) < 0.5, w, torch.zeros_like(w))   # 50 % unstructured
b = (torch.randn(Mo, device=dev) * 0.1).to(torch.bfloat16)
for name, W in (("2:4", w24), ("50% unstructured", wun)):
    lin = sptune.slotfill_linear(W, b)   # every batch sparse: the kernels themselves are checked
    for n in (1, 8, 13):
        xs = torch.randn(n, Ki, device=dev).to(torch.bfloat16)
        e = rel(lin(xs), torch.nn.functional.linear(xs, W, b))
        print(f"slotfill_linear {name} ({lin.weights.fixed}) N={n}: rel. err {e:.2e}")
        failed += e > 1e-2
    x3 = torch.randn(2, 5, Ki, device=dev).to(torch.bfloat16)
    y3 = lin(x3)
    e = rel(y3, torch.nn.functional.linear(x3, W, b))
    print(f"slotfill_linear {name} (2, 5, K) input: shape {tuple(y3.shape)}, rel. err {e:.2e}")
    failed += e > 1e-2 or tuple(y3.shape) != (2, 5, Mo)
    comp = torch.compile(lambda a: lin(a))
    xs = torch.randn(8, Ki, device=dev).to(torch.bfloat16)
    e = rel(comp(xs), torch.nn.functional.linear(xs, W, b))
    print(f"slotfill_linear {name} torch.compile: rel. err {e:.2e}")
    failed += e > 1e-2
    xg = torch.randn(8, Ki, device=dev).to(torch.bfloat16)
    lin(xg)   # kernels got outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yg = lin(xg)
    for _ in range(2):
        xg.copy_(torch.randn(8, Ki, device=dev).to(torch.bfloat16))
        g.replay()
        torch.cuda.synchronize()
        e = rel(yg, torch.nn.functional.linear(xg, W, b))
        print(f"slotfill_linear {name} CUDA graph replay: rel. err {e:.2e}")
        failed += e > 1e-2
    lind = sptune.slotfill_linear(W, b, keep_dense=True)   # batches the records say dense is faster for: dense
    k64, dense64 = lind.kernel_for(64)
    xs = torch.randn(64, Ki, device=dev).to(torch.bfloat16)
    e = rel(lind(xs), torch.nn.functional.linear(xs, W, b))
    print(f"slotfill_linear {name} N=64: {'dense' if dense64 else 'sparse'} (expected {k64.expected_ms:.4f} ms, "
          f"dense {k64.baseline_ms:.4f} ms), rel. err {e:.2e}")
    failed += e > 1e-2
    x8 = torch.randn(8, Ki, device=dev).to(torch.bfloat16)
    k8 = lin.kernel_for(8)[0]
    y8 = torch.empty(8, Mo, dtype=torch.bfloat16, device=dev)
    s = torch.cuda.current_stream().cuda_stream
    raw = host_us(lambda: lin.weights.apply(k8, x8.data_ptr(), y8.data_ptr(), 8, s))
    call = host_us(lambda: lin(x8))
    gpu_ms = timed(lambda: lin(x8), 200)
    dense_ms = timed(lambda: torch.nn.functional.linear(x8, W, b), 200)
    print(f"slotfill_linear {name} N=8: host {call:.1f} us a call (raw apply {raw:.1f} us); wall {gpu_ms:.4f} ms a call "
          f"against torch linear {dense_ms:.4f} ms")
print(f"gpu_python: {'FAILED' if failed else 'passed'}")
sys.exit(1 if failed else 0)
