-- The TwELL producer, shared by twell-d2t (alone) and twell-ffn (first kernel of the pipeline):
-- relu(A B^T) on a tensor-core main loop, packed to TwELL straight from the epilogue
-- (lib/epilogue.lua), so the dense activations never reach device memory. The CTA's bn is the
-- TwELL tile width T. Two main loops: `mma` (lib/mma_sync.lua: sm_80, sm_90a, sm_120) and
-- `wgmma` (lib/wgmma.lua: sm_90a only); each ignores the other's parameters, which then stay at
-- their defaults so that the space holds each kernel once.
local text = require("lib.text")
local mma = require("lib.mma_sync")
local wgmma = require("lib.wgmma")
local epilogue = require("lib.epilogue")

local M = {}

M.params = {{name = "mainloop", values = {"mma", "wgmma"}, default = "mma",
             doc = "tensor-core main loop: mma.sync + ldmatrix (portable), or wgmma from shared memory (sm_90a)"}}
for _, p in ipairs(mma.params) do M.params[#M.params + 1] = p end
for _, p in ipairs(wgmma.params) do M.params[#M.params + 1] = p end
M.params[#M.params + 1] = {name = "epi", values = {"inline", "overlap"}, default = "inline",
  doc = "packing: by the whole CTA after its main loop, or (wgmma + tma) by packer warps of a persistent CTA"
    .. " while the next tile's main loop runs"}
M.params[#M.params + 1] = {name = "group_m", values = {1, 8}, default = 8,
                           doc = "CTA rows walked together along M before moving along N (L2 reuse)"}
M.params[#M.params + 1] = {name = "slots", values = {7, 15, 31, 63}, default = 31,
                           doc = "TwELL slots per (row, tile): more slots, fewer overflows, more bytes"}

-- Parameters only one main loop reads.
local only = {wm = "mma", wn = "mma", swizzle = "mma", prefetch = "mma", wgs = "wgmma", load = "wgmma"}
local defaults = {}
for _, p in ipairs(M.params) do defaults[p.name] = p.default end

M.constraints = {
  {why = "parameters the main loop does not use stay at their defaults",
   check = function(c)
     for name, loop in pairs(only) do
       if c.mainloop ~= loop and c[name] ~= defaults[name] then return false, name end
     end
     return true
   end},
}
local function add(list, loop)
  for _, k in ipairs(list) do
    M.constraints[#M.constraints + 1] = {why = k.why, check = function(c, gpu, p)
      if c.mainloop ~= loop then return true end
      return k.check(c, gpu, p)
    end}
  end
end
add(mma.constraints, "mma")
add(wgmma.constraints, "wgmma")
M.constraints[#M.constraints + 1] = {why = "the copy engine needs rows of a multiple of 16 bytes (D % 8 == 0)",
  check = function(c, gpu, p) return p == nil or c.mainloop ~= "wgmma" or c.load ~= "tma" or p.D % 8 == 0 end}
M.constraints[#M.constraints + 1] = {why = "overlapped packing needs the wgmma main loop with tma",
  check = function(c) return c.epi == "inline" or (c.mainloop == "wgmma" and c.load == "tma") end}
M.constraints[#M.constraints + 1] = {why = "overlapped packing: pipeline and staging tile fit in shared memory",
  check = function(c, gpu)
    if c.epi ~= "overlap" then return true end
    local need = M.overlap_smem(c)
    if need > gpu.smem_per_block then return false, string.format("%d bytes > %d", need, gpu.smem_per_block) end
    return true
  end}
M.constraints[#M.constraints + 1] = {why = "slots fit in a tile", check = function(c) return c.slots < c.bn end}
M.constraints[#M.constraints + 1] = {why = "packing stage fits in shared memory",
  check = function(c, gpu) return epilogue.twell_pack_smem(c) <= gpu.smem_per_block end}

M.name_keys = {}
for _, p in ipairs(M.params) do M.name_keys[#M.name_keys + 1] = p.name end

local function loop(c) return c.mainloop == "wgmma" and wgmma or mma end

-- The persistent kernel with overlapped packing: warps 0 .. 4*wgs-1 run the wgmma main loop
-- tile after tile and stage each finished tile in shared memory; the next warpgroup holds the
-- copy engine's warp and PACKERS packer warps, which pack the staged tile while the main loop
-- runs on (the dense tensor-core work never waits for the packing, only for the staging tile
-- to be free).
local PACKERS = 3

local function overlap_layout(c)
  local d = wgmma.derive(c)
  local l = {pipe = c.stages * (d.a_stage + d.b_stage) * 2, staging = epilogue.twell_pack_smem(c)}
  l.staging = (l.staging + 15) // 16 * 16
  l.bars = l.pipe + l.staging
  l.total = 1024 + l.bars + (2 * c.stages + 2) * 8
  return l
end

function M.overlap_smem(c) return overlap_layout(c).total end

local function overlap_threads(c) return 32 * (4 * c.wgs + 1 + PACKERS) end

function M.overlap_body(c)
  local d = wgmma.derive(c)
  local l = overlap_layout(c)
  return text.fill([[
    extern __shared__ __align__(1024) unsigned char sp_smem[];
    const int tiles_m = (M + ${bm} - 1) / ${bm}, tiles_n = (N + ${bn} - 1) / ${bn}, ntiles = tiles_m * tiles_n;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const sp_u32 base = (sp_smem_u32(sp_smem) + 1023u) & ~1023u;
    const sp_u32 sA = base, sB = sA + ${stages} * ${a_stage} * 2;
    sp_bf16 *sC = (sp_bf16 *)(sp_smem + (base - sp_smem_u32(sp_smem)) + ${pipe});
    const sp_u32 full = base + ${bars}, empty = full + ${stages} * 8;
    const sp_u32 staged = empty + ${stages} * 8, packed_bar = staged + 8;
    const int KT = (K + ${bk} - 1) / ${bk};
    if (tid == 0) {
        for (int s = 0; s < ${stages}; ++s) {
            sp_mbar_init(full + s * 8, 1);
            sp_mbar_init(empty + s * 8, ${mma_warps});
        }
        sp_mbar_init(staged, ${mma_threads});
        sp_mbar_init(packed_bar, ${pack_threads});
        sp_fence_mbar_init();
    }
    __syncthreads();
    /* tile t of this CTA's sequence: group_m CTA rows walked together along M (L2 reuse) */
#define SP_GROUP_ROWS(t) min(tiles_m - ((t) / (${group_m} * tiles_n)) * ${group_m}, ${group_m})
#define SP_PID_M(t) (((t) / (${group_m} * tiles_n)) * ${group_m} + ((t) % (${group_m} * tiles_n)) % SP_GROUP_ROWS(t))
#define SP_PID_N(t) (((t) % (${group_m} * tiles_n)) / SP_GROUP_ROWS(t))
    if (warp < ${mma_warps}) {
        const int wg = warp >> 2;
        int it = 0, n = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x, ++n) {
            const int n0 = SP_PID_N(t) * ${bn};
${acc}
${consume}
            /* the packers are done with the previous tile's staging */
            if (n > 0) sp_mbar_wait(packed_bar, (n - 1) & 1);
${stage}
            sp_mbar_arrive(staged);
        }
    } else if (warp == ${mma_warps}) {
        if (lane == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
                const int pid_m = SP_PID_M(t), pid_n = SP_PID_N(t);
                for (int kt = 0; kt < KT; ++kt, ++it) {
${issue}
                }
            }
        }
        __syncwarp();
    } else {
        const int pw = warp - ${mma_warps} - 1;
        int n = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x, ++n) {
            const int pid_n = SP_PID_N(t), m0 = SP_PID_M(t) * ${bm};
            sp_mbar_wait(staged, n & 1);
            {
${rows}
            }
            sp_mbar_arrive(packed_bar);
        }
    }
#undef SP_PID_N
#undef SP_PID_M
#undef SP_GROUP_ROWS
]], {bm = c.bm, bn = c.bn, bk = wgmma.BK, stages = c.stages, a_stage = d.a_stage, b_stage = d.b_stage,
     pipe = l.pipe, bars = l.bars, mma_warps = d.mma_warps, mma_threads = 32 * d.mma_warps,
     pack_threads = 32 * PACKERS, group_m = c.group_m,
     issue = wgmma.tma_issue(c, d, "it", "kt", "pid_m * " .. c.bm, "pid_n * " .. c.bn),
     acc = wgmma.acc_decl(d), consume = wgmma.consume(c, d, "it", ", ++it", "it - 1"),
     stage = epilogue.twell_stage(d, c),
     rows = epilogue.twell_pack_rows(c, "pw", PACKERS)})
end

-- The producer's launch, from named fields: c (the configuration), rows (M) of the argument named
-- a against F rows of the argument named b, each D long (a and b: for the copy engine's tensor
-- maps), gpu.
function M.launch(x)
  local c, rows, F, D, gpu = x.c, x.rows, x.F, x.D, x.gpu
  local d = loop(c).derive(c)
  local tiles = ((rows + c.bm - 1) // c.bm) * ((F + c.bn - 1) // c.bn)
  local tmaps = c.mainloop == "wgmma" and wgmma.tmaps(c, x.a, rows, x.b, F, D) or nil
  if c.epi == "overlap" then   -- persistent: one CTA per SM at most
    return {grid = {math.min(tiles, gpu.sm_count), 1, 1}, block = {overlap_threads(c), 1, 1},
            smem = M.overlap_smem(c), tmaps = tmaps}
  end
  return {grid = {tiles, 1, 1}, block = {d.threads, 1, 1}, smem = math.max(d.smem, epilogue.twell_pack_smem(c)),
          tmaps = tmaps}
end

-- Kernel parameters after the ordinary ones (the tensor maps, when the main loop takes them).
function M.kernel_params(c)
  return c.mainloop == "wgmma" and wgmma.kernel_params(c) or ""
end

-- Device functions the body needs (before the kernel).
function M.device(c)
  return c.mainloop == "wgmma" and wgmma.device(c) or ""
end

-- The kernel body. Expects in scope: A (rows x K), B (N x K), packed, pool, pool_counter,
-- pool_capacity, M, N, K (M.aliases names them after the TwELL arguments).
function M.body(c)
  if c.epi == "overlap" then return M.overlap_body(c) end
  local l = loop(c)
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
                   -- typical: the tiles of ~1.5 % of the tokens overflowing whole, plus slack; bound: every
                   -- nonzero in the pool (at most the 2^30 words the format addresses)
                   typical = "cdiv(M, 64) * (F + cdiv(F, bn)) + 4096",
                   bound = "min(M * (F + cdiv(F, bn)), 1073741823)"},
}

function M.threads(c) return c.epi == "overlap" and overlap_threads(c) or loop(c).derive(c).threads end

return M
