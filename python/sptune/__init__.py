"""sptune for Python: tuned sparse kernels on PyTorch tensors, over libsptune (ctypes: nothing to
compile at install time).

    import torch, sptune
    y = sptune.twell_ffn(x, w_gate, w_up, w_down)      # Y = (relu(X Wg^T) * X Wu^T) Wd, bf16, CUDA

The library is found through $SPTUNE_LIB (a path to libsptune.so.0.5), then the copy `pip install ./python`
packages beside this file, then the library `cmake --install` put in the same prefix (sptune/_installed.py,
written at install time), then the source tree's build folder, then the system's library path. Kernels run on the
current CUDA stream. With torch available, ``torch.ops.sptune.twell_ffn`` is registered as a custom
op (with a fake implementation for shapes), so torch.compile can trace it; eager calls (and CUDA graph
captures) skip the op dispatcher, and once warm a call allocates its output and nothing else.

Slot-Filling weights as a layer (a pruned nn.Linear's weight encoded once, the dense weight kept or dropped):

    lin = sptune.slotfill_linear(linear.weight, linear.bias, keep_dense=False)   # a torch.nn.Module
    y = lin(x)                                                                   # x: (..., K) bf16 on CUDA
"""
import ctypes
import ctypes.util
import os
import threading

__all__ = ["SptuneError", "Kernel", "SlotFillWeights", "autotune", "describe_twell", "hot_order", "kernel", "slotfill_linear",
           "tune_twell_ffn", "twell_ffn", "twell_ffn_choice", "version"]


class SptuneError(RuntimeError):
    """A failure reported by libsptune (its message)."""


# ---- the library ------------------------------------------------------------------------------

_ORIGINS = {0: "exact", 1: "nearest", 2: "default", 3: "same_arch"}
_ROLES = {0: "input", 1: "output", 2: "workspace", 3: "dim", 4: "scalar"}


class _Request(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("op", ctypes.c_char_p), ("problem", ctypes.c_char_p),
                ("gpu", ctypes.c_char_p),
                ("db_path", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p), ("ignore_shipped", ctypes.c_int),
                ("fixed", ctypes.c_char_p), ("sparse_only", ctypes.c_int)]


# the structs sptune fills begin with their size (0: this version's)
class _Arg(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("type", ctypes.c_char_p), ("type_bytes", ctypes.c_size_t),
                ("pointer", ctypes.c_int), ("role", ctypes.c_int), ("shape", ctypes.c_char_p), ("doc", ctypes.c_char_p),
                ("elements", ctypes.c_longlong), ("elements_bound", ctypes.c_longlong),
                ("typical", ctypes.c_longlong), ("bound", ctypes.c_longlong)]


class _SlotFillInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("M", ctypes.c_longlong), ("K", ctypes.c_longlong), ("fp16", ctypes.c_int)] + [
        (n, ctypes.c_longlong) for n in ("nonzeros", "in_tc", "in_slots", "in_residual", "bytes_tc", "bytes_slots",
                                         "bytes_residual", "bytes_index", "bytes_dense")]


# the library's SONAME (CMakeLists.txt: 0.x minors may change the ABI)
_SONAME = "libsptune.so.0.5"


def _candidates():
    env = os.environ.get("SPTUNE_LIB")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    # pip install ./python: the library packaged beside this file (python/setup.py)
    yield os.path.join(here, _SONAME)
    # cmake --install: the library of the same prefix, written at install time
    try:
        from . import _installed  # noqa: PLC0415
        yield _installed.LIBRARY
    except ImportError:
        pass
    # the source tree: python/sptune -> build
    yield os.path.join(here, "../../build", _SONAME)
    found = ctypes.util.find_library("sptune")
    if found:
        yield found
    yield _SONAME


_lib = None
_lib_path = None
_lib_lock = threading.Lock()


def _library():
    global _lib, _lib_path
    with _lib_lock:
        if _lib is not None:
            return _lib
        errors = []
        for path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                continue
            try:
                lib = ctypes.CDLL(path)
                _lib_path = path
                break
            except OSError as e:
                errors.append(f"{path}: {e}")
        else:
            raise SptuneError(f"libsptune not found (set SPTUNE_LIB to {_SONAME}): " + "; ".join(errors))
        P, I, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
        lib.sptune_last_error.restype = S
        lib.sptune_version.restype = S
        lib.sptune_kernel_get.argtypes = [ctypes.POINTER(_Request), ctypes.POINTER(P)]
        lib.sptune_kernel_get.restype = I
        lib.sptune_kernel_config.argtypes = [P]
        lib.sptune_kernel_config.restype = S
        lib.sptune_kernel_origin.argtypes = [P, ctypes.POINTER(S)]
        lib.sptune_kernel_origin.restype = I
        lib.sptune_kernel_arg_count.argtypes = [P]
        lib.sptune_kernel_arg_count.restype = I
        lib.sptune_kernel_arg.argtypes = [P, I, ctypes.POINTER(_Arg)]
        lib.sptune_kernel_arg.restype = I
        lib.sptune_kernel_workspace.argtypes = [P, I, ctypes.POINTER(ctypes.c_size_t)]
        lib.sptune_kernel_workspace.restype = I
        lib.sptune_kernel_launch.argtypes = [P, P, ctypes.POINTER(P)]
        lib.sptune_kernel_launch.restype = I
        lib.sptune_kernel_launch_ws.argtypes = [P, P, ctypes.c_longlong, ctypes.POINTER(ctypes.c_uint64),
                                                ctypes.c_uint64, ctypes.c_size_t]
        lib.sptune_kernel_launch_ws.restype = I
        lib.sptune_kernel_free.argtypes = [P]
        lib.sptune_kernel_free.restype = None
        lib.sptune_kernel_autotune.argtypes = [ctypes.POINTER(_Request), P, ctypes.c_longlong,
                                               ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint64, ctypes.c_size_t,
                                               ctypes.POINTER(P)]
        lib.sptune_kernel_autotune.restype = I
        lib.sptune_kernel_tokens.argtypes = [P, ctypes.POINTER(ctypes.c_longlong)]
        lib.sptune_kernel_tokens.restype = S
        lib.sptune_kernel_workspace_for.argtypes = [P, ctypes.c_longlong, I, ctypes.POINTER(ctypes.c_size_t)]
        lib.sptune_kernel_workspace_for.restype = I
        LL, U64, SZ = ctypes.c_longlong, ctypes.c_uint64, ctypes.c_size_t
        for name, args, res in (
                ("sptune_slotfill_encode", [P, LL, LL, I, S, ctypes.POINTER(P)], I),
                ("sptune_slotfill_problem", [P, LL, P, SZ], I),
                ("sptune_slotfill_fixed", [P], S),
                ("sptune_slotfill_info_get", [P, ctypes.POINTER(_SlotFillInfo)], I),
                ("sptune_slotfill_image", [P, ctypes.POINTER(SZ)], P),
                ("sptune_slotfill_free", [P], None),
                ("sptune_slotfill_upload", [P, ctypes.POINTER(P)], I),
                ("sptune_slotfill_adopt", [P, U64, SZ, ctypes.POINTER(P)], I),
                ("sptune_slotfill_gpu_image", [P], U64),
                ("sptune_slotfill_apply", [P, P, LL, P, U64, U64, U64, SZ], I),
                ("sptune_slotfill_gpu_free", [P], None),
                ("sptune_twell_ffn_slow", [P, P, LL, U64, SZ, ctypes.POINTER(I)], I)):
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = res
        lib.sptune_twell_describe.argtypes = [ctypes.c_longlong, ctypes.POINTER(ctypes.c_uint), I,
                                              ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_longlong, I, I, P,
                                              ctypes.c_size_t]
        lib.sptune_twell_describe.restype = I
        lib.sptune_twell_hot_order.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), I, ctypes.POINTER(I)]
        lib.sptune_twell_hot_order.restype = I
        lib.sptune_kernel_expected.argtypes = [P, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
        lib.sptune_kernel_expected.restype = I
        lib.sptune_kernel_recorded.argtypes = [P, ctypes.POINTER(S)]
        lib.sptune_kernel_recorded.restype = S
        _lib = lib
        return lib


def _library_path():
    """The path the library was loaded from (None before the first load)."""
    return _lib_path


def _check(status):
    if status != 0:
        raise SptuneError(_library().sptune_last_error().decode(errors="replace"))


def version():
    """libsptune's version ("0.5.0")."""
    return _library().sptune_version().decode()


# ---- kernels ---------------------------------------------------------------------------------

def _request(op, problem, gpu, db_path, cache_dir, fixed, sparse_only=False):
    enc = lambda s: None if s is None else s.encode()
    return _Request(ctypes.sizeof(_Request), enc(op), enc(problem), enc(gpu), enc(db_path), enc(cache_dir), 0,
                    enc(fixed), 1 if sparse_only else 0)


class Kernel:
    """A tuned kernel of an op for one problem (sptune_kernel_get)."""

    def __init__(self, op, problem, gpu="auto", db_path=None, cache_dir=None, fixed=None, _handle=None,
                 sparse_only=False):
        lib = _library()
        handle = _handle
        if handle is None:
            req = _request(op, problem, gpu, db_path, cache_dir, fixed, sparse_only)
            handle = ctypes.c_void_p()
            _check(lib.sptune_kernel_get(ctypes.byref(req), ctypes.byref(handle)))
        self._lib, self._h = lib, handle
        # one thread at a time per kernel object (include/sptune.h): a launch with a new token count
        # works out its geometry in the object's template
        self._lock = threading.Lock()
        self.op, self.problem = op, problem
        self.config = lib.sptune_kernel_config(handle).decode()
        detail = ctypes.c_char_p()
        self.origin = _ORIGINS.get(lib.sptune_kernel_origin(handle, ctypes.byref(detail)), "?")
        self.detail = detail.value.decode() if detail.value else ""
        # the measurement behind it: the recorded problem and GPU (None for a default) and its times (ms, -1 none)
        gpu_rec = ctypes.c_char_p()
        rec = lib.sptune_kernel_recorded(handle, ctypes.byref(gpu_rec))
        self.recorded = (rec.decode(), gpu_rec.value.decode()) if rec else None
        ms, base = ctypes.c_double(), ctypes.c_double()
        _check(lib.sptune_kernel_expected(handle, ctypes.byref(ms), ctypes.byref(base)))
        self.expected_ms, self.baseline_ms = ms.value, base.value
        # the token count a launch may pass: its dimension's name and the largest (the problem's)
        most = ctypes.c_longlong()
        name = lib.sptune_kernel_tokens(handle, ctypes.byref(most))
        self.tokens_dim, self.max_tokens = (name.decode() if name else None), most.value
        self.args = []
        for i in range(lib.sptune_kernel_arg_count(handle)):
            a = _Arg()
            _check(lib.sptune_kernel_arg(handle, i, ctypes.byref(a)))
            self.args.append({"name": a.name.decode(), "type": a.type.decode(), "type_bytes": a.type_bytes,
                              "pointer": bool(a.pointer), "role": _ROLES.get(a.role, "?"), "shape": a.shape.decode(),
                              "elements": a.elements, "elements_bound": a.elements_bound,
                              "typical": a.typical, "bound": a.bound})
        # what every launch_ws needs, worked out once: the tensors' names in launch order, the typical workspace
        self.tensor_names = [a["name"] for a in self.args if a["role"] in ("input", "output")]
        try:
            self.workspace = self.workspace_bytes()
        except SptuneError:   # an op whose workspace the data sizes (no typical size declared)
            self.workspace = None

    def workspace_bytes(self, bound=False, tokens=None):
        """Bytes of the workspace arguments together (each part rounded up to 256 bytes); with `tokens`, what a
        launch of that many tokens needs (sptune_kernel_workspace_for: launch_ws cuts such a workspace itself)."""
        n = ctypes.c_size_t()
        if tokens is None:
            _check(self._lib.sptune_kernel_workspace(self._h, 1 if bound else 0, ctypes.byref(n)))
        else:
            with self._lock:
                _check(self._lib.sptune_kernel_workspace_for(self._h, int(tokens), 1 if bound else 0, ctypes.byref(n)))
        return n.value

    def launch(self, values, stream=0):
        """Launches with `values`: one per argument in order (device pointers as ints, numbers)."""
        if len(values) != len(self.args):
            raise ValueError(f"{self.op} takes {len(self.args)} arguments, got {len(values)}")
        keep, ptrs = [], (ctypes.c_void_p * len(values))()
        for i, (a, v) in enumerate(zip(self.args, values)):
            if a["pointer"] or a["type"] == "u64":
                c = ctypes.c_uint64(int(v))
            elif a["type"] == "f32":
                c = ctypes.c_float(float(v))
            else:
                c = ctypes.c_int32(int(v))
            keep.append(c)
            ptrs[i] = ctypes.addressof(c)
        with self._lock:
            _check(self._lib.sptune_kernel_launch(self._h, ctypes.c_void_p(int(stream)), ptrs))

    def launch_ws(self, tensors, workspace, workspace_bytes, stream=0, tokens=-1):
        """Launches with the inputs' and outputs' device pointers in declaration order and one workspace
        allocation (sptune_kernel_launch_ws: the library cuts it and sets the capacities); tokens: the
        token count, 1 to the problem's (0: an empty batch, nothing launched; -1: the problem's)."""
        ptrs = (ctypes.c_uint64 * max(len(tensors), 1))(*[int(t) for t in tensors])
        self._launch_array(ptrs, int(workspace), int(workspace_bytes), int(stream), int(tokens))

    def _launch_array(self, ptrs, workspace, workspace_bytes, stream, tokens):
        """launch_ws with the pointers already in a ctypes array and every number an int (the ops' per-call path)."""
        with self._lock:
            _check(self._lib.sptune_kernel_launch_ws(self._h, ctypes.c_void_p(stream), tokens, ptrs, workspace,
                                                     workspace_bytes))

    def slow(self, workspace, workspace_bytes, stream=0, tokens=-1):
        """twell-ffn: whether the last launch with this workspace took the slower exact paths (the data was not what
        the problem described: sptune_twell_ffn_slow). Waits for the stream."""
        flag = ctypes.c_int()
        with self._lock:
            _check(self._lib.sptune_twell_ffn_slow(self._h, ctypes.c_void_p(int(stream)), int(tokens), int(workspace),
                                                   int(workspace_bytes), ctypes.byref(flag)))
        return bool(flag.value)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._lib.sptune_kernel_free(h)
            self._h = None

    def __repr__(self):
        return f"Kernel({self.op}, {self.problem}: {self.config} ({self.origin}))"


def autotune(op, problem, tensors, workspace, workspace_bytes, stream=0, tokens=None, gpu="auto", db_path=None,
             cache_dir=None, fixed=None):
    """The fastest on the caller's own data (sptune_kernel_autotune): the kernel served for (op, problem), the few
    configurations recorded nearest it and, for twell-ffn, the dense layer, each launched on `tensors` (the inputs'
    and outputs' device pointers in declaration order, as Kernel.launch_ws takes them), `workspace` and `stream`
    with `tokens` tokens (default: the problem's), timed, the fastest returned as a Kernel. Call it once,
    before capturing a CUDA graph; the outputs hold the last candidate's result: launch the returned kernel. For TwELL
    ops the fastest is recorded in the user's database (db_path; "" none) as measured on the application's own
    tensors (gen=2), and served for that problem from then on."""
    lib = _library()
    req = _request(op, problem, gpu, db_path, cache_dir, fixed)
    if tokens is None:   # the problem's token count (M of twell-ffn and gemm, N of slotfill-spmm)
        tokens = kernel(op, problem, gpu, db_path=db_path, cache_dir=cache_dir, fixed=fixed).max_tokens
    ptrs = (ctypes.c_uint64 * max(len(tensors), 1))(*[int(t) for t in tensors])
    handle = ctypes.c_void_p()
    _check(lib.sptune_kernel_autotune(ctypes.byref(req), ctypes.c_void_p(int(stream)), int(tokens), ptrs,
                                      int(workspace), int(workspace_bytes), ctypes.byref(handle)))
    return Kernel(op, problem, gpu, db_path, cache_dir, fixed, _handle=handle)


_kernels = {}
_kernels_lock = threading.Lock()


def kernel(op, problem, gpu="auto", **kw):
    """The tuned kernel for (op, problem, gpu), kept per process (one object per CUDA device)."""
    key = (op, problem, gpu, tuple(sorted(kw.items())), _current_device())
    with _kernels_lock:
        k = _kernels.get(key)
        if k is None:
            k = _kernels[key] = Kernel(op, problem, gpu, **kw)
        return k


def _current_device():
    try:
        import torch
        return torch.cuda.current_device() if torch.cuda.is_available() else -1
    except ImportError:
        return -1


# ---- argument checks (shared by the ops; plain Python, so they run without a GPU) -----------------

def _dtype_name(t):
    return str(getattr(t, "dtype", "?")).replace("torch.", "")


def _check_tensor(name, t, ndim, dtype="bfloat16"):
    for attr in ("shape", "dtype", "device", "data_ptr", "is_contiguous"):
        if not hasattr(t, attr):
            raise TypeError(f"{name} must be a torch.Tensor (got {type(t).__name__})")
    if len(t.shape) != ndim:
        raise ValueError(f"{name} must be {ndim}-D (got shape {tuple(t.shape)})")
    if _dtype_name(t) != dtype:
        raise ValueError(f"{name} must be {dtype} (got {_dtype_name(t)})")
    if getattr(t.device, "type", str(t.device)) != "cuda":
        raise ValueError(f"{name} must be on a CUDA device (got {t.device})")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous (row-major); call .contiguous() first")


def check_twell_ffn(x, w_gate, w_up, w_down):
    """Checks the arguments of twell_ffn; returns (M, D, F). Raises TypeError / ValueError."""
    _check_tensor("x", x, 2)
    for name, w in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        _check_tensor(name, w, 2)
    M, D = (int(v) for v in x.shape)
    F = int(w_gate.shape[0])
    if M < 1 or D < 1 or F < 1:
        raise ValueError(f"empty operand: x {tuple(x.shape)}, w_gate {tuple(w_gate.shape)}")
    for name, w in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        if tuple(int(v) for v in w.shape) != (F, D):
            raise ValueError(f"{name} must be d_ff x d = {F} x {D} (row j: neuron j), got {tuple(w.shape)}")
    devices = {str(t.device) for t in (x, w_gate, w_up, w_down)}
    if len(devices) != 1:
        raise ValueError(f"all operands must be on one device (got {sorted(devices)})")
    if M >= 2 ** 31 or D >= 2 ** 31 or F >= 2 ** 31:
        raise ValueError("dimensions must fit 32-bit integers")
    return M, D, F


# ---- what a layer's activations are like ------------------------------------------------------------

def _in_range(fn, what, entry, values, hi):
    """ValueError naming the first of values outside 0..hi (a ctypes unsigned would wrap it into another count)."""
    bad = next((i for i, v in enumerate(values) if not 0 <= v <= hi), None)
    if bad is not None:
        raise ValueError(f"{fn}: {what}, 0 to {hi} ({entry} {bad}: {values[bad]})")


def describe_twell(active, counts, tokens, d, order=0):
    """The twell-ffn problem for a layer's own activations (sptune_twell_describe): pass it to kernel() (or
    `sptune best twell-ffn --shape ...`) so that the results looked up were measured on data like the model's.

    From a calibration batch's gate g = relu(x @ w_gate.T), counted where it lives (no copy of g):
        active = (g > 0).sum(dim=1).tolist()   # per token, in the batch's order
        counts = (g > 0).sum(dim=0).tolist()   # per neuron
    tokens: the largest batch the kernel will serve; d: the model width; order: 1 when the weights are laid out
    most frequent neuron first (sptune_twell_hot_order). Returns "M=..,D=..,F=..,nnz=..,dead=..,tail=..,...".
    """
    active, counts = [int(v) for v in active], [int(v) for v in counts]
    if not active or not counts:
        raise ValueError("describe_twell needs the counts of at least one token and one neuron")
    # ctypes wraps what its C type cannot hold (-1 reads as 4294967295, 2**40 as 0): refused here, naming the entry
    _in_range("describe_twell", "active counts are the neurons a token fired", "token", active, 2**32 - 1)
    _in_range("describe_twell", "counts are tokens a neuron fired on", "neuron", counts, 2**64 - 1)
    for name, v, hi in (("tokens", int(tokens), 2**63 - 1), ("d", int(d), 2**31 - 1), ("order", int(order), 2**31 - 1)):
        if not 0 <= v <= hi:
            raise ValueError(f"describe_twell: {name} must be 0 to {hi}, got {v}")
    a = (ctypes.c_uint * len(active))(*active)
    c = (ctypes.c_ulonglong * len(counts))(*counts)
    buf = ctypes.create_string_buffer(256)
    _check(_library().sptune_twell_describe(len(active), a, len(counts), c, int(tokens), int(d), int(order), buf,
                                            len(buf)))
    return buf.value.decode()


def hot_order(counts):
    """The neuron order twell-ffn's hot/cold split wants (sptune_twell_hot_order): perm[i] = the neuron that goes
    to position i, the most frequent first (ties by index). counts: per neuron, over a calibration batch, counted
    where the gate lives: (g > 0).sum(dim=0).tolist(). Apply it once to the rows of w_gate, w_up and w_down
    (w[perm]) and call twell_ffn(..., calibrated=True): the same layer, faster."""
    counts = [int(v) for v in counts]
    if not counts:
        raise ValueError("hot_order needs the counts of at least one neuron")
    _in_range("hot_order", "counts are tokens a neuron fired on", "neuron", counts, 2**64 - 1)
    c = (ctypes.c_ulonglong * len(counts))(*counts)
    perm = (ctypes.c_int * len(counts))()
    _check(_library().sptune_twell_hot_order(c, len(counts), perm))
    return list(perm)


# ---- Slot-Filling weights (weights.py) -------------------------------------------------------------------

from .weights import SlotFillWeights  # noqa: E402


# ---- ops -------------------------------------------------------------------------------------------

def token_bucket(M):
    """The batch a kernel is got for when M tokens come: the next power of two (at least 16), so that
    a few kernel objects serve every batch (a launch passes its own M, any value up to the bucket)."""
    return max(16, 1 << (int(M) - 1).bit_length())


# Per-call state of the ops, kept once warm: the kernel and its argument order per (device, bucket, layer
# shape, nnz, order), and a workspace per (device, stream) reused by every call on that stream (calls on one
# stream run in order; the kernels initialise what they use of it). A call then only allocates its output.
_plans = {}
_workspaces = {}
_retired = []   # workspaces outgrown: kept, since a captured CUDA graph may still launch into them
_ops_lock = threading.Lock()


_torch = None   # the torch module once an op has run (an import statement per call costs a dict lookup and more)


def _torch_module():
    global _torch
    if _torch is None:
        import torch
        _torch = torch
    return _torch


def _fast_twell_args(x, w_gate, w_up, w_down):
    """(M, D, F, device index) when the arguments are plainly right (attribute reads and a few C calls, the
    cheapest torch has: get_device for the device, dtype identity), else None: check_twell_ffn then says what is
    wrong."""
    try:
        bf = _torch_module().bfloat16
        M, D = x.shape
        F, D2 = w_gate.shape
        dev = x.get_device()
        if not (x.dtype is bf and w_gate.dtype is bf and w_up.dtype is bf and w_down.dtype is bf and dev >= 0
                and D2 == D and w_up.shape == w_gate.shape and w_down.shape == w_gate.shape
                and 0 < M < 2 ** 31 and 0 < D < 2 ** 31 and 0 < F < 2 ** 31
                and w_gate.get_device() == dev and w_up.get_device() == dev and w_down.get_device() == dev
                and x.is_contiguous() and w_gate.is_contiguous() and w_up.is_contiguous() and w_down.is_contiguous()):
            return None
        return M, D, F, dev
    except (AttributeError, TypeError, ValueError, ImportError):
        return None


def _workspace(torch, device, stream, nbytes):
    """The (device, stream)'s workspace as (tensor, address, bytes), grown to nbytes; during a CUDA graph
    capture a larger one is not kept (it would come from the graph's pool). device: its index."""
    key = (device, stream)
    ws = _workspaces.get(key)
    if ws is None or ws[2] < nbytes:
        t = torch.empty(max(nbytes, 256), dtype=torch.uint8, device=device)
        ws = (t, t.data_ptr(), t.numel())
        if not torch.cuda.is_current_stream_capturing():
            with _ops_lock:
                old = _workspaces.get(key)
                if old is not None:
                    _retired.append(old)
                _workspaces[key] = ws
    return ws


def _stream_of(torch, device):
    """The current stream's handle on device (a torch.device or an index), and whether device is the current one
    (then a launch needs no switch of device). torch's raw-stream call (what its own compiled kernels launch
    with) where it has one: a fraction of a microsecond against several for a Stream object."""
    cur = torch.cuda.current_device()
    idx = device if isinstance(device, int) else device.index
    if idx is None:
        idx = cur
    here = cur == idx
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(idx), here
    return (torch.cuda.current_stream() if here else torch.cuda.current_stream(device)).cuda_stream, here


def _dense_ffn(x, w_gate, w_up, w_down):
    """The same layer dense, on cuBLAS through torch."""
    import torch
    return (torch.relu(x @ w_gate.T) * (x @ w_up.T)) @ w_down


def _median_ms(torch, fn, runs=5):
    """The median of `runs` timed calls of fn on the current stream, after one untimed."""
    fn()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[runs // 2]


# What autotuning found per plan key (twell_ffn_choice reads it).
_choices = {}


def _twell_autotune(torch, x, w_gate, w_up, w_down, M, key, plan):
    """The plan of key timed on the caller's tensors: sptune_kernel_autotune's fastest (the served kernel, those
    recorded nearest, the dense layer on our kernels) against the dense layer on cuBLAS; the faster kept."""
    k0 = plan[0]
    device = x.device
    tensors = {"X": x, "Wg": w_gate, "Wu": w_up, "Wd": w_down, "Y": torch.empty((M, x.shape[1]), dtype=x.dtype,
                                                                                 device=device)}
    stream, _ = _stream_of(torch, device)
    # room for candidates that need more than the served kernel (those needing more still are passed over), and for
    # the dense layer on sptune's kernels (hot=8: its time is the recorded result's baseline, which later processes
    # weigh against the dense layer)
    with torch.cuda.device(device):
        dense_ws = kernel("twell-ffn", k0.problem, fixed="hot=8").workspace
        ws = torch.empty(max(2 * k0.workspace, dense_ws, 256), dtype=torch.uint8, device=device)
        k = autotune("twell-ffn", k0.problem, [tensors[n].data_ptr() for n in k0.tensor_names], ws.data_ptr(),
                     ws.numel(), stream, tokens=M)
        order = [("X", "Wg", "Wu", "Wd", "Y").index(n) for n in k.tensor_names]
        ptrs = [tensors[n].data_ptr() for n in k.tensor_names]
        sparse_ms = _median_ms(torch, lambda: k.launch_ws(ptrs, ws.data_ptr(), ws.numel(), stream, tokens=M))
        dense_ms = _median_ms(torch, lambda: _dense_ffn(x, w_gate, w_up, w_down))
    dense = dense_ms < sparse_ms
    _choices[key] = {"config": k.config, "ms": sparse_ms, "dense_ms": dense_ms, "dense": dense, "tokens": M,
                     "detail": k.detail}
    plan = (k, order, ctypes.c_uint64 * len(order), dense, True, max(k.workspace, ws.numel()), False)
    with _ops_lock:
        _plans[key] = plan
    return plan


def _twell_guard(torch, k, key, plan, wsp, wsn, stream, M):
    """After a plan's first call outside a CUDA graph capture: whether it took the slower exact paths (the data is
    not what the problem says); then the workspace at its bound (no data exceeds it), or, where that cannot be had,
    the dense layer. The plan is marked checked either way."""
    slow = k.slow(wsp, wsn, stream, M)
    need, dense = plan[5], plan[3]
    if slow:
        try:
            need = max(need, k.workspace_bytes(bound=True))
        except SptuneError:
            dense = True
    plan = plan[:3] + (dense, plan[4], need, True)
    with _ops_lock:
        _plans[key] = plan
    return plan


def twell_ffn_choice(M, D, F, nnz=40, calibrated=False, device=None):
    """What twell_ffn(..., autotune=True) chose for that call's shape (the same nnz and calibrated), timed on the
    tensors of its first call: {"config", "ms", "dense_ms", "dense", "tokens", "detail"}, or None when not
    autotuned. dense: the dense layer on cuBLAS was faster and runs instead."""
    import torch
    idx = torch.device(device if device is not None else "cuda").index
    if idx is None:
        idx = torch.cuda.current_device()
    return _choices.get((idx, token_bucket(M), D, F, int(nnz), bool(calibrated)))


def _described(problem, M, D, F, calibrated):
    """A problem described by sptune.describe_twell, for a kernel serving up to M tokens of this layer: its data
    dimensions kept, M, D, F and order set here."""
    keep = [kv for kv in problem.split(",") if kv.split("=")[0] not in ("M", "D", "F", "order") and kv]
    return ",".join([f"M={M}", f"D={D}", f"F={F}"] + keep + [f"order={1 if calibrated else 0}"])


def _twell_ffn_impl(x, w_gate, w_up, w_down, nnz=40, calibrated=False, tune=False, dense_fallback=True, problem=None):
    torch = _torch_module()
    shape = _fast_twell_args(x, w_gate, w_up, w_down)
    if shape is not None:
        M, D, F, dev = shape
    else:
        M, D, F = check_twell_ffn(x, w_gate, w_up, w_down)
        dev = x.get_device()
    key = (dev, token_bucket(M), D, F, problem if problem else int(nnz), bool(calibrated))
    plan = _plans.get(key)
    if tune and (plan is None or not plan[4]) and torch.cuda.is_current_stream_capturing():
        raise SptuneError("sptune.twell_ffn(autotune=True): the first call for this shape times kernels on the "
                          "caller's tensors and cannot run inside a CUDA graph capture: call it once before capturing")
    if plan is None:
        # on x's device: the kernel object ("auto") is got and its module loaded in that device's context
        asked = (_described(problem, key[1], D, F, calibrated) if problem else
                 f"M={key[1]},D={D},F={F},nnz={int(nnz)},order={1 if calibrated else 0}")
        with torch.cuda.device(dev):
            k = kernel("twell-ffn", asked)
        order = [("X", "Wg", "Wu", "Wd", "Y").index(n) for n in k.tensor_names]
        # what the record served says (its worst case over the data it was measured on): dense is faster (where the
        # data asked about is far from every measurement, the kernel runs the dense layer itself)
        dense = k.baseline_ms > 0 and k.expected_ms > k.baseline_ms
        plan = (k, order, ctypes.c_uint64 * len(order), dense, False, k.workspace, False)
        with _ops_lock:
            _plans[key] = plan
    if tune and not plan[4]:
        plan = _twell_autotune(torch, x, w_gate, w_up, w_down, M, key, plan)
    k, order, array, dense = plan[:4]
    if dense and dense_fallback:
        return _dense_ffn(x, w_gate, w_up, w_down)
    y = x.new_empty((M, D))
    stream, here = _stream_of(torch, dev)
    try:
        _, wsp, wsn = _workspace(torch, dev, stream, plan[5])
    except torch.cuda.OutOfMemoryError:
        if not dense_fallback:
            raise
        plan = plan[:3] + (True,) + plan[4:]
        with _ops_lock:
            _plans[key] = plan
        return _dense_ffn(x, w_gate, w_up, w_down)
    ptrs = (x.data_ptr(), w_gate.data_ptr(), w_up.data_ptr(), w_down.data_ptr(), y.data_ptr())
    args = array(*[ptrs[i] for i in order])
    if here:
        k._launch_array(args, wsp, wsn, stream, M)
    else:
        with torch.cuda.device(dev):
            k._launch_array(args, wsp, wsn, stream, M)
    if not plan[6] and not torch.cuda.is_current_stream_capturing():
        if here:
            _twell_guard(torch, k, key, plan, wsp, wsn, stream, M)
        else:
            with torch.cuda.device(dev):
                _twell_guard(torch, k, key, plan, wsp, wsn, stream, M)
    return y


def twell_ffn(x, w_gate, w_up, w_down, nnz=40, calibrated=False, autotune=False, dense_fallback=True, problem=None):
    """The gated FFN layer Y = (relu(X Wg^T) * X Wu^T) Wd with TwELL activation sparsity.

    x: M x d, w_gate, w_up, w_down: d_ff x d (row j: neuron j), all bf16, contiguous, on one CUDA
    device. nnz: the expected active neurons per token (the tuned results nearest to it are used).
    calibrated: the rows are ordered most frequent neuron first (sptune_twell_hot_order), which lets
    the hot/cold split serve. Runs on the current stream; exact whatever the activations (dense tokens
    included) and whatever the order. Where the result served for the problem (its worst case over the kinds of
    data it was measured on) is slower than the dense layer on cuBLAS, that dense layer runs instead.
    autotune: the first call for a shape (per device, token bucket, layer, nnz and calibrated) times on its own
    tensors the kernel served, the configurations recorded nearest and the dense layer on sptune's kernels
    (sptune.autotune), then the fastest of them against the dense layer on cuBLAS, and every later call runs the
    faster (twell_ffn_choice says which, with both times): never slower than dense on the caller's data. Make that
    first call outside CUDA graph capture (during a capture it raises SptuneError). The fastest of sptune's kernels
    is recorded in the user's database (measured on the application's tensors: gen=2) and served for that shape in
    later processes; the choice between it and cuBLAS is this process's (a later one without autotune compares the
    recorded time with the dense layer timed with it, on sptune's kernels).
    dense_fallback=False: always run sptune's kernels, even where the records (or autotune) say the dense layer is
    faster (benchmarks and tests of the kernel path).
    problem: what the layer's activations are like, as sptune.describe_twell gives it from a calibration batch (its
    nnz, heavy tokens, tail, ...; M, D, F and order are set from the call): the kernel is then the one measured
    nearest that data, or the dense layer where nothing was measured near it; nnz is ignored.
    The first call of each plan (outside a CUDA graph capture) reads whether it took the slower exact paths (the
    data was not what it was described as); then the plan takes a workspace at its bound, no data exceeding it."""
    if _compiling():   # torch.compile traces the registered op; eager calls skip its dispatcher
        op = _torch_op()
        if op is not None:
            return op(x, w_gate, w_up, w_down, int(nnz), bool(calibrated), bool(autotune), bool(dense_fallback),
                      problem or "")
    return _twell_ffn_impl(x, w_gate, w_up, w_down, nnz, calibrated, autotune, dense_fallback, problem)


def _compiling():
    try:
        import torch
        return bool(torch.compiler.is_compiling())
    except (ImportError, AttributeError):
        return False


_op = None


def _torch_op():
    """torch.ops.sptune.twell_ffn, registered once when torch has torch.library.custom_op."""
    global _op
    if _op is not None:
        return _op
    try:
        import torch
        custom_op = torch.library.custom_op
    except (ImportError, AttributeError):
        return None

    @custom_op("sptune::twell_ffn", mutates_args=())
    def _op_impl(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
                 nnz: int, calibrated: bool, autotune: bool, dense_fallback: bool, problem: str) -> torch.Tensor:
        return _twell_ffn_impl(x, w_gate, w_up, w_down, nnz, calibrated, autotune, dense_fallback, problem or None)

    @_op_impl.register_fake
    def _(x, w_gate, w_up, w_down, nnz, calibrated, autotune, dense_fallback, problem):
        return x.new_empty(x.shape)

    _op = _op_impl
    return _op


# the torch layer and tuning on one's own tensors (submodules: they use what is defined above)
from .layers import slotfill_linear  # noqa: E402
from .tuning import tune_twell_ffn  # noqa: E402
