-- twell-ffn: the whole gated FFN layer, Y = (relu(X Wg^T) (.) (X Wu^T)) Wd, as one tunable
-- operation: what an inference engine calls. A pipeline of kernels on one stream with one
-- argument list: a zero step (the pool counter and the per-token counts: nothing for the caller to
-- reset), the TwELL producer (lib/twell_produce.lua) packs the gate from its GEMM epilogue and
-- counts each token's active neurons, the gated consumer (lib/twell_row.lua or lib/twell_tile.lua)
-- computes `up` for the active neurons only and the down projection, and the dense path
-- (lib/twell_dense.lua) takes the tokens with thousands of active neurons on tensor cores.
-- Producer and consumer share the tile width T (= bn) and the slots per tile, which are therefore
-- tuned together. X: M x D; Wg, Wu, Wd: F x D (row j: neuron j).
-- Exact for any workspace: a tile that overflows its slots when the pool is full is marked lost and
-- recomputed from X and Wg (its token routed to the dense path while dense_capacity allows, else
-- by the consumer); pool_counter ends holding the pool words the call wanted, so a caller sees
-- `pool_counter > pool_capacity` when slower paths ran, and the arguments' typical and bound sizes
-- (sptune_kernel_arg) say what to allocate.
local dist = require("lib.twell_dist")
local text = require("lib.text")
local args = require("lib.args")
local cuda = require("lib.cuda")
local produce = require("lib.twell_produce")
local row = require("lib.twell_row")
local tile = require("lib.twell_tile")
local dense = require("lib.twell_dense")
local epilogue = require("lib.epilogue")

-- The producer's and consumer's parameters, each narrowed to the values that pay on the
-- shapes of FFN layers (the full producer space is twell-d2t's), so that the joint space stays
-- searchable.
local keep = {
  mainloop = {"mma", "wgmma"}, wgs = {1, 2}, load = {"tma", "cpasync"}, epi = {"inline", "overlap"},
  bm = {128, 256}, bn = {64, 128, 256}, bk = {32, 64}, wm = {64}, wn = {64}, stages = {3, 4},
  swizzle = {"xor"}, prefetch = {"a", "none"}, group_m = {8}, slots = {7, 15, 31, 63},
  warps = {4, 8, 16}, split = {1, 2, 4, 8}, unroll = {2, 4}, ldg = {"nc"}, dots = {4, 8}, dunroll = {1, 2},
  consumer = {"row", "tile"}, route = {512, 256, 1024, 2048, 0, -1},
}
local params = {}
for _, src in ipairs({produce.params, row.params, row.gated_params, dense.params}) do
  for _, p in ipairs(src) do
    local values, default = keep[p.name], p.default
    local ok = false
    for _, v in ipairs(values) do ok = ok or v == default end
    params[#params + 1] = {name = p.name, values = values, default = ok and default or values[1], doc = p.doc}
  end
end

local constraints = {}
for _, src in ipairs({produce.constraints, row.constraints, dense.constraints}) do
  for _, k in ipairs(src) do constraints[#constraints + 1] = k end
end
constraints[#constraints + 1] = row.smem_constraint("the consumer's rows fit in shared memory", true,
  function(c) return c.consumer == "tile" end)
for _, k in ipairs(tile.constraints(row.params, function(c) return c.bn end)) do constraints[#constraints + 1] = k end

local function names(c)
  local n = {}
  for _, k in ipairs({"zero", "produce", "consume", "dense_h", "dense_y", "finalize"}) do
    n[k] = text.kernel_name("sp_twell_ffn_" .. k, c, params)
  end
  return n
end

local a = produce.args
local ARGS = {a.X, a.Wg,
              {name = "Wu", type = "bf16", role = "input", shape = {"F", "D"}, doc = "row j: neuron j's up weights"},
              {name = "Wd", type = "bf16", role = "input", shape = {"F", "D"},
               doc = "row j: what neuron j adds to the output"},
              {name = "Y", type = "bf16", role = "output", shape = {"M", "D"}},
              a.packed, a.pool,
              {name = "pool_counter", type = "u64", role = "workspace", shape = {1},
               doc = "set by the call: the pool words it wanted (more than pool_capacity: slower paths ran)"},
              a.pool_capacity,
              {name = "row_info", type = "u32", role = "workspace", shape = {"M + 1 + dense_capacity"},
               doc = "per-token counts, then the tokens routed to the dense path"},
              {name = "dense_h", type = "f32", role = "workspace", shape = {"dense_capacity", "F"},
               doc = "the dense path's gated activations"},
              {name = "dense_acc", type = "f32", role = "workspace", shape = {"dense_capacity", "D"},
               doc = "the dense path's output rows in fp32"},
              {name = "dense_capacity", type = "i32", role = "scalar", doc = "tokens the dense path may take",
               typical = "min(M, cdiv(M, 64) + 16)", bound = "M"},
              {name = "M", type = "i32", role = "dim"}, {name = "F", type = "i32", role = "dim"},
              {name = "D", type = "i32", role = "dim"}}

return {
  name = "twell-ffn",
  family = "twell",
  description = "TwELL gated FFN layer: packed gate from the gate GEMM's epilogue, then up and down for active"
    .. " neurons only",
  args = ARGS,
  dims = dist.with{"M", "D", "F"},   -- nnz and the rest: the data the op is measured on
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = constraints,
  -- on Hopper the producer's wgmma + TMA loop with overlapped packing and the row consumer that measured
  -- fastest on realistic activations (bench/RESULTS.md)
  defaults = function(gpu)
    return produce.hopper_default(gpu, "warps=16,split=1,unroll=4,dots=8,dunroll=2,route=512")
  end,

  kernel = function(c, gpu)
    local n = names(c)
    if c.route < 0 then return {n.zero, n.produce, n.consume} end
    return {n.zero, n.produce, n.consume, n.dense_h, n.dense_y, n.finalize}
  end,

  launch = function(c, p, gpu)
    local l = {dense.zero_launch(gpu),
               produce.launch{c = c, rows = p.M, F = p.F, D = p.D, a = "X", b = "Wg", gpu = gpu},
               c.consumer == "tile" and tile.launch(p, c.bn) or row.launch(c, p, true)}
    for _, x in ipairs(dense.launches(c, p, gpu)) do l[#l + 1] = x end
    return l
  end,

  emit = function(c, p, gpu)
    local n = names(c)
    local consts = {T = c.bn, S = c.slots}
    local function sig(name) return row.signature(name, ARGS, consts) end
    return text.fill([[
${prelude}
${route}
${pdevice}
extern "C" __global__ void __launch_bounds__(${threads}, 1)
${pname}(${params})
{
${aliases}
${body}
}
${device}
${consumer}
${dense}
]], {prelude = cuda.prelude, route = c.route >= 0 and epilogue.twell_route_device or "",
     pdevice = produce.device(c), params = args.params(ARGS, produce.kernel_params(c)),
     threads = produce.threads(c), pname = n.produce, aliases = produce.aliases, body = produce.body(c),
     device = row.device(c) .. ((c.consumer == "tile" or c.route >= 0) and tile.device() or ""),
     consumer = c.consumer == "tile" and tile.kernel(n.consume, ARGS, consts, true)
                or row.kernel(n.consume, c, true, ARGS, consts, true),
     dense = dense.kernels(c, p, gpu, n, sig)})
  end,
}
