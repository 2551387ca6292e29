-- twell-ffn: the whole gated FFN layer, Y = (relu(X Wg^T) (.) (X Wu^T)) Wd, as one tunable
-- operation: what an inference engine calls. A pipeline of kernels on one stream with one
-- argument list: a zero step (the pool counter and the per-token counts: nothing for the caller to
-- reset), the TwELL producer (lib/twell_produce.lua) packs the gate from its GEMM epilogue and
-- counts each token's active neurons, the gated consumer (lib/twell_row.lua, lib/twell_tile.lua or
-- lib/twell_rowreg.lua: one kernel, or with passes > 1 two, the dot products and then the output)
-- computes `up` for the active neurons only and the down projection, and the dense path
-- (lib/twell_dense.lua) takes the tokens with thousands of active neurons on tensor cores.
-- Producer and consumer share the tile width T (= bn) and the slots per tile, which are therefore
-- tuned together. X: M x D; Wg, Wu, Wd: F x D (row j: neuron j).
-- Hot/cold split (hot = h > 0): the application orders its neurons by how often they fire, the
-- most frequent first (sptune_twell_hot_order computes the permutation from observed activations;
-- applied once to the rows of Wg, Wu and Wd, it leaves the layer's function unchanged). The first
-- H = h/8 of the neurons (rounded up to whole tiles) then run as a dense slice on tensor cores for
-- every token: the producer writes their relu(gate) to hot_h instead of packing it, hot_up multiplies
-- it by X Wu[:H]^T in its epilogue, hot_y adds hot_h Wd[:H] to Y after the sparse part wrote it. The
-- cold remainder goes through the sparse consumer and the dense path as before, each writing its output
-- rounded to bf16 to Y and what the rounding left to Ylo (after hot_h in its workspace); hot_y's
-- accumulators start from their sum, so Y is rounded once, as the dense layer's is (two roundings lost
-- a heavy token's output where its hot and cold parts were large and cancelled). hot = 8 is the dense
-- layer (no sparse part); hot = 0 the sparse pipeline alone. A problem with order=1 declares that
-- order (the harness then gives every configuration such weights).
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
local rowreg = require("lib.twell_rowreg")
local dense = require("lib.twell_dense")
local dense_wgmma = require("lib.twell_dense_wgmma")
local epilogue = require("lib.epilogue")
local mainloop = require("lib.mainloop")
local wgmma = require("lib.wgmma")

-- The producer's and consumer's parameters, each narrowed to the values that pay on the
-- shapes of FFN layers (the full producer space is twell-d2t's), so that the joint space stays
-- searchable.
local keep = {
  mainloop = {"mma", "wgmma"}, wgs = {1, 2}, load = {"tma", "cpasync"}, epi = {"inline", "overlap", "regs", "regs2"},
  bm = {128, 256}, bn = {64, 128, 256}, bk = {32, 64}, wm = {64}, wn = {64}, stages = {3, 4},
  swizzle = {"xor"}, prefetch = {"a", "none"}, group_m = {8}, slots = {7, 15, 31, 63},
  warps = {2, 4, 8, 16}, split = {1, 2, 4, 8}, unroll = {2, 4}, ldg = {"nc"}, dots = {1, 2, 4, 8}, dunroll = {1, 2},
  consumer = {"row", "tile", "reg", "regmma"}, route = {512, 256, 1024, 2048, 0, -1, 128, 64},
}
-- What this op's consumer and dots also mean (the register consumer is twell-ffn's alone).
local docs = {
  consumer = "gated: one warp per token row on CUDA cores with its output row in shared memory (row) or in"
    .. " registers (reg: lib/twell_rowreg.lua; regmma: the same with its arithmetic on tensor cores), or 16-token"
    .. " tiles whose union of active neurons runs on tensor cores (tile)",
  dots = "gated: entries whose Wu rows are read together (row: 4 or 8; reg, regmma: 1 or 2, their Wd rows with them)",
  epi = "packing: by the whole CTA after its main loop, or (wgmma + tma) by packer warps of a persistent CTA while the"
    .. " next tile's main loop runs, or (wgmma + tma) by the warpgroups of a persistent CTA straight from their"
    .. " accumulators (no staging tile: room for a fourth stage); regs2: the same in clusters of two CTAs on tiles of"
    .. " the same Wg rows, each multicasting half of every Wg stage to both",
}
local HOT = {{name = "hot", values = {0, 1, 2, 4, 8}, default = 0,
              doc = "hot/cold split: the first hot/8 of the neurons (ordered most frequent first:"
                .. " sptune_twell_hot_order) run as a dense tensor-core slice for every token, the rest sparse;"
                .. " 0: all sparse, 8: the dense layer"}}
-- after every earlier parameter: configurations recorded before it keep their text (and take its default)
local HOT_LOOP = {{name = "hotloop", values = {"staged", "pingpong"}, default = "staged", added = true,
                   doc = "the hot slice's two GEMMs: the producer's tiles, store warps draining each staged tile"
                     .. " (3 stages beside it), or ping-pong warpgroups on 128 x 128 tiles storing straight from"
                     .. " their accumulators (4 stages, the store overlapped with the other warpgroup's main loop)"}}
-- Programmatic dependent launch: between the pipeline's kernels the GPU otherwise idles while it drains one
-- kernel and launches the next (46 us of 1113 a call at d=2048, M=16384 over nine kernels: docs/journal/2026-12-02.md).
-- pdl = 2: each kernel opens with griddepcontrol.wait and is launched before the one ahead of it has finished; the
-- early trigger (launch_dependents first thing, once pdl = 1) let the next kernel's CTAs wait beside the one ahead's
-- last wave and measured 3-6 % slower on the longest pipelines, slower than 2 everywhere: withdrawn, its value unused.
local PDL = {{name = "pdl", values = {0, 2}, default = 0, added = true,
              doc = "2: each kernel launched before the one ahead of it has finished (programmatic dependent launch,"
                .. " sm_90 and later), once that kernel's CTAs have all exited, and waiting for its completion before"
                .. " touching memory: the launch latency between kernels overlapped"}}
local params = {}
for _, src in ipairs({produce.params, row.params, row.gated_params, dense.params, HOT, rowreg.params, HOT_LOOP, PDL,
                      dense_wgmma.params}) do
  for _, p in ipairs(src) do
    local values, default = keep[p.name] or p.values, p.default
    local ok = false
    for _, v in ipairs(values) do ok = ok or v == default end
    params[#params + 1] = {name = p.name, values = values, default = ok and default or values[1], added = p.added,
                           doc = docs[p.name] or p.doc}
  end
end

local constraints = {}
for _, src in ipairs({produce.constraints, row.constraints, dense.constraints, dense_wgmma.constraints}) do
  for _, k in ipairs(src) do constraints[#constraints + 1] = k end
end
constraints[#constraints + 1] = row.smem_constraint("the consumer's rows fit in shared memory", true,
  function(c) return c.consumer ~= "row" end)
for _, k in ipairs(tile.constraints(row.params, function(c) return c.bn end)) do constraints[#constraints + 1] = k end
for _, k in ipairs(rowreg.constraints(row.params)) do constraints[#constraints + 1] = k end
-- keep's 2 warps and dots 1 and 2 are the register consumer's: the others keep their spaces
constraints[#constraints + 1] = {why = "consumer=row or tile: warps >= 4, dots >= 4",
  check = function(c) return rowreg.is(c) or (c.warps >= 4 and c.dots >= 4) end}

-- The hot slice's width for configuration c on a layer of F neurons: hot/8 of F rounded up to whole
-- tiles (so that the cold tiles stay aligned), at most F. The same expression sizes hot_h below, which
-- beside a sparse part (0 < hot < 8) also holds Ylo (M x D) after the slice's M x H.
local HOT_COLS = "min(F, cdiv(F * hot, 8 * bn) * bn)"
local HOT_WORDS = HOT_COLS .. " + min(min(hot, 8 - hot), 1) * D"
local function hot_cols(c, F)
  return math.min(F, (F * c.hot + 8 * c.bn - 1) // (8 * c.bn) * c.bn)
end
-- The same in C, of the kernel's F (named f): the kernels work it out, so that one source serves any F.
local function hot_cols_c(c, f)
  return string.format("min(%s, (%s * %d + %d) / %d * %d)", f, f, c.hot, 8 * c.bn - 1, 8 * c.bn, c.bn)
end
-- The sparse part's parameters with their defaults (in parameter order), which hot = 8 (no sparse part)
-- leaves as they are.
local SPARSE = {}
do
  local sparse = {}
  for _, src in ipairs({row.params, row.gated_params, dense.params}) do
    for _, p in ipairs(src) do sparse[p.name] = true end
  end
  for _, p in ipairs(params) do
    if sparse[p.name] then SPARSE[#SPARSE + 1] = {p.name, p.default} end
  end
end
constraints[#constraints + 1] = {why = "the hot/cold split runs on the wgmma + TMA kernels with persistent epilogues",
  check = function(c) return c.hot == 0 or c.epi ~= "inline" end}
constraints[#constraints + 1] = {why = "the hot/cold split: rows of F elements a multiple of 16 bytes (F % 8 == 0)",
  check = function(c, gpu, p) return c.hot == 0 or p == nil or p.F % 8 == 0 end}
constraints[#constraints + 1] = {why = "hot=8 (the dense layer): the sparse part's parameters stay at their defaults",
  check = function(c)
    if c.hot ~= 8 then return true end
    for _, s in ipairs(SPARSE) do
      if c[s[1]] ~= s[2] then return false, s[1] end
    end
    return true
  end}

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
              {name = "dense_h", type = "bf16", role = "workspace", shape = {"dense_capacity", "F"},
               doc = "the dense path's gates, then its gated activations"},
              {name = "dense_acc", type = "f32", role = "workspace", shape = {"dense_capacity", "D"},
               doc = "the dense path's output rows in fp32"},
              -- typical: the described heavy tokens with half again as many, 1/64 of the batch besides, and
              -- (route > 0) every token the route can take in a batch of the described mean: at most M nnz / route
              -- tokens reach route active neurons, however uneven the tokens are
              {name = "dense_capacity", type = "i32", role = "scalar", doc = "tokens the dense path may take",
               typical = "min(M, cdiv(M, 64) + 16 + cdiv(M * dense * 3, 200)"
                 .. " + min(1, max(route, 0)) * cdiv(M * nnz, max(route, 1)))", bound = "M"},
              {name = "hot_h", type = "bf16", role = "workspace", shape = {"M", HOT_WORDS},
               doc = "the hot slice's gated activations, then (0 < hot < 8) the cold part's rounding remainder"
                 .. " (empty when hot = 0)"},
              {name = "M", type = "i32", role = "dim"}, {name = "F", type = "i32", role = "dim"},
              {name = "D", type = "i32", role = "dim"}}

constraints[#constraints + 1] = {why = "pdl > 0: griddepcontrol (sm_90 and later)",
  check = function(c, gpu) return c.pdl == 0 or gpu.cc >= 90 end}

-- pdl = 2: every kernel of the pipeline opens with this (inserted after each kernel's opening brace, so that the
-- modules that write the kernels stay as they are). The wait comes before any memory access, the kernel's early
-- returns included: the previous kernel's writes (or the previous call's, for the zero step) are then complete.
local PDL_DEVICE = cuda_file("twell_pdl")
local function pdl_insert(src, kernel_names)
  for _, name in ipairs(kernel_names) do
    local at = src:find(name .. "(", 1, true)
    local brace = at and src:find("{", at, true)
    if not brace then error("pdl: kernel " .. name .. " not found in the source", 2) end
    src = src:sub(1, brace) .. "\n    sp_pdl_enter();" .. src:sub(brace + 1)
  end
  return src
end

-- The cold kernels' argument names for the split: the declared F and weights arrive as F_all, Wg_all,
-- ... and the kernel's prologue (emit) defines F, Wg, Wu and Wd as the cold part's, so that the
-- sparse consumers and the dense path serve it unchanged.
local COLD_ARGS = {}
do
  local rename = {F = "F_all", Wg = "Wg_all", Wu = "Wu_all", Wd = "Wd_all"}
  for i, a in ipairs(ARGS) do
    local b = {}
    for k, v in pairs(a) do b[k] = v end
    b.name = rename[a.name] or a.name
    COLD_ARGS[i] = b
  end
end

-- The pipeline's kernels in launch order: hot = 8 has no sparse part.
local function stages(c)
  local l = {"zero", "produce"}
  if c.hot > 0 then l[#l + 1] = "hot_up" end
  if c.hot < 8 then
    if rowreg.split(c) then l[#l + 1] = "consume_dot" end
    l[#l + 1] = "consume"
    if c.route >= 0 then
      for _, k in ipairs({"dense_g", "dense_h", "dense_y", "finalize"}) do l[#l + 1] = k end
      if dense_wgmma.is(c) then l[#l + 1] = "dense_hw"; l[#l + 1] = "dense_yw" end
    end
  end
  if c.hot > 0 then l[#l + 1] = "hot_y" end
  return l
end

-- The kernels' names, by stage (those of stages(c)).
local function names(c)
  local n = {}
  for _, k in ipairs(stages(c)) do n[k] = text.kernel_name("sp_twell_ffn_" .. k, c, params) end
  return n
end
-- The same in launch order.
local function ordered_names(c)
  local n, l = names(c), {}
  for i, k in ipairs(stages(c)) do l[i] = n[k] end
  return l
end

-- The hot slice's GEMMs' store warps: hot_y's read-modify-write of Y kept two of them busier than its
-- short main loop (K = the hot neurons) kept the warpgroups (docs/journal/2026-12-02.md); with the copy-engine warp
-- they make the producer's 12 warps at wgs = 2, whose registers (168 a thread, hot_up's need) they fit.
local HOT_STORERS = 3

-- The hot slice's GEMMs run the producer's tiles and pipeline, but stage their tiles for the store warps: with
-- the producer's fourth stage (epi = regs) and the staging tile over the shared memory they take fewer stages.
-- Their configuration, or nil where not even 3 stages fit.
-- The ping-pong form (the hot slice's with hotloop = pingpong, and the dense path's with dense = wgmma).
local PINGPONG_STAGES = 4   -- twell-d2t's ping-pong form: 4 stages of 128 x 128 ran faster than 5 (docs/journal/2026-12-02.md)
local function pingpong_config(c, gpu)
  local h = mainloop.with(mainloop.with(mainloop.with(c, "bm", 128), "bn", 128), "stages", PINGPONG_STAGES)
  h = mainloop.with(mainloop.with(h, "wgs", 2), "pingpong", true)
  return mainloop.persistent_smem(h, 0) <= gpu.smem_per_block and h or nil
end
local function hot_config(c, gpu)
  if c.hotloop == "pingpong" then return pingpong_config(c, gpu) end
  for stages = c.stages, 3, -1 do
    local h = mainloop.with(c, "stages", stages)
    if mainloop.persistent_smem(h, epilogue.staging_bytes(h)) <= gpu.smem_per_block then return h end
  end
  return nil
end
constraints[#constraints + 1] = {
  why = "the hot slice's GEMMs: 3 stages or more and their staging tile fit in shared memory",
  check = function(c, gpu) return c.hot == 0 or c.mainloop ~= "wgmma" or hot_config(c, gpu) ~= nil end}
constraints[#constraints + 1] = {why = "dense=wgmma: the ping-pong GEMMs' pipeline fits in shared memory",
  check = function(c, gpu) return not dense_wgmma.is(c) or pingpong_config(c, gpu) ~= nil end}
constraints[#constraints + 1] = {why = "hotloop=pingpong: a hot slice (hot > 0) on the wgmma + TMA kernels",
  check = function(c) return c.hotloop ~= "pingpong" or (c.hot > 0 and c.mainloop == "wgmma" and c.load == "tma") end}
-- The hot slice's two GEMMs (lib/mainloop.lua's persistent kernel with the producer's tiles):
-- hot_up: hot_h = hot_h (.) X Wu[:H]^T (hot_h held relu(gate)); hot_y: Y = hot_h Wd[:H], Wd read MN-major, plus
-- (`add`: beside a sparse part) Y + Ylo, what the cold part wrote: staged, the accumulators start from it (the store
-- warps hold bf16 tiles); with ping-pong warpgroups each adds it in its epilogue while the other multiplies.
local function hot_kernels(c, n, H, add, producer)
  local kparams = args.params(ARGS, wgmma.kernel_params(c))
  local pp = wgmma.pingpong(c)   -- hotloop = pingpong: the combine from the accumulators, no store warps
  local threads = mainloop.persistent_threads(c, pp and 0 or HOT_STORERS)
  -- a GEMM of A (rows x K) against B (N x K, or K x N with b_mn), both read by the copy engine; body: its persistent
  -- kernel (lib/mainloop.lua)
  local function kernel(name, A, B, N, K, body, ylo)
    return mainloop.kernel(threads, name, kparams, text.fill([[
    const sp_bf16 *__restrict__ A = ${A}, *__restrict__ B = ${B};
    const int N = ${N}, K = ${K};
    (void)A; (void)B; /* read through the tensor maps */${ylo}]], {A = A, B = B, N = N, K = K, ylo = ylo or ""})
      .. "\n" .. body)
  end
  local init = add and function(d) return epilogue.add_regs(d, c, "Y", "Ylo", "=") end or nil
  local ylo = add and "\n    const sp_bf16 *__restrict__ Ylo = hot_h + (size_t)M * (" .. H .. ");" or nil
  if pp then
    local function body(b_mn, dst, op, cold)
      return mainloop.persistent(c, {drainers = 0, staging = 0, b_mn = b_mn, stage = function(d)
        return (cold and epilogue.add_regs(d, c, "Y", "Ylo", "+=") .. "\n" or "") .. epilogue.combine_regs(d, c, dst, op)
      end})
    end
    return wgmma.device_more(produce.loop_config(producer), c) .. wgmma.device_mn(c)
      .. kernel(n.hot_up, "X", "Wu", H, "D", body(false, "hot_h", "mul"))
      .. kernel(n.hot_y, "hot_h", "Wd", "D", H, body(true, "Y", "store", add), ylo)
  end
  local STORERS = HOT_STORERS   -- the drains' row step, the kernel's warps and the launch agree on it
  return wgmma.device_mn(c)
    .. kernel(n.hot_up, "X", "Wu", H, "D",
              mainloop.store_body(c, epilogue.combine_rows(c, "pw", STORERS, "hot_h", "mul"), false, STORERS))
    .. kernel(n.hot_y, "hot_h", "Wd", "D", H,
              mainloop.store_body(c, "        sp_bf16 *const C = Y;\n" .. epilogue.store_rows(c, "pw", STORERS), true,
                                  STORERS, init), ylo)
end

return {
  name = "twell-ffn",
  family = "twell",
  description = "TwELL gated FFN layer: packed gate from the gate GEMM's epilogue, then up and down for active"
    .. " neurons only",
  args = ARGS,
  -- nnz and the rest: the data the op is measured on; order: 1 when the application gives the neurons
  -- most frequent first (sptune_twell_hot_order: what the hot/cold split needs), 0 as they come
  dims = dist.with({"M", "D", "F"}, {{"order", 0}, dist.made[1], dist.made[2]}),
  ranges = dist.ranges({order = {0, 1, int = true}, gen = dist.made_ranges.gen, spread = dist.made_ranges.spread}),
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = constraints,
  -- on Hopper the producer's wgmma + TMA loop with overlapped packing and the row consumer that measured
  -- fastest on realistic activations (docs/journal), the dense path on wgmma where many tokens reach it
  defaults = function(gpu)
    return produce.hopper_default(gpu, "warps=16,split=1,unroll=4,dots=8,dunroll=2,route=512,dense=wgmma")
  end,

  kernel = function(c, gpu) return ordered_names(c) end,

  launch = function(c, p, gpu)
    local at = {zero = dense.zero_launch(gpu),
                produce = produce.launch{c = c, rows = p.M, F = p.F, D = p.D, a = "X", b = "Wg", gpu = gpu}}
    if c.hot > 0 then
      local H, hc = hot_cols(c, p.F), hot_config(c, gpu)
      local persistent = wgmma.pingpong(hc) and {drainers = 0, staging = 0}
                         or mainloop.store_persistent(hc, HOT_STORERS)
      at.hot_up = mainloop.launch{c = hc, M = p.M, N = H, K = p.D, a = "X", b = "Wu", gpu = gpu, persistent = persistent}
      at.hot_y = mainloop.launch{c = hc, M = p.M, N = p.D, K = H, a = "hot_h", b = "Wd", b_mn = true, gpu = gpu,
                                 persistent = persistent}
    end
    if rowreg.is(c) then at.consume, at.consume_dot = rowreg.launch(c, p)
    else at.consume = c.consumer == "tile" and tile.launch(p, c.bn) or row.launch(c, p, true) end
    for k, v in pairs(dense.launches(gpu)) do at[k] = v end
    if dense_wgmma.is(c) then   -- its constraint holds route >= 0
      for k, v in pairs(dense_wgmma.launches(pingpong_config(c, gpu), p, gpu, hot_cols(c, p.F))) do at[k] = v end
    end
    local l = {}
    for i, k in ipairs(stages(c)) do
      l[i] = at[k]
      if c.pdl > 0 then l[i].pdl = true end
    end
    return l
  end,

  emit = function(c, p, gpu)
    local n = names(c)
    local has = {}
    for _, k in ipairs(stages(c)) do has[k] = true end
    local consts = {T = c.bn, S = c.slots}
    local kargs = ARGS
    if c.hot > 0 then
      kargs = COLD_ARGS
      consts.prologue = text.fill([[

    /* the hot/cold split: this kernel serves the cold neurons H .. F - 1 (the first H run dense) */
    const int H = ${H}, F = F_all - H;
    const sp_bf16 *__restrict__ Wg = Wg_all + (size_t)H * D, *__restrict__ Wu = Wu_all + (size_t)H * D;
    const sp_bf16 *__restrict__ Wd = Wd_all + (size_t)H * D;
    (void)F; (void)Wg; (void)Wu; (void)Wd;${ylo}]], {H = hot_cols_c(c, "F_all"), ylo = c.hot < 8 and
        "\n    sp_bf16 *__restrict__ Ylo = hot_h + (size_t)M * H;   /* the cold part's rounding remainder */\n    (void)Ylo;"
        or ""})
      if c.hot < 8 then consts.ylo = "Ylo" end
    end
    local function sig(name, extra) return row.signature(name, kargs, consts, false, extra) end
    local wide = has.dense_hw
    local pp = wide and pingpong_config(c, gpu)
    local sparse = ""
    if has.consume then
      local consume
      if c.consumer == "tile" then consume = tile.kernel(n.consume, kargs, consts, true)
      elseif rowreg.is(c) then consume = rowreg.device(c, p, consts.ylo) .. rowreg.kernel(n.consume, c, p, kargs, consts, n.consume_dot)
      else consume = row.kernel(n.consume, c, true, kargs, consts, true) end
      sparse = text.lines({row.device(c) .. (consts.ylo and row.ylo_device or "")
                             .. ((c.consumer == "tile" or has.dense_h) and tile.device() or ""), consume})
    end
    local src = text.fill([[
${prelude}${pdl}
${route}
${pdevice}
${producer}${sparse}
${dense}
${hot}${wide}]], {prelude = cuda.prelude, pdl = c.pdl > 0 and PDL_DEVICE or "",
     route = c.route >= 0 and epilogue.twell_route_device or "",
     pdevice = produce.device(c), sparse = sparse,
     producer = produce.kernel(c, n.produce, ARGS, c.hot > 0 and {cols = hot_cols_c(c, "F")} or nil),
     dense = dense.zero_kernel(n, sig, wide) .. (wide and dense_wgmma.device() or "")
       .. (has.dense_h and dense.kernels(gpu, n, sig, consts.ylo, wide) or ""),
     -- after the hot slice's GEMMs, whose ping-pong device code they share (without a slice: their own)
     wide = wide and ((c.hot > 0 and "" or wgmma.device_more(produce.loop_config(c), pp) .. wgmma.device_mn(pp))
                      .. dense_wgmma.kernels(pp, n, sig, c.hot > 0, consts.ylo)) or "",
     -- the hot slice adds to what the sparse part wrote, or (no sparse part) stores Y
     hot = has.hot_up and hot_kernels(hot_config(c, gpu), n, hot_cols_c(c, "F"), has.consume, c) or ""})
    return c.pdl == 0 and src or pdl_insert(src, ordered_names(c))
  end,
}
