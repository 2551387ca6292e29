"""Tuning on the caller's own tensors: sptune.tune_twell_ffn (the tensors written to a safetensors file for the
sptune command's `tune twell-ffn --data`)."""
import ctypes
import json
import os
import shutil
import struct
import subprocess
import tempfile

from . import SptuneError, _dtype_name, _library, _library_path, kernel


def _sptune_bin():
    """The sptune command of the library in use: $SPTUNE_BIN, beside the library (a build folder), the prefix's
    bin/ (cmake --install), then the PATH."""
    env = os.environ.get("SPTUNE_BIN")
    if env:
        return env
    _library()
    path = _library_path()
    if path and os.path.sep in path:
        here = os.path.dirname(os.path.abspath(path))
        for c in (os.path.join(here, "sptune"), os.path.join(here, "..", "bin", "sptune")):
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return c
    found = shutil.which("sptune")
    if not found:
        raise SptuneError("the sptune command was not found (set SPTUNE_BIN, or put it on the PATH)")
    return found


def _host_bytes(name, t):
    """A 16-bit tensor's elements as bytes, read from a contiguous host copy."""
    h = t.detach().cpu().contiguous()
    if h.element_size() != 2:
        raise ValueError(f"{name} must hold 16-bit values (got {h.element_size()}-byte elements)")
    return ctypes.string_at(h.data_ptr(), h.numel() * 2)


def _write_safetensors(path, named):
    """named: (name, dtype as safetensors spells it, shape, bytes) in order."""
    header, offset = {}, 0
    for name, dtype, shape, data in named:
        header[name] = {"dtype": dtype, "shape": [int(v) for v in shape], "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, data in named:
            f.write(data)


def tune_twell_ffn(x, w_gate, w_up, w_down, budget="2m", order=0, gpu="auto", db_path=None, timeout=None):
    """Tunes twell-ffn on the caller's own tensors (`sptune tune twell-ffn --data`): x, a calibration batch (M tokens x
    d) from the model, and the layer's weights (w_gate, w_up: d_ff x d; w_down: d_ff x d, or d x d_ff as nn.Linear
    keeps it), bf16, on any device (copied to the host once). The problem is measured from them (active neurons per
    token, tail, dense tokens, dead neurons), every variant verified and timed on them, the results recorded in the
    database (db_path, default $SPTUNE_DB or the usual one); order=1 tunes the layer with its neurons laid out by
    hot_order. Returns the Kernel the runtime then serves for that problem. Needs the sptune command (SPTUNE_BIN) and a
    GPU; raises SptuneError with the command's message otherwise."""
    shapes = {}
    for name, t in (("x", x), ("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        if not hasattr(t, "shape") or len(t.shape) != 2:
            raise ValueError(f"{name} must be a 2-D tensor (got {getattr(t, 'shape', type(t).__name__)})")
        if _dtype_name(t) != "bfloat16":
            raise ValueError(f"{name} must be bfloat16 (got {_dtype_name(t)})")
        shapes[name] = tuple(int(v) for v in t.shape)
    M, D = shapes["x"]
    F = shapes["w_gate"][0]
    if shapes["w_gate"] != (F, D) or shapes["w_up"] != (F, D) or shapes["w_down"] not in ((F, D), (D, F)):
        raise ValueError(f"x is {M} x {D}: w_gate and w_up must be d_ff x {D}, w_down d_ff x {D} or {D} x d_ff "
                         f"(got {shapes['w_gate']}, {shapes['w_up']}, {shapes['w_down']})")
    with tempfile.TemporaryDirectory(prefix="sptune-tune-") as tmp:
        path = os.path.join(tmp, "layer.safetensors")
        named = []
        for name, t in (("x", x), ("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
            named.append((name, "BF16", shapes[name], _host_bytes(name, t)))
        _write_safetensors(path, named)
        del named
        cmd = [_sptune_bin(), "tune", "twell-ffn", "--data", path, "--tensors", "x=x,gate=w_gate,up=w_up,down=w_down",
               "--budget", str(budget), "--gpu", gpu, "--order", "1" if order else "0", "--json", "--quiet"]
        if db_path:
            cmd += ["--db", db_path]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise SptuneError(f"sptune tune twell-ffn did not finish in {timeout} s") from e
    if r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise SptuneError(f"sptune tune twell-ffn (exit {r.returncode}): {msg[-1] if msg else 'no message'}")
    try:
        summary = json.loads(r.stdout)
    except ValueError as e:
        raise SptuneError(f"sptune tune twell-ffn: unreadable summary: {r.stdout[:200]!r}") from e
    return kernel("twell-ffn", summary["problem"], gpu, db_path=db_path)
