"""Slot-Filling weights as a torch layer: sptune.slotfill_linear (a pruned linear layer encoded once, the kernel
served per batch bucket, the custom op torch.ops.sptune.slotfill_mm under torch.compile)."""
from . import SlotFillWeights, SptuneError, _compiling, _stream_of, _workspace, kernel

_layers = {}   # id -> layer, for the custom op (weakly: a layer that is gone is not kept alive)
_layer_class = None


def slotfill_linear(weight, bias=None, keep_dense=False, max_tokens=None, gpu="auto", db_path=None, config=None):
    """A torch.nn.Module computing y = x W^T (+ bias) with W encoded once for slotfill-spmm (its zeros, +0 or -0 as
    weight * mask leaves them, are the pruned weights; 2:4-pruned weights take the sp24 layout, others the bitmap
    one). weight: M x K bf16 or fp16 (an nn.Linear's weight, on any device); x: (..., K) of the same type on a CUDA
    device. The encoded image is
    placed on weight's CUDA device (the current one if weight is on the host). keep_dense: keep the dense weight and
    use it for batches the tuned results say dense is faster for (expected_ms > baseline_ms); without it every
    batch runs sparse, and a batch size whose tuned result is slower than dense is said once (a RuntimeWarning naming
    it). max_tokens: refuse larger batches (None: any). Kernels are got per batch bucket (1, 8, 16, 32, ...) once;
    from 32 tokens on (sm_90a) they are the large-batch kernel, which decodes each W tile once per CTA for a whole
    tile of tokens. Under torch.compile the call is the custom op torch.ops.sptune.slotfill_mm (fake shapes)."""
    return _slotfill_linear_class()(weight, bias, keep_dense, max_tokens, gpu, db_path, config)


def _bucket(n):
    return 1 if n <= 1 else max(8, 1 << (int(n) - 1).bit_length())


def _slotfill_linear_class():
    global _layer_class
    if _layer_class is not None:
        return _layer_class
    import torch
    import warnings
    import weakref

    class SlotFillLinear(torch.nn.Module):
        def __init__(self, weight, bias, keep_dense, max_tokens, gpu, db_path, config):
            super().__init__()
            w = weight.detach()
            if w.dim() != 2 or w.dtype not in (torch.bfloat16, torch.float16):
                raise ValueError(f"weight must be a 2-D bf16 or fp16 tensor (M x K), got {tuple(w.shape)} {w.dtype}")
            self.out_features, self.in_features = (int(v) for v in w.shape)
            self.dtype = w.dtype
            device = w.device if w.is_cuda else torch.device("cuda", torch.cuda.current_device())
            self.device = device
            self.weights = SlotFillWeights(w.cpu().contiguous(), self.out_features, self.in_features,
                                           fp16=w.dtype == torch.float16, config=config)
            with torch.cuda.device(device):
                self.weights.upload()
            if bias is not None:
                bias = bias.detach().to(device=device, dtype=w.dtype)
            self.register_buffer("bias", bias)
            self.register_buffer("dense", w.to(device) if keep_dense else None)
            self.max_tokens, self.gpu, self.db_path = max_tokens, gpu, db_path
            self._kernels = {}
            self._id = id(self)
            _layers[self._id] = weakref.ref(self)
            weakref.finalize(self, _layers.pop, self._id, None)

        def extra_repr(self):
            return f"in_features={self.in_features}, out_features={self.out_features}, {self.weights.fixed}"

        def kernel_for(self, tokens):
            """The kernel a batch of `tokens` runs (got for its bucket once) and whether dense is faster for it."""
            b = _bucket(tokens)
            got = self._kernels.get(b)
            if got is None:
                with torch.cuda.device(self.device):
                    k = kernel("slotfill-spmm", self.weights.problem(b), self.gpu, fixed=self.weights.fixed,
                               db_path=self.db_path)
                dense = k.baseline_ms > 0 and k.expected_ms > k.baseline_ms
                if dense and self.dense is None:   # said once per batch size, not hidden behind a slow run
                    warnings.warn(f"sptune.slotfill_linear ({self.out_features} x {self.in_features}, "
                                  f"{self.weights.fixed}): dense cuBLAS measured faster for batches of up to {b} "
                                  f"tokens ({k.baseline_ms:.4f} ms against {k.expected_ms:.4f} ms); keep_dense=True "
                                  f"runs it there", RuntimeWarning, stacklevel=3)
                got = self._kernels[b] = (k, dense)
            return got

        def _sparse(self, x2, k=None):
            n = x2.shape[0]
            y = torch.empty((n, self.out_features), dtype=self.dtype, device=x2.device)
            if n:
                if k is None:
                    k = self.kernel_for(n)[0]
                stream, here = _stream_of(torch, x2.device)
                # expand=1 kernels expand W into a workspace for the call: one per (device, stream), shared by layers
                _, wsp, wsn = _workspace(torch, x2.device.index, stream, k.workspace) if k.workspace else (None, 0, 0)
                if here:
                    self.weights.apply(k, x2.data_ptr(), y.data_ptr(), n, stream, wsp, wsn)
                else:
                    with torch.cuda.device(x2.device):
                        self.weights.apply(k, x2.data_ptr(), y.data_ptr(), n, stream, wsp, wsn)
            return y

        def forward(self, x):
            if x.shape[-1] != self.in_features or x.dtype != self.dtype or x.device != self.device:
                raise ValueError(f"x must be (..., {self.in_features}) {self.dtype} on {self.device}, got "
                                 f"{tuple(x.shape)} {x.dtype} on {x.device}")
            x2 = x.reshape(-1, self.in_features)
            if not x2.is_contiguous():
                x2 = x2.contiguous()
            n = x2.shape[0]
            if self.max_tokens is not None and n > self.max_tokens:
                raise ValueError(f"a batch of {n} tokens; this layer takes up to {self.max_tokens}")
            k, dense = self.kernel_for(n) if n else (None, False)
            bias = self.bias
            if dense and self.dense is not None:
                return torch.nn.functional.linear(x, self.dense, bias)
            op = _slotfill_op() if _compiling() else None
            if op is not None:
                y = op(x2, self._id, self.out_features)
                if bias is not None:
                    y = y + bias
            else:
                y = self._sparse(x2, k)
                if bias is not None:
                    y.add_(bias)
            return y.reshape(*x.shape[:-1], self.out_features)

    _layer_class = SlotFillLinear
    return _layer_class


_sf_op = None


def _slotfill_op():
    """torch.ops.sptune.slotfill_mm(x, layer id, M): the layer's sparse product as a custom op (fake: shapes);
    None where torch has no torch.library.custom_op (before 2.4: torch.compile then breaks its graph there)."""
    global _sf_op
    if _sf_op is not None:
        return _sf_op
    import torch
    if not hasattr(torch.library, "custom_op"):
        return None

    @torch.library.custom_op("sptune::slotfill_mm", mutates_args=())
    def _mm(x: torch.Tensor, layer: int, out_features: int) -> torch.Tensor:
        ref = _layers.get(layer)
        lin = ref() if ref is not None else None
        if lin is None:
            raise SptuneError(f"sptune.slotfill_mm: layer {layer} is gone")
        return lin._sparse(x)

    @_mm.register_fake
    def _(x, layer, out_features):
        return x.new_empty((x.shape[0], out_features))

    _sf_op = _mm
    return _sf_op


