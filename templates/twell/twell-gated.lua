-- twell-gated: the gated FFN's consumer. Y = (G (.) (X Wu^T)) Wd, where G (M x F) is the packed
-- gate (TwELL, tile T, S slots, overflow pool: what twell-d2t writes), X is M x D, Wu is F x D
-- (row j: neuron j's up weights) and Wd is F x D (row j: what neuron j adds to the output); all
-- bf16, fp32 accumulation. `up` is computed only where the gate is nonzero: one warp per token
-- row (or `split` warps sharing a row) takes the row's entries 32 at a time, turns each gate value
-- g into g * dot(x, Wu[j]), and gathers the Wd rows into the output row (lib/twell_row.lua).
-- Any M, F, D.
local dist = require("lib.twell_dist")
local text = require("lib.text")
local cuda = require("lib.cuda")
local row = require("lib.twell_row")
local tile = require("lib.twell_tile")

local params = {}
for _, src in ipairs({row.params, row.gated_params}) do
  for _, p in ipairs(src) do params[#params + 1] = p end
end

local constraints = {row.constraints[1]}
for _, k in ipairs(tile.constraints(row.params, function(c, p) return p.T end)) do constraints[#constraints + 1] = k end
constraints[#constraints + 1] = row.shape_constraint
constraints[#constraints + 1] = row.smem_constraint(
  "the rows (fp32 output per warp, bf16 x per row) fit in shared memory",
  true, function(c) return c.consumer == "tile" end)

local function kernel_name(c) return text.kernel_name("sp_twell_gated", c, params) end

local ARGS = {
  {name = "packed", type = "u32", role = "input", shape = {"M", "cdiv(F, T)", "S + 1"},
   doc = "the packed gate (runtime/sp_twell.h)"},
  {name = "pool", type = "u32", role = "input", shape = {"?"},
   doc = "its overflow pool, as long as the packing needed"},
  {name = "X", type = "bf16", role = "input", shape = {"M", "D"}},
  {name = "Wu", type = "bf16", role = "input", shape = {"F", "D"}, doc = "row j: neuron j's up weights"},
  {name = "Wd", type = "bf16", role = "input", shape = {"F", "D"}, doc = "row j: what neuron j adds to the output"},
  {name = "Y", type = "bf16", role = "output", shape = {"M", "D"}},
  {name = "M", type = "i32", role = "dim"}, {name = "F", type = "i32", role = "dim"},
  {name = "D", type = "i32", role = "dim"}, {name = "T", type = "i32", role = "dim"},
  {name = "S", type = "i32", role = "dim"},
}

return {
  name = "twell-gated",
  family = "twell",
  description = "TwELL gated consumer: (gate (.) X Wu^T) Wd for the active neurons only: one warp per row on"
    .. " CUDA cores, or token tiles on tensor cores",
  args = ARGS,
  dims = dist.with{"M", "F", "D", "T", "S"},   -- nnz and the rest: the data the op is measured on
  ranges = dist.ranges(),
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = constraints,

  kernel = function(c, gpu) return kernel_name(c) end,

  launch = function(c, p, gpu)
    if c.consumer == "tile" then return tile.launch(p, p.T) end
    return row.launch(c, p, true)
  end,

  emit = function(c, p, gpu)
    return text.fill([[
${prelude}
${device}
${kernel}
]], {prelude = cuda.prelude, device = row.device(c) .. (c.consumer == "tile" and tile.device() or ""),
     kernel = c.consumer == "tile" and tile.kernel(kernel_name(c), ARGS) or row.kernel(kernel_name(c), c, true, ARGS)})
  end,
}
