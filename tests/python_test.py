"""The Python package over the built libsptune (CPU only): the library loads, kernels are got and
describe their arguments and workspace, errors raise with libsptune's message, and the ops' argument
checks refuse what they must (fake tensors: no torch or GPU needed)."""
import os
import sys

import sptune

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def check_eq(got, want, what):
    """check(got == want), printing both values when they differ."""
    check(got == want, f"{what}: got {got!r}, want {want!r}")


def raises(exc, fn, part, what):
    try:
        fn()
    except exc as e:
        check(part in str(e), f"{what}: message '{e}' lacks '{part}'")
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    check(False, f"{what}: did not raise")


class Dev:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index

    def __str__(self):
        return f"{self.type}:{self.index}"


class Fake:
    def __init__(self, shape, dtype="torch.bfloat16", device=None, contiguous=True):
        self.shape, self.dtype, self.device, self._c = shape, dtype, device or Dev("cuda"), contiguous

    def data_ptr(self):
        return 0

    def is_contiguous(self):
        return self._c


check_eq(sptune.version(), os.environ.get("SPTUNE_EXPECT_VERSION", sptune.version()), "version")
cache = os.environ.get("SPTUNE_CACHE_DIR")
g = sptune.kernel("gemm", "M=64,N=64,K=64", gpu="h200", cache_dir=cache)
check("bm=" in g.config and [a["name"] for a in g.args][:3] == ["A", "B", "C"], f"gemm kernel {g}")
check(g.workspace_bytes() == 0 and sptune.kernel("gemm", "M=64,N=64,K=64", gpu="h200", cache_dir=cache) is g,
      "gemm: no workspace; kept per process")
f = sptune.kernel("twell-ffn", "M=1000,D=256,F=1024,nnz=40", gpu="h200", cache_dir=cache)
names = [a["name"] for a in f.args]
check(names[:5] == ["X", "Wg", "Wu", "Wd", "Y"] and "pool_capacity" in names, f"twell-ffn args {names}")
check(0 < f.workspace_bytes() < f.workspace_bytes(bound=True), "twell-ffn workspace typical < bound")
check(f.tokens_dim == "M" and f.max_tokens == 1000, f"twell-ffn tokens {f.tokens_dim} {f.max_tokens}")
check(0 < f.workspace_bytes(tokens=16) < f.workspace_bytes() == f.workspace_bytes(tokens=1000),
      "twell-ffn: a batch of 16 needs less workspace than the problem")
raises(sptune.SptuneError, lambda: f.workspace_bytes(tokens=1001), "1001 tokens", "workspace for too many tokens")
cap = next(a for a in f.args if a["name"] == "dense_capacity")
check_eq((cap["typical"], cap["bound"]), (119, 1000), "dense_capacity (typical, bound)")
# 40 (1/64 + 16, 1.5 x 0.5 % heavy) + 79: no more than M x nnz / route = 40000 / 512 tokens reach the route
# the measurement behind a kernel, as data: the shipped H200 result of the nearest problem
check(f.recorded is not None and f.recorded[1] == "h200" and f.recorded[0].startswith("M=") and f.expected_ms > 0,
      f"twell-ffn recorded {f.recorded} at {f.expected_ms} ms")
raises(sptune.SptuneError, lambda: sptune.Kernel("no-such-op", "M=1", gpu="h200"), "no-such-op", "unknown op")
# an unknown op is said before any question about GPUs (this machine may have none: gpu="auto" would fail there)
raises(sptune.SptuneError, lambda: sptune.Kernel("no-such-op", "M=1", gpu="auto"), "no template 'no-such-op'",
       "unknown op, GPU auto")
raises(sptune.SptuneError, lambda: sptune.Kernel("no-such-op", "M=1", gpu="no-such-gpu"), "no template 'no-such-op'",
       "unknown op, unknown GPU")
raises(sptune.SptuneError, lambda: sptune.Kernel("gemm", "M=64,N=64", gpu="h200"), "missing dimension", "bad problem")
raises(ValueError, lambda: f.launch([1, 2]), "takes", "launch arity")
raises(sptune.SptuneError, lambda: f.launch_ws([1, 2, 3, 4, 5], 4096, f.workspace_bytes() - 1), "the kernel needs",
       "a workspace too small")
raises(sptune.SptuneError, lambda: f.launch_ws([1, 2, 3, 4, 5], 4096, f.workspace_bytes(), tokens=1001),
       "1001 tokens, but the kernel serves 0 to 1000", "more tokens than the kernel's maximum")
check_eq([sptune.token_bucket(m) for m in (1, 16, 17, 1000, 1024, 1025)], [16, 16, 32, 1024, 1024, 2048],
         "token buckets: powers of two from 16")

x, w = Fake((1000, 256)), Fake((1024, 256))
check_eq(sptune.check_twell_ffn(x, w, w, w), (1000, 256, 1024), "good arguments pass")
raises(TypeError, lambda: sptune.check_twell_ffn([[1.0]], w, w, w), "must be a torch.Tensor", "not a tensor")
raises(ValueError, lambda: sptune.check_twell_ffn(Fake((1000, 256), "torch.float16"), w, w, w), "must be bfloat16",
       "fp16 x")
raises(ValueError, lambda: sptune.check_twell_ffn(Fake((2, 1000, 256)), w, w, w), "must be 2-D", "3-D x")
raises(ValueError, lambda: sptune.check_twell_ffn(x, w, Fake((1024, 255)), w), "w_up must be d_ff x d",
       "mismatched w_up")
raises(ValueError, lambda: sptune.check_twell_ffn(x, w, w, Fake((256, 1024))), "w_down must be d_ff x d",
       "w_down transposed")
raises(ValueError, lambda: sptune.check_twell_ffn(Fake((1000, 256), device=Dev("cpu")), w, w, w), "CUDA device",
       "x on the CPU")
raises(ValueError, lambda: sptune.check_twell_ffn(x, Fake((1024, 256), contiguous=False), w, w), "contiguous",
       "non-contiguous weight")
raises(ValueError, lambda: sptune.check_twell_ffn(x, Fake((1024, 256), device=Dev("cuda", 1)), w, w), "one device",
       "operands on two GPUs")
raises(ValueError, lambda: sptune.check_twell_ffn(Fake((0, 256)), w, w, w), "empty", "no tokens")

# the problem of a layer's own activations, from the counts a caller makes where its gate lives
got = sptune.describe_twell([3, 1, 2, 4], [1, 2, 2, 3, 0, 0, 1, 1], tokens=64, d=32)
check_eq(got, "M=64,D=32,F=8,nnz=3,dead=25,tail=0.0,dense=0,dense_nnz=2000,at=2,order=0", "describe_twell")
raises(sptune.SptuneError, lambda: sptune.describe_twell([9], [1] * 8, 64, 32), "token 0 has 9 active neurons of 8",
       "describe_twell: more active than neurons")
raises(ValueError, lambda: sptune.describe_twell([], [1], 64, 32), "at least one token", "describe_twell: no tokens")
raises(sptune.SptuneError, lambda: sptune.describe_twell([3, 1, 2, 4], [1, 2, 3, 4, 0, 0, 1, 4], 64, 32),
       "the neurons' to 15", "describe_twell: counts of two batches")
check_eq(sptune.hot_order([3, 9, 0, 9, 1]), [1, 3, 0, 4, 2], "hot_order: most frequent first, ties by index")
# counts a C unsigned cannot hold: refused naming the entry (ctypes wrapped them: -1 read as 4294967295, 2**40 as 0)
raises(ValueError, lambda: sptune.describe_twell([3, -1, 2, 4], [1, 2, 2, 3, 0, 0, 1, 1], 64, 32), "token 1: -1",
       "describe_twell: a negative active count")
raises(ValueError, lambda: sptune.describe_twell([3, 2**40, 2, 4], [1] * 8, 64, 32), "token 1: 1099511627776",
       "describe_twell: an active count past 32 bits")
raises(ValueError, lambda: sptune.describe_twell([3, 1, 2, 4], [1, 2, -2, 3, 0, 0, 1, 1], 64, 32), "neuron 2: -2",
       "describe_twell: a negative neuron count")
raises(ValueError, lambda: sptune.describe_twell([3, 1, 2, 4], [1, 2, 2, 2**64, 0, 0, 1, 1], 64, 32),
       "neuron 3: 18446744073709551616", "describe_twell: a neuron count past 64 bits")
raises(ValueError, lambda: sptune.describe_twell([3, 1, 2, 4], [1, 2, 2, 3, 0, 0, 1, 1], 64, 2**40), "d must be",
       "describe_twell: a width past int")
raises(ValueError, lambda: sptune.hot_order([1, 2**64]), "neuron 1: 18446744073709551616", "hot_order: past 64 bits")
# Slot-Filling weights: encoded from host bytes, the problem measured, checked against kernels (no GPU needed for a
# fake device address: nothing launches where the check refuses, or for an empty batch)
import random
import struct
random.seed(5)
M, K = 64, 128
vals = [0 if random.random() < 0.5 else (0x3f80 | random.randrange(0x7f)) ^ (0x8000 if random.random() < 0.5 else 0)
        for _ in range(M * K)]
w = sptune.SlotFillWeights(struct.pack("<%dH" % len(vals), *vals), M, K)
check(w.problem(16).startswith("M=64,K=128,N=16,sparsity=50,fp16=0,dist=") and "decode=bitmap" in w.fixed,
      f"slotfill problem {w.problem(16)} {w.fixed}")
check_eq((w.info["nonzeros"], w.info["M"]), (sum(1 for v in vals if v), M), "slotfill info (nonzeros, M)")
img = w.image()
raises(sptune.SptuneError, lambda: w.apply(None, 0, 0, 1), "place the weights", "apply before placing")
raises(sptune.SptuneError, lambda: w.adopt(0x100000, len(img) - 1), "smaller than the image", "adopt too small")
check_eq(w.adopt(0x100000, len(img)), 0x100000, "adopt")
mine = sptune.kernel("slotfill-spmm", w.problem(16), gpu="h200", cache_dir=cache, fixed=w.fixed)
other = sptune.kernel("slotfill-spmm", "M=128,K=64,N=16,sparsity=50,fp16=0,dist=2", gpu="h200", cache_dir=cache)
raises(sptune.SptuneError, lambda: w.apply(other, 0x1000, 0x2000, 16), "the weights are 64 x 128 (M x K)",
       "apply with a kernel of another shape")
w.apply(mine, 0x1000, 0x2000, 0)   # an empty batch: nothing launched
raises(ValueError, lambda: sptune.SlotFillWeights(b"\0" * 10, M, K), "bytes", "slotfill: short data")
# a matrix that is not pruned encodes, with a warning that dense is faster; a pruned one without
import warnings  # noqa: E402
for dense_vals, warned in ((vals, False), ([v or 0x3f80 for v in vals], True)):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sptune.SlotFillWeights(struct.pack("<%dH" % len(dense_vals), *dense_vals), M, K)
    got = [str(c.message) for c in caught if c.category is RuntimeWarning]
    check(bool(got) == warned and (not warned or "0.0% sparse" in got[0] and "dense product will be faster" in got[0]),
          f"slotfill: warning for a {'dense' if warned else 'pruned'} matrix: {got}")


class HostTensor(Fake):   # what SlotFillWeights reads of a tensor
    def __init__(self, shape, device=Dev("cpu"), contiguous=True, esize=2):
        super().__init__(shape, device=device, contiguous=contiguous)
        self.esize = esize

    def numel(self):
        n = 1
        for v in self.shape:
            n *= v
        return n

    def element_size(self):
        return self.esize


raises(ValueError, lambda: sptune.SlotFillWeights(HostTensor((M, K), device=Dev("cuda")), M, K), "host memory",
       "slotfill: W on the GPU")
raises(ValueError, lambda: sptune.SlotFillWeights(HostTensor((M, K), esize=4), M, K), "16-bit", "slotfill: fp32 W")
raises(ValueError, lambda: sptune.SlotFillWeights(HostTensor((M, K + 1)), M, K), "contiguous tensor of 64 x 128",
       "slotfill: W of another shape")
del w

# autotune: refused before any GPU question, then (here, without a GPU) the GPU's absence said
raises(sptune.SptuneError, lambda: sptune.autotune("twell-ffn", "M=64,D=256,F=1024,nnz=40", [1, 2, 3, 4, 5], 0, 0,
                                                   tokens=0, gpu="h200", cache_dir=cache), "tokens=0", "autotune: 0 tokens")
raises(sptune.SptuneError, lambda: sptune.autotune("no-such-op", "M=1", [1], 0, 0, gpu="h200"), "no-such-op",
       "autotune: unknown op")
raises(ValueError, lambda: sptune.hot_order([]), "at least one neuron", "hot_order: no neurons")
raises(ValueError, lambda: sptune.hot_order([-1, 2, 1]), "neuron 0: -1", "hot_order: a negative count")


class HostBF16:   # a host tensor of bf16 values, as tune_twell_ffn reads one (torch's methods, a ctypes buffer)
    dtype = "torch.bfloat16"

    def __init__(self, shape, seed):
        import ctypes
        import random
        self.shape = shape
        rng = random.Random(seed)
        n = shape[0] * shape[1]
        self.buf = (ctypes.c_uint16 * n)(*[0x3f80 + rng.randint(0, 127) if rng.random() < 0.5 else 0xbf80 for _ in range(n)])

    def detach(self):
        return self

    def cpu(self):
        return self

    def contiguous(self):
        return self

    def data_ptr(self):
        import ctypes
        return ctypes.addressof(self.buf)

    def numel(self):
        return self.shape[0] * self.shape[1]

    def element_size(self):
        return 2


# tune_twell_ffn: the tensors written to a safetensors file and tuned on by the sptune command; here (no GPU) the
# command reads and measures them, then says there is no GPU (exit 3; a file it could not read would be exit 2)
xs, wg, wu, wd = HostBF16((64, 256), 1), HostBF16((1024, 256), 2), HostBF16((1024, 256), 3), HostBF16((256, 1024), 4)
try:
    k = sptune.tune_twell_ffn(xs, wg, wu, wd, budget="3s", db_path=os.environ.get("SPTUNE_DB"))
    check(k.op == "twell-ffn" and k.problem.startswith("M=64,D=256,F=1024,"), f"tune_twell_ffn on a GPU: {k}")
except sptune.SptuneError as e:
    check("exit 3" in str(e), f"tune_twell_ffn without a GPU: {e}")
raises(ValueError, lambda: sptune.tune_twell_ffn(xs, wg, HostBF16((1024, 255), 5), wd), "w_gate and w_up must be",
       "tune_twell_ffn: w_up of another shape")
raises(ValueError, lambda: sptune.tune_twell_ffn(Fake((64, 256), "torch.float16"), wg, wu, wd), "must be bfloat16",
       "tune_twell_ffn: fp16 x")

# examples/decoder.py: its options are checked before torch is imported (usage errors exit 2; without torch or a GPU
# it says so and exits 3; its run is a GPU check: docs/journal)
import subprocess  # noqa: E402
decoder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "decoder.py")
for args, code, part in ((["--help"], 0, "--prune"), (["--batch", "1,x"], 2, "comma-separated"),
                         (["--batch", "0"], 2, "from 1 to 256"), (["--heads", "3"], 2, "must split"),
                         (["--layers", "0"], 2, "at least 1")):
    r = subprocess.run([sys.executable, decoder] + args, capture_output=True, text=True, timeout=60)
    check(r.returncode == code and part in r.stdout + r.stderr,
          f"decoder.py {' '.join(args)}: exit {r.returncode}, {(r.stdout + r.stderr)[-200:]!r}")
r = subprocess.run([sys.executable, decoder, "--layers", "1"], capture_output=True, text=True, timeout=120)
check(r.returncode in (0, 3), f"decoder.py without a GPU: exit {r.returncode}, {r.stderr[-200:]!r}")
print(f"python: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
