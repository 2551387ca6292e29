"""SlotFillWeights: a pruned weight matrix encoded once for slotfill-spmm (sptune_slotfill_*), placed on the device and
applied with a kernel got for it."""
import ctypes

from . import SptuneError, _SlotFillInfo, _check, _library


class SlotFillWeights:
    """A pruned weight matrix W (M x K, as nn.Linear keeps it; zeros, +0 or -0, are the pruned weights) encoded once
    for slotfill-spmm, Y[N x M] = X[N x K] W^T (sptune_slotfill_encode). `data`: the M*K 16-bit values in host memory,
    row-major, as a bytes-like object or anything with a data_ptr() (a contiguous CPU tensor); fp16: fp16, else bf16.
    A matrix whose encoding is no smaller than 0.9 of dense (one not pruned) is encoded with a RuntimeWarning: the
    dense product will be faster.

        w = sptune.SlotFillWeights(weight.cpu(), M, K)
        k = sptune.kernel("slotfill-spmm", w.problem(16), fixed=w.fixed)   # the kernel for batches up to 16
        w.adopt(image.data_ptr(), image.numel())   # device memory holding w.image() (or w.upload())
        w.apply(k, x.data_ptr(), y.data_ptr(), tokens, stream)   # refused if k was got for other weights
        # (a kernel with k.workspace > 0, expand=1 for large batches, takes that many bytes: workspace, workspace_bytes)
    """

    def __init__(self, data, M, K, fp16=False, config=None):
        lib = _library()
        M, K = int(M), int(K)
        if hasattr(data, "data_ptr"):   # a tensor: host memory, contiguous, M*K 16-bit values (read in place)
            device = getattr(data, "device", "cpu")
            if getattr(device, "type", str(device)) != "cpu":
                raise ValueError(f"W must be in host memory (call .cpu() first), got {device}")
            if not data.is_contiguous() or data.numel() != M * K or data.element_size() != 2:
                raise ValueError(f"W must be a contiguous tensor of {M} x {K} 16-bit values, got {tuple(data.shape)} of "
                                 f"{data.element_size()}-byte elements")
            ptr, keep = ctypes.c_void_p(int(data.data_ptr())), data
        else:
            buf = bytes(data)
            if len(buf) != M * K * 2:
                raise ValueError(f"W is {M} x {K} 16-bit values: {M * K * 2} bytes, got {len(buf)}")
            keep = ctypes.create_string_buffer(buf, len(buf))
            ptr = ctypes.cast(keep, ctypes.c_void_p)
        handle = ctypes.c_void_p()
        _check(lib.sptune_slotfill_encode(ptr, M, K, 1 if fp16 else 0, None if config is None else config.encode(),
                                          ctypes.byref(handle)))
        del keep
        self._lib, self._h, self._dev = lib, handle, None
        self.M, self.K = M, K
        self.fixed = lib.sptune_slotfill_fixed(handle).decode()
        info = _SlotFillInfo()
        _check(lib.sptune_slotfill_info_get(handle, ctypes.byref(info)))
        self.info = {name: getattr(info, name) for name, _ in _SlotFillInfo._fields_}
        # an encoding no smaller than ~0.9 of dense cannot beat a dense product that streams W as well
        enc = sum(self.info[k] for k in ("bytes_tc", "bytes_slots", "bytes_residual", "bytes_index"))
        dense = max(self.info["bytes_dense"], 1)
        if enc > 0.9 * dense:
            import warnings
            warnings.warn(f"sptune: this {M} x {K} matrix is {1 - self.info['nonzeros'] / (M * K):.1%} sparse; its "
                          f"Slot-Filling encoding is {enc / dense:.2f} of dense bytes, so the dense product will be "
                          f"faster (Slot-Filling is for weights pruned to ~50% or more)", RuntimeWarning, stacklevel=2)

    def problem(self, tokens):
        """The slotfill-spmm problem for batches of up to `tokens` (sparsity and pruning measured from the encoding)."""
        buf = ctypes.create_string_buffer(256)
        _check(self._lib.sptune_slotfill_problem(self._h, int(tokens), buf, len(buf)))
        return buf.value.decode()

    def image(self):
        """The encoded bytes to place on the device (bytes)."""
        n = ctypes.c_size_t()
        p = self._lib.sptune_slotfill_image(self._h, ctypes.byref(n))
        return ctypes.string_at(p, n.value)

    def _place(self, handle):
        if self._dev:
            self._lib.sptune_slotfill_gpu_free(self._dev)
        self._dev = handle
        return self._lib.sptune_slotfill_gpu_image(handle)

    def upload(self):
        """Copies the image into new device memory of the current CUDA context; returns its device address."""
        h = ctypes.c_void_p()
        _check(self._lib.sptune_slotfill_upload(self._h, ctypes.byref(h)))
        return self._place(h)

    def adopt(self, image, nbytes):
        """Uses device memory the caller filled with image() (`nbytes` its size); returns its address."""
        h = ctypes.c_void_p()
        _check(self._lib.sptune_slotfill_adopt(self._h, int(image), int(nbytes), ctypes.byref(h)))
        return self._place(h)

    def apply(self, kernel, x, y, tokens, stream=0, workspace=0, workspace_bytes=0):
        """Y = X W^T with `kernel` (a Kernel of slotfill-spmm), after checking it was got for these weights; the
        workspace (device address and bytes): kernel.workspace bytes at least (0 but for expand=1 kernels)."""
        if self._dev is None:
            raise SptuneError("SlotFillWeights.apply: place the weights on the device first (upload or adopt)")
        with kernel._lock:
            _check(self._lib.sptune_slotfill_apply(kernel._h, ctypes.c_void_p(int(stream)), int(tokens), self._dev,
                                                   int(x), int(y), int(workspace), int(workspace_bytes)))

    def __del__(self):
        lib = getattr(self, "_lib", None)
        if lib is not None:
            if self._dev:
                lib.sptune_slotfill_gpu_free(self._dev)
                self._dev = None
            if self._h:
                lib.sptune_slotfill_free(self._h)
                self._h = None
