-- twell-d2t: the TwELL producer. H = relu(X Wg^T) computed on tensor cores and packed to TwELL
-- (runtime/sp_twell.h) straight from the GEMM epilogue: the dense activations never reach
-- device memory. X is M x D, Wg is F x D (row-major, bf16); the tile width T is the CTA's bn.
-- Main loops: mma.sync + cp.async (portable: sm_80, sm_90a, sm_120) or wgmma (sm_90a);
-- lib/twell_produce.lua.
local dist = require("lib.twell_dist")
local text = require("lib.text")
local cuda = require("lib.cuda")
local produce = require("lib.twell_produce")

local function kernel_name(c) return text.kernel_name("sp_twell_d2t", c, produce.params) end

local a = produce.args
local ARGS = {a.X, a.Wg, a.packed, a.pool, a.pool_counter, a.pool_capacity,
              {name = "M", type = "i32", role = "dim"}, {name = "F", type = "i32", role = "dim"},
              {name = "D", type = "i32", role = "dim"}}

return {
  name = "twell-d2t",
  family = "twell",
  description = "TwELL producer: relu(X Wg^T) on tensor cores (mma.sync or wgmma), packed to TwELL in the epilogue"
    .. " (exact, overflow pool)",
  args = ARGS,
  dims = dist.with({"M", "D", "F"}, dist.made),   -- nnz and the rest: the data the op is measured on
  ranges = dist.ranges(dist.made_ranges),
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = produce.params,
  constraints = produce.constraints,
  defaults = function(gpu) return produce.hopper_default(gpu) end,

  kernel = function(c, gpu) return kernel_name(c) end,

  launch = function(c, p, gpu)
    return produce.launch{c = c, rows = p.M, F = p.F, D = p.D, a = "X", b = "Wg", gpu = gpu}
  end,

  emit = function(c, p, gpu)
    return cuda.prelude .. "\n" .. produce.device(c) .. "\n" .. produce.kernel(c, kernel_name(c), ARGS)
  end,
}
