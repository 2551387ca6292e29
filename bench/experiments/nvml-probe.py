#!/usr/bin/env python3
"""How often the GPU's NVML energy counter moves (its resolution in time), read in a tight loop for 2 s:
the window sp_bench measures energy over must be long against it.  python3 bench/experiments/nvml-probe.py"""
import ctypes
import time

nv = ctypes.CDLL("libnvidia-ml.so.1")
assert nv.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
mj = ctypes.c_ulonglong()
changes, last, t0 = [], None, time.perf_counter()
while time.perf_counter() - t0 < 2.0:
    assert nv.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(mj)) == 0
    if mj.value != last:
        changes.append((time.perf_counter() - t0, mj.value))
        last = mj.value
gaps = [b[0] - a[0] for a, b in zip(changes, changes[1:])]
steps = [b[1] - a[1] for a, b in zip(changes, changes[1:])]
print(f"nvml energy counter: {len(changes)} distinct values in 2 s; median gap {sorted(gaps)[len(gaps)//2]*1e3:.1f} ms, "
      f"median step {sorted(steps)[len(steps)//2]} mJ (idle)" if gaps else "nvml energy counter: did not move in 2 s")
