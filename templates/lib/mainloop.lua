-- The tensor-core main loop a GEMM-shaped kernel runs, and the CTA around it, shared by gemm and the
-- TwELL producer (which differ only in their epilogue): `mma` (lib/mma_sync.lua: sm_80, sm_90a,
-- sm_120) or `wgmma` (lib/wgmma.lua: sm_90a only); each ignores the other's parameters, which then
-- stay at their defaults so that a space holds each kernel once. With wgmma + tma a kernel may also
-- be persistent with its epilogue overlapped (persistent below): the accumulator warpgroups stage a
-- finished tile in shared memory and go on with the next tile while drain warps write the staged one.
local text = require("lib.text")
local mma = require("lib.mma_sync")
local wgmma = require("lib.wgmma")
local epilogue = require("lib.epilogue")
local M = {}

M.params = {{name = "mainloop", values = {"mma", "wgmma"}, default = "mma",
             doc = "tensor-core main loop: mma.sync + ldmatrix (portable), or wgmma from shared memory (sm_90a)"}}
for _, p in ipairs(mma.params) do M.params[#M.params + 1] = p end
for _, p in ipairs(wgmma.params) do M.params[#M.params + 1] = p end

-- Parameters only one main loop reads.
local only = {wm = "mma", wn = "mma", swizzle = "mma", prefetch = "mma", wgs = "wgmma", load = "wgmma"}

-- The constraints of the main loops, each applying to its own; K(p): the reduction length of problem
-- p (the copy engine needs rows of a multiple of 16 bytes).
function M.constraints(K)
  local defaults = {}
  for _, p in ipairs(M.params) do defaults[p.name] = p.default end
  local list = {
    {why = "parameters the main loop does not use stay at their defaults",
     check = function(c)
       for name, loop in pairs(only) do
         if c.mainloop ~= loop and c[name] ~= defaults[name] then return false, name end
       end
       return true
     end}}
  for _, pair in ipairs({{mma.constraints, "mma"}, {wgmma.constraints, "wgmma"}}) do
    for _, k in ipairs(pair[1]) do
      list[#list + 1] = {why = k.why, check = function(c, gpu, p)
        if c.mainloop ~= pair[2] then return true end
        return k.check(c, gpu, p)
      end}
    end
  end
  list[#list + 1] = {why = "the copy engine needs rows of a multiple of 16 bytes (K % 8 == 0)",
    check = function(c, gpu, p) return p == nil or c.mainloop ~= "wgmma" or c.load ~= "tma" or K(p) % 8 == 0 end}
  return list
end

-- The Hopper main loop, for a template's defaults(gpu) on GPUs with wgmma: `extra` appended.
function M.hopper_default(gpu, extra)
  if not gpu.wgmma then return nil end
  return "mainloop=wgmma,bk=64,wgs=2,load=tma" .. (extra and ("," .. extra) or "")
end

function M.loop(c) return c.mainloop == "wgmma" and wgmma or mma end

-- A copy of configuration c with field set to value (a form derived from it: another pipeline depth, a cluster).
function M.with(c, field, value)
  local d = {}
  for k, v in pairs(c) do d[k] = v end
  d[field] = value
  return d
end
function M.derive(c) return M.loop(c).derive(c) end

-- Kernel parameters after the ordinary ones (the tensor maps, when the main loop takes them).
function M.kernel_params(c) return c.mainloop == "wgmma" and wgmma.kernel_params(c) or "" end
-- Device functions the body needs (before the kernel).
function M.device(c) return c.mainloop == "wgmma" and wgmma.device(c) or "" end

-- The launch of an M x N output tile by tile over K: the argument named a (M x K) against the
-- argument named b (N x K, or K x N with b_mn) (for the copy engine's tensor maps); smem: at least
-- what the epilogue needs. Persistent (one CTA per SM at most, M.persistent's kernel) with
-- `persistent = {drainers = ..., staging = ...}` (its drain warps and staging bytes).
function M.launch(x)
  local c = x.c
  local tiles = ((x.M + c.bm - 1) // c.bm) * ((x.N + c.bn - 1) // c.bn)
  local tmaps = c.mainloop == "wgmma" and wgmma.tmaps(c, x.a, x.M, x.b, x.N, x.K, x.b_mn) or nil
  if x.persistent then
    local l = {grid = {math.min(tiles, x.gpu.sm_count), 1, 1},
               block = {M.persistent_threads(c, x.persistent.drainers), 1, 1},
               smem = M.persistent_smem(c, x.persistent.staging), tmaps = tmaps}
    if wgmma.cluster(c) == 2 then   -- pairs of tile rows, one cluster of 2 CTAs each, at most one CTA an SM
      local pairs = ((x.M + 2 * c.bm - 1) // (2 * c.bm)) * ((x.N + c.bn - 1) // c.bn)
      l.grid[1], l.cluster = 2 * math.min(pairs, x.gpu.sm_count // 2), {2, 1, 1}
    end
    return l
  end
  local d = M.derive(c)
  return {grid = {tiles, 1, 1}, block = {d.threads, 1, 1}, smem = math.max(d.smem, x.smem or 0), tmaps = tmaps}
end

-- A kernel of `threads` threads whose registers are budgeted for one CTA an SM (the main loops'
-- occupancy: __launch_bounds__(threads, 1)), its signature from name and params (the argument list),
-- then body.
function M.kernel(threads, name, params, body)
  return text.fill([[
extern "C" __global__ void __launch_bounds__(${threads}, 1)
${name}(${params})
{
${body}
}
]], {threads = threads, name = name, params = params, body = body})
end

-- ---- the persistent kernel with an overlapped epilogue (wgmma + tma) ----

-- Shared memory: the pipeline, the staging tile (staging bytes), the mbarriers.
local function layout(c, staging)
  local d = wgmma.derive(c)
  local l = {pipe = c.stages * (d.a_stage + d.b_stage) * 2, staging = (staging + 15) // 16 * 16}
  l.bars = l.pipe + l.staging
  l.total = 1024 + l.bars + (2 * c.stages + 2) * 8
  return l
end

function M.persistent_smem(c, staging) return layout(c, staging).total end
function M.persistent_threads(c, drainers) return 32 * (4 * c.wgs + 1 + drainers) end

-- The body: warps 0 .. 4*wgs-1 run the wgmma main loop tile after tile and run x.stage (accumulators
-- to sC, in scope: acc, n0, lane, wg) for each finished tile; the next warp drives the copy engine;
-- x.drainers warps ("packers" in the code: TwELL packs, gemm stores) then run x.drain on the staged
-- tile (in scope: sC, m0, pid_n, lane, pw = the drain warp's index) while the main loop goes on, then x.drain_post
-- (optional) after the last.
-- x.staging: bytes of the staging tile; x.b_mn: B is MN-major (K x N, lib/wgmma.lua); x.b_off (optional): B's first
-- row in its map (lib/wgmma.lua's tma_issue); x.pre and x.post (optional):
-- what the warpgroups run before their first tile and after their last; x.init(d) (optional): what sets a tile's
-- accumulators before its main loop (else zeros; in scope: acc, t, n0, lane, warp). With ping-pong warpgroups (wgmma.pingpong(c),
-- no drain warps) each warpgroup takes every other tile of the CTA's sequence whole, x.stage then being its epilogue.
function M.persistent(c, x)
  local d = wgmma.derive(c)
  local l = layout(c, x.staging)
  local cl = wgmma.cluster(c)
  -- the tile row of tile t (with clusters of 2: of pair t, whose CTAs take rows 2 * it + rank)
  local pid_m = string.format("(((t) / (%d * tiles_n)) * %d + ((t) %% (%d * tiles_n)) %% SP_GROUP_ROWS(t))",
                              c.group_m, c.group_m, c.group_m)
  -- the drain warps below walk the tiles one CTA at a time
  if cl == 2 and x.drainers > 0 then error("mainloop.persistent: clusters of 2 need drainers = 0", 2) end
  -- ping-pong warpgroups (lib/wgmma.lua) take the CTA's tiles in turn: each skips the other's k-tiles in the ring
  local pp = wgmma.pingpong(c)
  if pp and (x.drainers > 0 or c.wgs ~= 2) then
    error("mainloop.persistent: ping-pong needs 2 warpgroups, no drain warps", 2)
  end
  local t0, tn = cl == 2 and "(int)(blockIdx.x >> 1)" or "blockIdx.x", cl == 2 and "npairs" or "ntiles"
  local tstep = cl == 2 and "(int)(gridDim.x >> 1)" or "gridDim.x"
  -- drainers = 0: the warpgroups run x.stage as the whole epilogue (from their registers), no handover
  local stage, drain, handover = x.stage(d), "", ""
  if x.drainers > 0 then
    handover = string.format("\n        sp_mbar_init(staged, %d);\n        sp_mbar_init(packed_bar, %d);",
                             32 * d.mma_warps, 32 * x.drainers)
    stage = text.fill([[
            /* the packers are done with the previous tile's staging */
            if (n > 0) sp_mbar_wait(packed_bar, (n - 1) & 1);
${stage}
            sp_mbar_arrive(staged);]], {stage = stage})
    drain = text.fill([[ else {
        const int pw = warp - ${mma_warps} - 1;
        int n = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x, ++n) {
            const int pid_n = SP_PID_N(t), m0 = SP_PID_M(t) * ${bm};
            sp_mbar_wait(staged, n & 1);
            {
${rows}
            }
            sp_mbar_arrive(packed_bar);
        }${drain_post}
    }]], {mma_warps = d.mma_warps, bm = c.bm, rows = x.drain,
          drain_post = x.drain_post and ("\n" .. x.drain_post) or ""})
  end
  return text.fill([[
    extern __shared__ __align__(1024) unsigned char sp_smem[];
    const int tiles_m = (M + ${bm} - 1) / ${bm}, tiles_n = (N + ${bn} - 1) / ${bn}, ntiles = tiles_m * tiles_n;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const sp_u32 base = (sp_smem_u32(sp_smem) + 1023u) & ~1023u;
    const sp_u32 sA = base, sB = sA + ${stages} * ${a_stage} * 2;
    sp_bf16 *sC = (sp_bf16 *)(sp_smem + (base - sp_smem_u32(sp_smem)) + ${pipe});
    const sp_u32 full = base + ${bars}, empty = full + ${stages} * 8;
    const sp_u32 staged = empty + ${stages} * 8, packed_bar = staged + 8;
    const int KT = (K + ${bk} - 1) / ${bk};${pairs}
    if (tid == 0) {
        for (int s = 0; s < ${stages}; ++s) {
            sp_mbar_init(full + s * 8, 1);
            sp_mbar_init(empty + s * 8, ${empty_count});
        }${handover}
        sp_fence_mbar_init();
    }
    __syncthreads();${cluster_sync}
    /* tile t of this CTA's sequence: group_m CTA rows walked together along M (L2 reuse) */
#define SP_GROUP_ROWS(t) min(${tm} - ((t) / (${group_m} * tiles_n)) * ${group_m}, ${group_m})
#define SP_PID_M(t) ${pid_m}
#define SP_PID_N(t) (((t) % (${group_m} * tiles_n)) / SP_GROUP_ROWS(t))
    if (warp < ${mma_warps}) {
        const int wg = warp >> 2;
        int it = ${it0}, n = 0;${pre}
        for (int t = ${t0}${wg_t0}; t < ${tn}; t += ${wg_step}, ++n) {
            const int n0 = SP_PID_N(t) * ${bn};
${acc}${init}${turn}
${consume}${skip}
${stage}
        }${post}
    } else if (warp == ${mma_warps}) {
        if (lane == 0) {
            int it = 0;
            for (int t = ${t0}; t < ${tn}; t += ${tstep}) {
                const int pid_m = SP_PID_M(t), pid_n = SP_PID_N(t);
                for (int kt = 0; kt < KT; ++kt, ++it) {
${issue}
                }
            }
        }
        __syncwarp();
    }${drain}${cluster_sync}
#undef SP_PID_N
#undef SP_PID_M
#undef SP_GROUP_ROWS
]], {bm = c.bm, bn = c.bn, bk = wgmma.BK, stages = c.stages, a_stage = d.a_stage, b_stage = d.b_stage,
     pipe = l.pipe, bars = l.bars, mma_warps = d.mma_warps, group_m = c.group_m, handover = handover,
     empty_count = (pp and 4 or d.mma_warps) * cl, tm = cl == 2 and "tiles_m2" or "tiles_m",
     pid_m = cl == 2 and "(2 * " .. pid_m .. " + rank)" or pid_m,
     t0 = t0, tn = tn,
     tstep = tstep, it0 = pp and "wg * KT" or "0", wg_t0 = pp and (" + wg * " .. tstep) or "",
     wg_step = pp and ("2 * " .. tstep) or tstep,
     skip = pp and "\n            it += KT;   /* the other warpgroup's tile */" or "",
     -- clusters of 2: pair p is tiles (2 * pid_m2 + rank, pid_n); a CTA past the last tile row multiplies
     -- the last row's A again (nothing of it is written: its rows are past M) so that its peer gets its half of B
     pairs = cl == 2 and "\n    const int rank = sp_cluster_rank(), tiles_m2 = (tiles_m + 1) / 2, npairs = tiles_m2 * tiles_n;"
       or "",
     -- the peer's barriers are initialised before any copy or arrival reaches them; no CTA leaves while its
     -- peer may still write into its shared memory or arrive on its barriers
     cluster_sync = cl == 2 and "\n    sp_cluster_sync();" or "",
     issue = wgmma.tma_issue(c, d, "it", "kt", (cl == 2 and "min(pid_m, tiles_m - 1) * " or "pid_m * ") .. c.bm,
                             "pid_n * " .. c.bn, x.b_mn, x.b_off),
     acc = wgmma.acc_decl(d),
     -- ping-pong: the CTA's first tile starts at once, every later one when the other warpgroup has waited for all of
     -- its stages (lib/wgmma.lua)
     turn = pp and string.format("\n            if (t != %s) sp_bar_sync256(1 + wg);", t0) or "",
     consume = wgmma.consume(c, d, "it", ", ++it", "it - 1", x.b_mn, pp and
                             string.format("\n        if (t + %s < %s) sp_bar_arrive256(2 - wg);", tstep, tn) or nil),
     stage = stage, drain = drain, pre = x.pre and ("\n" .. x.pre) or "", post = x.post and ("\n" .. x.post) or "",
     init = x.init and ("\n" .. x.init(d)) or ""})
end

-- The persistent kernel whose drain warps store the staged tile row by row (gemm's overlapped store,
-- twell-ffn's hot-slice GEMMs): `storers` of them (M.STORERS when nil) run `drain` on rows pw,
-- pw + storers, ... with n0 (the tile's first column) in scope; b_mn and init as in M.persistent.
-- store_persistent(c, storers): the launch's `persistent`.
M.STORERS = 2
function M.store_persistent(c, storers)
  return {drainers = storers or M.STORERS, staging = epilogue.staging_bytes(c)}
end
function M.store_body(c, drain, b_mn, storers, init)
  local x = M.store_persistent(c, storers)
  x.b_mn, x.init = b_mn, init
  x.stage = function(d) return epilogue.stage(d, c, "none") end
  x.drain = "        const int n0 = pid_n * " .. c.bn .. ";\n" .. drain
  return M.persistent(c, x)
end

return M
