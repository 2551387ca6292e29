-- The TwELL producer, shared by twell-d2t (alone) and twell-ffn (first kernel of the pipeline):
-- relu(A B^T) on a tensor-core main loop (lib/mainloop.lua, gemm's), packed to TwELL straight from
-- the epilogue (lib/epilogue.lua), so the dense activations never reach device memory. The CTA's
-- bn is the TwELL tile width T.
local text = require("lib.text")
local args = require("lib.args")
local mainloop = require("lib.mainloop")
local epilogue = require("lib.epilogue")

local M = {}

M.params = {}
for _, p in ipairs(mainloop.params) do M.params[#M.params + 1] = p end
M.params[#M.params + 1] = {name = "epi", values = {"inline", "overlap", "regs", "regs2", "pingpong", "pingpong2"},
  default = "inline",
  doc = "packing: by the whole CTA after its main loop, or (wgmma + tma) by packer warps of a persistent CTA"
    .. " while the next tile's main loop runs, or (wgmma + tma) by the warpgroups of a persistent CTA straight"
    .. " from their accumulators (no staging tile: room for a fourth stage); regs2: the same in clusters of two"
    .. " CTAs on tiles of the same Wg rows, each multicasting half of every Wg stage to both; pingpong: from the"
    .. " accumulators, the two warpgroups on whole tiles in turn (one packs while the other multiplies: bm x bn"
    .. " <= 16384); pingpong2: the same in clusters of two as regs2"}
M.params[#M.params + 1] = {name = "group_m", values = {1, 8}, default = 8,
                           doc = "CTA rows walked together along M before moving along N (L2 reuse)"}
M.params[#M.params + 1] = {name = "slots", values = {7, 15, 31, 63}, default = 31,
                           doc = "TwELL slots per (row, tile): more slots, fewer overflows, more bytes"}

-- Packer warps of the persistent kernel (epi = overlap), and its drain part (lib/mainloop.lua).
local PACKERS = 3
-- epi = regs, regs2, pingpong and pingpong2 pack from the accumulators: no packer warps, no staging tile.
local FROM_REGISTERS = {regs = true, regs2 = true, pingpong = true, pingpong2 = true}
local function from_registers(c) return FROM_REGISTERS[c.epi] == true end
local function pack_persistent(c)
  if from_registers(c) then return {drainers = 0, staging = 0} end
  return {drainers = PACKERS, staging = epilogue.twell_pack_smem(c)}
end

function M.overlap_smem(c) return mainloop.persistent_smem(c, pack_persistent(c).staging) end

M.constraints = mainloop.constraints(function(p) return p.D end)
M.constraints[#M.constraints + 1] = {why = "persistent packing (overlap, regs) needs the wgmma main loop with tma",
  check = function(c) return c.epi == "inline" or (c.mainloop == "wgmma" and c.load == "tma") end}
M.constraints[#M.constraints + 1] = {why = "persistent packing: pipeline and staging tile fit in shared memory",
  check = function(c, gpu)
    if c.epi == "inline" then return true end
    local need = M.overlap_smem(c)
    if need > gpu.smem_per_block then return false, string.format("%d bytes > %d", need, gpu.smem_per_block) end
    return true
  end}
M.constraints[#M.constraints + 1] = {why = "slots fit in a tile", check = function(c) return c.slots < c.bn end}
local CLUSTERED, PINGPONG = {regs2 = true, pingpong2 = true}, {pingpong = true, pingpong2 = true}
M.constraints[#M.constraints + 1] = {
  why = "epi=regs2, pingpong2: clusters, each CTA of the pair loading half of the tile's Wg rows (bn >= 128)",
  check = function(c, gpu) return not CLUSTERED[c.epi] or (c.bn >= 128 and gpu.cluster) end}
M.constraints[#M.constraints + 1] = {
  why = "epi=pingpong, pingpong2: two warpgroups, each holding a whole tile's accumulators (bm x bn <= 16384)",
  check = function(c)
    return not PINGPONG[c.epi] or (c.wgs == 2 and c.bm * c.bn <= 16384)
  end}
M.constraints[#M.constraints + 1] = {why = "packing stage fits in shared memory",
  check = function(c, gpu) return epilogue.twell_pack_smem(c) <= gpu.smem_per_block end}

-- The configuration the main loop sees (lib/mainloop.lua, lib/wgmma.lua): epi = regs2 and pingpong2 run it in
-- clusters of 2, pingpong and pingpong2 with ping-pong warpgroups.
function M.loop_config(c)
  local l = CLUSTERED[c.epi] and mainloop.with(c, "cluster", 2) or c
  return PINGPONG[c.epi] and mainloop.with(l, "pingpong", true) or l
end
local loop_config = M.loop_config

-- The producer's best measured form on Hopper (docs/journal): wgmma + TMA, packing from the
-- registers with four stages, 128 x 256 tiles (T = 256), 15 slots; for a template's defaults(gpu). `extra` appended.
function M.hopper_default(gpu, extra)
  return mainloop.hopper_default(gpu, "bm=128,bn=256,stages=4,epi=regs,slots=15" .. (extra and ("," .. extra) or ""))
end

M.name_keys = {}
for _, p in ipairs(M.params) do M.name_keys[#M.name_keys + 1] = p.name end

-- The persistent kernel with overlapped packing (lib/mainloop.lua): the packer warps pack each
-- staged tile while the main loop runs on (the dense tensor-core work never waits for the packing,
-- only for the staging tile to be free). With hot = {cols = H} (twell-ffn's hot/cold split; H a C
-- expression of the kernel's dimensions) the
-- tiles of the first H neurons are not packed: their relu(gate) goes to hot_h (M x H, bf16) for the
-- dense hot slice, and the packed gate holds the cold tiles only.
function M.overlap_body(c, hot)
  if from_registers(c) then
    local x, r = pack_persistent(c), epilogue.twell_pack_regs(mainloop.derive(loop_config(c)), c, hot)
    x.stage = function() return r.stage end
    x.pre, x.post = r.pre, r.post
    return mainloop.persistent(loop_config(c), x)
  end
  local drain = epilogue.twell_pack_rows(c, "pw", PACKERS)
  if hot then
    drain = text.fill([[
            const int hot_n = ${H}, hot_tiles = (hot_n + ${bn} - 1) / ${bn};
            if (pid_n < hot_tiles) {   /* a hot tile: relu(gate) to hot_h */
                const int n0 = pid_n * ${bn}, N = hot_n;
                sp_bf16 *const C = hot_h;
${store}
            } else {
                const int cold_tile = pid_n - hot_tiles;
${pack}
            }]], {bn = c.bn, H = hot.cols, store = epilogue.store_rows(c, "pw", PACKERS),
                  pack = epilogue.twell_pack_rows(c, "pw", PACKERS, {
                    cols = "N - hot_n", tile = "cold_tile"})})
  end
  local x = pack_persistent(c)
  x.stage = function(d) return epilogue.twell_stage(d, c) end
  x.drain = drain
  return mainloop.persistent(c, x)
end

-- The producer's launch, from named fields: c (the configuration), rows (M) of the argument named
-- a against F rows of the argument named b, each D long (a and b: for the copy engine's tensor
-- maps), gpu.
function M.launch(x)
  local c = x.c
  return mainloop.launch{c = loop_config(c), M = x.rows, N = x.F, K = x.D, a = x.a, b = x.b, gpu = x.gpu,
                         smem = epilogue.twell_pack_smem(c),
                         persistent = c.epi ~= "inline" and pack_persistent(c) or nil}
end

M.kernel_params = mainloop.kernel_params
function M.device(c)
  return mainloop.device(loop_config(c)) .. (from_registers(c) and epilogue.popc_below_device or "")
end

-- The kernel body. Expects in scope: A (rows x K), B (N x K), packed, pool, pool_counter,
-- pool_capacity, M, N, K (M.aliases names them after the TwELL arguments); hot: M.overlap_body's.
function M.body(c, hot)
  if c.epi ~= "inline" then return M.overlap_body(c, hot) end
  if hot then error("twell producer: the hot/cold split needs the persistent kernel (epi=overlap or regs)", 2) end
  local l = mainloop.loop(c)
  return text.lines({l.cta_prologue(c), l.mainloop(c), epilogue.twell_pack(l.derive(c), c)})
end

-- The main loops' names for the TwELL arguments: A = X, B = Wg, N = F, K = D.
M.aliases = [[
    const sp_bf16 *__restrict__ A = X, *__restrict__ B = Wg;
    const int N = F, K = D;
    (void)A; (void)B; /* the copy engine's loaders read them through the tensor maps */]]

-- The producer's arguments (twell-d2t's whole list; twell-ffn's adds the up and down weights and Y).
M.args = {
  X = {name = "X", type = "bf16", role = "input", shape = {"M", "D"}},
  Wg = {name = "Wg", type = "bf16", role = "input", shape = {"F", "D"}, doc = "row j: neuron j's gate weights"},
  packed = {name = "packed", type = "u32", role = "workspace", shape = {"M", "cdiv(F, bn)", "slots + 1"},
            doc = "the packed gate (runtime/sp_twell.h)"},
  pool = {name = "pool", type = "u32", role = "workspace", shape = {"pool_capacity"}, doc = "overflow pool"},
  pool_counter = {name = "pool_counter", type = "u64", role = "workspace", shape = {1},
                  doc = "zeroed before each call; ends holding the pool words needed"},
  pool_capacity = {name = "pool_capacity", type = "u64", role = "scalar", doc = "pool words",
                   -- typical, from the described data: the tiles of ~1.5 % of the tokens overflowing whole, a
                   -- sixteenth of all entries (uneven tokens crowding their tiles), and the heavy tokens' entries with
                   -- half again as many, plus slack; and never less than a batch of the described mean can take
                   -- however uneven (an overflowing tile takes its count + 1 words, its count above slots);
                   -- bound: every nonzero in the pool (at most the 2^30 words the format addresses)
                   typical = "max(cdiv(M, 64) * (F + cdiv(F, bn)) + cdiv(M * nnz, 16)"
                             .. " + cdiv(M * dense * (min(dense_nnz, F) + cdiv(F, bn)) * 3, 200),"
                             .. " cdiv(M * nnz * (slots + 2), slots + 1)) + 4096",
                   bound = "min(M * (F + cdiv(F, bn)), 1073741823)"},
}

function M.threads(c)
  return c.epi ~= "inline" and mainloop.persistent_threads(c, pack_persistent(c).drainers) or mainloop.derive(c).threads
end

-- The producer kernel named name over the argument list arglist (lib/args.lua); hot: M.body's.
function M.kernel(c, name, arglist, hot)
  return mainloop.kernel(M.threads(c), name, args.params(arglist, M.kernel_params(c)),
                         M.aliases .. "\n" .. M.body(c, hot))
end

return M
