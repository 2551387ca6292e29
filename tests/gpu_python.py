"""GPU test of the Python package (needs torch with CUDA and libsptune; exits 77, skipped, otherwise):
sptune.twell_ffn against a torch reference of the gated FFN on realistic-ish activations, through the
eager call, torch.compile and a captured CUDA graph replayed with new inputs; then the time of a call
against the C launch it wraps (the Python overhead) and the torch dense layer.

    SPTUNE_LIB=build/libsptune.so.0 PYTHONPATH=python python3 tests/gpu_python.py"""
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
bias = -0.05 * torch.rand(F, 1, device=dev)
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
y = sptune.twell_ffn(x, wg, wu, wd)
torch.cuda.synchronize()
e = rel(y, ref)
print(f"eager: relative error {e:.2e} (active per token: {(x.float() @ wg.float().T > 0).sum(1).float().mean():.0f})")
failed += not e < 1e-2
comp = torch.compile(lambda a, b, c, d: sptune.twell_ffn(a, b, c, d))
e = rel(comp(x, wg, wu, wd), ref)
print(f"torch.compile: relative error {e:.2e}")
failed += not e < 1e-2
xs = x.clone()
graph = torch.cuda.CUDAGraph()
sptune.twell_ffn(xs, wg, wu, wd)   # get and load the kernel outside the capture
torch.cuda.synchronize()
with torch.cuda.graph(graph):
    yg = sptune.twell_ffn(xs, wg, wu, wd)
x2 = torch.rand(M, D, device=dev).to(torch.bfloat16)
xs.copy_(x2)
graph.replay()
torch.cuda.synchronize()
e = rel(yg, reference(x2, wg, wu, wd))
print(f"CUDA graph replayed with new inputs: relative error {e:.2e}")
failed += not e < 1e-2


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
print(f"sptune.twell_ffn {timed(lambda: sptune.twell_ffn(x, wg, wu, wd)):.4f} ms per call (wall, with allocation);"
      f" torch dense gated FFN {timed(lambda: (torch.relu(x @ wg.T) * (x @ wu.T)) @ wd):.4f} ms; kernel {k}")
print(f"gpu_python: {'FAILED' if failed else 'passed'}")
sys.exit(1 if failed else 0)
