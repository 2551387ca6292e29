-- Hopper tensor-core main loop: wgmma (sm_90a only) reading both operands from shared memory in
-- the 128-byte swizzled layout its descriptors name. Each of `wgs` warpgroups (4 warps) computes
-- bm/wgs rows x bn columns as bm/wgs/64 m64nBNk16 instructions per k16 step, issued
-- asynchronously. Two loaders fill the stages:
--   load=tma:     one producer warp drives the copy engine; each stage has a `full` mbarrier (its
--                 bytes landed) and an `empty` one (every accumulator warp retired the wgmmas that
--                 read it); no CTA barrier in the loop (mainloop_tma);
--   load=cpasync: every thread copies with cp.async, k-tile kt + stages - 2 while the tensor
--                 cores work on kt, one CTA barrier per k-tile (mainloop_cpasync).
--
-- Same contract as lib/mma_sync.lua: acc = A[m0:m0+bm, :] * B[n0:n0+bn, :]^T, A M x K and B
-- N x K row-major (K-major, as wgmma wants both: no transposes), tails zero-filled, element-wise
-- loads when K % 8 != 0 or a pointer is not 16-byte aligned.
--
-- Accumulator layout (per n8 block the same as mma.sync's m16n8 C fragment): acc[i][j][e] holds
--   row m0 + wg*(bm/wgs) + i*64 + (warp & 3)*16 + (lane >> 2) + (e >= 2 ? 8 : 0)
--   col n0 + j*8 + (lane & 3)*2 + (e & 1)
-- (derive(c).acc_row / acc_col give the parts that depend on i, j and the warp.)
local text = require("lib.text")
local cuda = require("lib.cuda")
local mma = require("lib.mma_sync")
local M = {}

M.BK = 64   -- one 128-byte swizzle row of bf16 per tile row

function M.derive(c)
  local d = {}
  d.wgs = c.wgs
  d.mma_warps = 4 * c.wgs            -- warps holding accumulators
  d.tma = c.load == "tma"
  d.warps = d.mma_warps + (d.tma and 1 or 0)   -- + the producer warp
  d.threads = 32 * d.warps
  -- rows per warpgroup: with ping-pong warpgroups (M.pingpong) each takes whole tiles in turn
  d.rows_wg = M.pingpong(c) and c.bm or c.bm // c.wgs
  d.mt = d.rows_wg // 64             -- m64 instructions per k16 step
  d.nt = c.bn // 8                   -- n8 blocks per instruction
  d.a_stage = c.bm * M.BK            -- elements
  d.b_stage = c.bn * M.BK
  -- stages of 1024-byte aligned tiles, plus 1 KB to align the dynamic shared memory base
  -- (and the stages' full and empty mbarriers)
  d.smem = c.stages * (d.a_stage + d.b_stage) * 2 + 1024 + (d.tma and 16 * c.stages or 0)
  d.a_iters = c.bm * 8 // d.threads  -- 16-byte chunks per thread and tile (cp.async)
  d.b_iters = c.bn * 8 // d.threads
  d.acc_regs = d.mt * c.bn // 2
  d.acc_row = M.pingpong(c) and "i * 64 + (warp & 3) * 16"
              or string.format("(warp >> 2) * %d + i * 64 + (warp & 3) * 16", d.rows_wg)
  d.acc_col = "j * 8"
  d.acc_owner = d.tma and string.format("warp < %d", d.mma_warps) or nil
  return d
end

M.params = {
  {name = "wgs", values = {1, 2}, default = 2, doc = "wgmma: consumer warpgroups per CTA (each bm/wgs rows)"},
  {name = "load", values = {"tma", "cpasync"}, default = "tma",
   doc = "wgmma: tiles loaded by the copy engine from one producer warp (mbarrier pipeline), or by every thread"
     .. " with cp.async"},
}

M.constraints = {
  {why = "wgmma needs sm_90a", check = function(c, gpu) return gpu.wgmma end},
  {why = "wgmma: 64-row instructions tile each warpgroup's rows, bk = 64 (one 128-byte swizzle row)",
   check = function(c) return c.bm % (64 * c.wgs) == 0 and c.bk == M.BK end},
  {why = "wgmma: 3 to 5 stages (cp.async copies run stages - 2 k-tiles ahead)",
   check = function(c) return c.stages >= 3 and c.stages <= 5 end},
  {why = "wgmma with cp.async: tile loads divide evenly among the threads",
   check = function(c) local d = M.derive(c); return d.tma or (d.a_iters >= 1 and d.b_iters >= 1
     and (c.bm * 8) % d.threads == 0 and (c.bn * 8) % d.threads == 0) end},
  {why = "wgmma with tma: the copy engine (sm_90)", check = function(c, gpu) return c.load ~= "tma" or gpu.tma end},
  {why = "wgmma with tma: a box is at most 256 rows", check = function(c) return c.load ~= "tma" or c.bm <= 256 end},
  {why = "wgmma: at most 128 accumulators per thread",
   check = function(c) return M.derive(c).acc_regs <= 128 end},
  {why = "wgmma: pipeline fits in shared memory",
   check = function(c, gpu)
     local need = M.derive(c).smem
     if need > gpu.smem_per_block then return false, string.format("%d bytes > %d", need, gpu.smem_per_block) end
     return true
   end},
}

-- The wgmma instruction for one m64 x bn block (an inline-asm wrapper per N: the accumulator
-- list is spelled out, as PTX needs); suffix and trans_b name and set the B-transposed form.
-- (ty: the inputs' type, bf16 unless given: "f16.f16" for fp16)
local function wgmma_fn(n, suffix, trans_b, what, ty)
  local regs = n // 2
  local ops, outs = {}, {}
  for r = 0, regs - 1 do ops[#ops + 1] = "%" .. r end
  for j = 0, n // 8 - 1 do
    for e = 0, 3 do outs[#outs + 1] = string.format('"+f"(d[%d][%d])', j, e) end
  end
  return text.fill([[
/* ${what} */
__device__ __forceinline__ void sp_wgmma_m64n${n}${suffix}(float (&d)[${nt}][4], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %${ip}, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n${n}k16.f32.${ty} {${list}}, %${ia}, %${ib}, p, 1, 1, 0, ${tb};\n"
                 "}\n"
                 : ${outs}
                 : "l"(da), "l"(db), "r"(1));
}
]], {n = n, nt = n // 8, list = table.concat(ops, ", "), ia = regs, ib = regs + 1, ip = regs + 2,
     outs = table.concat(outs, ", "), suffix = suffix, tb = trans_b, what = what, ty = ty or "bf16.bf16"})
end
M.wgmma_fn = wgmma_fn

-- The descriptor of a 128-byte swizzled K-major tile and the wgmma fence, commit and wait (also lib/slotfill_wgmma.lua).
M.SYNC = cuda_file("wgmma_sync")

function M.device(c)
  local n = c.bn
  return M.SYNC .. wgmma_fn(n, "", 0, "d[64 x " .. n .. "] += A(64 x 16, smem) * B(" .. n .. " x 16, smem)^T")
    .. (c.load == "tma" and M.tma_device or "") .. (M.cluster(c) == 2 and M.cluster_device or "")
    .. (M.pingpong(c) and M.pingpong_device or "")
end

-- CTAs per cluster of a persistent kernel: 2 where the configuration the caller derived sets cluster = 2
-- (lib/twell_produce.lua: epi = regs2); the pair works on tiles of the same B rows, each CTA multicasting
-- half of every B stage to both (half the L2 traffic for B).
-- (cluster and pingpong are fields of derived configurations, not parameters: read raw, so that a constraint's
-- check through derive(c) does not count as reading every parameter in the space walk, gen/sp_template_run.c)
function M.cluster(c) return rawget(c, "cluster") or 1 end

-- Ping-pong warpgroups (a persistent kernel's configuration derived with pingpong = true, lib/twell_produce.lua:
-- epi = pingpong): each of the two warpgroups multiplies whole tiles, the CTA's tiles taken in turn, so that one
-- packs its finished tile while the other keeps the tensor cores busy; a stage is released by one warpgroup. A
-- warpgroup starts waiting for its tile's stages only once the other has waited for all of its own (named barriers
-- 1 and 2, M.pingpong_device): a stage's full barrier tells apart two successive fills only (a parity), and the
-- main loops then take the tensor cores in turn.
function M.pingpong(c) return rawget(c, "pingpong") == true end
M.pingpong_device = cuda_file("wgmma_pingpong")

-- What a source whose first kernels were emitted for configuration `have` (M.device) lacks for a persistent kernel
-- of configuration `need` with B K-major: the wgmma of need's width, and the named barriers of ping-pong warpgroups.
function M.device_more(have, need)
  return (have.bn ~= need.bn and wgmma_fn(need.bn, "", 0, "d[64 x " .. need.bn .. "] += A(64 x 16, smem) * B("
                                          .. need.bn .. " x 16, smem)^T") or "")
    .. ((M.pingpong(need) and not M.pingpong(have)) and M.pingpong_device or "")
end

-- B stored MN-major (K x N row-major in memory, as the down projection's weights Wd: row k = neuron
-- k's output row): the copy engine lands each k-tile as bn/64 boxes of 64 k-rows x 64 columns (one
-- 128-byte swizzled row per k), box after box; the descriptor's leading offset steps between the
-- boxes (64 columns apart), its stride offset between groups of 8 k-rows; wgmma reads B transposed.
-- Emitted after M.device(c) in sources that have a kernel with b_mn.
M.MN_BOX = M.BK * M.BK * 2   -- bytes of one 64 x 64 box

function M.device_mn(c)
  return text.fill([[
/* 128-byte swizzled MN-major tile of 64 k-rows per box: boxes ${box} bytes apart (leading), 8-row
   groups 1024 bytes apart (stride). */
__device__ __forceinline__ unsigned long long sp_wgmma_desc_mn(sp_u32 addr)
{
    return (unsigned long long)((addr & 0x3ffffu) >> 4) | ((unsigned long long)(${box} >> 4) << 16) | (64ull << 32)
           | (1ull << 62);
}
]], {box = M.MN_BOX}) .. wgmma_fn(c.bn, "_bt", 1, "d[64 x " .. c.bn .. "] += A(64 x 16, smem) * B(16 x " .. c.bn ..
                                  ", smem, MN-major)")
end

-- The copy engine and mbarriers (sm_90).
-- The tensor map type and the 2-D box load (also lib/slotfill_wgmma.lua, which has mbarrier helpers of its own).
M.TMAP = cuda_file("tma_map")
M.TMA_LOAD = cuda_file("tma_load")
M.tma_device = M.TMAP .. cuda_file("mbarrier") .. M.TMA_LOAD

-- Clusters of 2 (M.cluster; after M.tma_device).
M.cluster_device = cuda_file("wgmma_cluster")

-- Extra kernel parameters (after the ordinary ones): the tensor maps of A and B with tma.
function M.kernel_params(c)
  if c.load ~= "tma" then return "" end
  return ",\n        const __grid_constant__ sp_tmap sp_tmA, const __grid_constant__ sp_tmap sp_tmB"
end

-- The launch's tmaps for A = the argument named a (rows x K) and B = the argument named b
-- (cols x K; with b_mn, K x cols: MN-major, loaded in 64 x 64 boxes); nil without tma.
function M.tmaps(c, a, rows, b, cols, K, b_mn)
  if c.load ~= "tma" then return nil end
  return {{arg = a, rows = rows, cols = K, box_rows = c.bm, box_cols = M.BK, swizzle = 128},
          b_mn and {arg = b, rows = K, cols = cols, box_rows = M.BK, box_cols = M.BK, swizzle = 128}
               or {arg = b, rows = cols, cols = K, box_rows = c.bn // M.cluster(c), box_cols = M.BK, swizzle = 128}}
end

-- Kernel body start: tile order (lib/cuda.lua) and the warpgroup coordinates.
function M.cta_prologue(c)
  return cuda.tile_order(c) .. "\n    const int wg = warp >> 2;"
end

-- cp.async loads in the 128-byte swizzle (chunk ch of row r at chunk ch ^ (r & 7)): the mma.sync
-- loop's xor layout at bk = 64.
local function load_operand(d, v)
  return mma.load_operand({swizzle = "xor", bk = M.BK}, {cpr = 8, threads = d.threads}, v)
end

-- The main loop. Expects in scope: const sp_bf16 *A, *B; int M, N, K; int m0, n0, tid, warp,
-- lane, wg; unsigned char sp_smem[] (dynamic, >= derive(c).smem bytes); with tma also the maps
-- sp_tmA, sp_tmB. Declares float acc[mt][nt][4].
function M.mainloop(c)
  if c.load == "tma" then return M.mainloop_tma(c) end
  return M.mainloop_cpasync(c)
end

function M.acc_decl(d) return cuda.acc_decl(d.mt, d.nt) end

-- One k-tile's wgmmas from stage st (a C expression), asynchronously, as one commit group. With
-- b_mn, B is MN-major (M.device_mn): the next k16 step is two 8-row groups further (2048 bytes).
function M.tile(c, d, b_mn)
  return text.fill([[
        const sp_u32 a_base = sA + (sp_u32)(st * ${a_stage}${wg_off}) * 2u;
        const sp_u32 b_base = sB + (sp_u32)(st * ${b_stage}) * 2u;
        sp_wgmma_fence();
        #pragma unroll
        for (int ks = 0; ks < ${bk} / 16; ++ks) {
            const unsigned long long db = ${bdesc};
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i)
                sp_wgmma_m64n${bn}${suffix}(acc[i], sp_wgmma_desc(a_base + (sp_u32)(i * 64 * ${bk} * 2) + ks * 32), db);
        }
        sp_wgmma_commit();]], {a_stage = d.a_stage, b_stage = d.b_stage, bk = M.BK, mt = d.mt,
                               wg_off = M.pingpong(c) and "" or string.format(" + wg * %d * %d", d.rows_wg, M.BK),
                               bn = c.bn, suffix = b_mn and "_bt" or "",
                               bdesc = b_mn and "sp_wgmma_desc_mn(b_base + ks * 2048)" or "sp_wgmma_desc(b_base + ks * 32)"})
end

-- Warp-specialised: the last warp's lane 0 streams k-tiles through the copy engine; the
-- warpgroups never meet at a CTA barrier in the loop. Each keeps one wgmma group in flight, so
-- stage kt - 1 is released at step kt.
function M.mainloop_tma(c)
  local d = M.derive(c)
  return text.fill([[
    const sp_u32 sA = (sp_smem_u32(sp_smem) + 1023u) & ~1023u;
    const sp_u32 sB = sA + ${stages} * ${a_stage} * 2;
    const sp_u32 full = sB + ${stages} * ${b_stage} * 2, empty = full + ${stages} * 8;
    const int KT = (K + ${bk} - 1) / ${bk};
    if (tid == 0) {
        for (int s = 0; s < ${stages}; ++s) {
            sp_mbar_init(full + s * 8, 1);
            sp_mbar_init(empty + s * 8, ${mma_warps});
        }
        sp_fence_mbar_init();
    }
    __syncthreads();
${acc}
    if (warp == ${mma_warps}) {
        if (lane == 0) {
            for (int kt = 0; kt < KT; ++kt) {
${issue}
            }
        }
        __syncwarp();
    } else {
${consume}
    }
]], {stages = c.stages, a_stage = d.a_stage, b_stage = d.b_stage, bk = M.BK, mma_warps = d.mma_warps,
     acc = M.acc_decl(d), consume = M.consume(c, d, "kt", "", "KT - 1"),
     issue = M.tma_issue(c, d, "kt", "kt", "m0", "n0")})
end

-- The accumulator warps' loop over one tile's k-tiles (it: the k-tile count over the kernel's life,
-- advanced by `advance` each step; last: its value at the tile's last k-tile): wait for the
-- stage, multiply, and release the stage one step later (after the wgmmas reading it retired);
-- the last stage is released once all are done. issued (optional): what runs once the last k-tile's wgmmas went out.
function M.consume(c, d, it, advance, last, b_mn, issued)
  return text.fill([[
        for (int kt = 0; kt < KT; ++kt${advance}) {
            const int st = ${it} % ${stages};
            sp_mbar_wait(full + st * 8, (${it} / ${stages}) & 1);
${tile}
            sp_wgmma_wait<1>();
            if (kt > 0 && lane == 0) ${release}(empty + ((${it} - 1) % ${stages}) * 8);
        }${issued}
        sp_wgmma_wait<0>();
        if (lane == 0) ${release}(empty + ((${last}) % ${stages}) * 8);]],
    {it = it, advance = advance, last = last, stages = c.stages, tile = M.tile(c, d, b_mn), issued = issued or "",
     release = M.cluster(c) == 2 and "sp_mbar_release2" or "sp_mbar_arrive"})
end

-- The producer warp's copies of k-tile kt (C expressions: it counts k-tiles over the kernel's
-- life, for the stage and its phase; m0, n0: the tile's first row of A and of B, or with b_mn its
-- first column of B): wait until the stage is free, announce its bytes, start the boxes. b_off (optional, a C
-- expression): B's rows start that many rows into its map (its N rows, or with b_mn its K rows): a slice of a matrix.
function M.tma_issue(c, d, it, kt, m0, n0, b_mn, b_off)
  local bk_at = kt .. " * " .. M.BK   -- B's coordinate along K
  if b_off then
    if b_mn then bk_at = "(" .. b_off .. ") + " .. bk_at else n0 = "(" .. b_off .. ") + " .. n0 end
  end
  local b_load
  if M.cluster(c) == 2 then
    -- clusters of 2 (rank in scope: the CTA's in its cluster): each loads half of B's rows for both
    if b_mn then error("wgmma.tma_issue: clusters of 2 with B MN-major", 2) end
    b_load = text.fill([[
                sp_tma_load_2d_mc(sB + (sp_u32)(s * ${b_stage} + rank * ${half} * ${bk}) * 2u, &sp_tmB, ${bk_at},
                                  ${n0} + rank * ${half}, full + s * 8);]],
      {b_stage = d.b_stage, bk_at = bk_at, bk = M.BK, n0 = n0, half = c.bn // 2})
  elseif not b_mn then
    b_load = text.fill([[
                sp_tma_load_2d(sB + (sp_u32)(s * ${b_stage}) * 2u, &sp_tmB, ${bk_at}, ${n0}, full + s * 8);]],
      {b_stage = d.b_stage, bk_at = bk_at, n0 = n0})
  else
    b_load = text.fill([[
                #pragma unroll
                for (int bx = 0; bx < ${boxes}; ++bx)
                    sp_tma_load_2d(sB + (sp_u32)(s * ${b_stage}) * 2u + bx * ${box}, &sp_tmB, ${n0} + bx * ${bk}, ${bk_at},
                                   full + s * 8);]],
      {boxes = c.bn // M.BK, b_stage = d.b_stage, box = M.MN_BOX, n0 = n0, bk_at = bk_at, bk = M.BK})
  end
  return text.fill([[
                const int s = ${it} % ${stages};
                if (${it} >= ${stages}) sp_mbar_wait(empty + s * 8, ((${it} / ${stages}) - 1) & 1);
                /* out-of-range parts of a box arrive as zeros and count in full */
                sp_mbar_expect_tx(full + s * 8, ${bytes});
                sp_tma_load_2d(sA + (sp_u32)(s * ${a_stage}) * 2u, &sp_tmA, ${kt} * ${bk}, ${m0}, full + s * 8);
${b_load}]],
    {it = it, kt = kt, m0 = m0, stages = c.stages, bytes = (c.bm + c.bn) * M.BK * 2,
     a_stage = d.a_stage, bk = M.BK, b_load = b_load})
end
--
-- Per k-tile kt: wait for its copies, make them visible to the async proxy (wgmma reads shared
-- memory through it) and to every warp (barrier); the barrier also means every warpgroup has
-- retired the wgmmas of k-tile kt - 2 (each keeps one group in flight), so the copies of
-- k-tile kt + stages - 2 may overwrite that stage. Then the wgmmas of kt go out asynchronously.
function M.mainloop_cpasync(c)
  local d = M.derive(c)
  local v = {stages = c.stages, ahead = c.stages - 2, wait = c.stages - 3, bk = M.BK,
             a_stage = d.a_stage, acc = M.acc_decl(d), tile = M.tile(c, d),
             load_a = load_operand(d, {iters = d.a_iters, base = "m0", limit = "M", smem = "sA",
                                       stage_elems = d.a_stage, ptr = "A"}),
             load_b = load_operand(d, {iters = d.b_iters, base = "n0", limit = "N", smem = "sB",
                                       stage_elems = d.b_stage, ptr = "B"})}
  return text.fill([[
    const sp_u32 sA = (sp_smem_u32(sp_smem) + 1023u) & ~1023u;
    const sp_u32 sB = sA + ${stages} * ${a_stage} * 2;
    const bool vec = (K % 8 == 0) && ((((unsigned long long)A) | ((unsigned long long)B)) & 15ull) == 0;
    const int KT = (K + ${bk} - 1) / ${bk};
${acc}

    #pragma unroll
    for (int s = 0; s < ${ahead}; ++s) {
        if (s < KT) {
            const int stage = s, k0 = s * ${bk};
${load_a}
${load_b}
        }
        sp_cp_async_commit();
    }
    for (int kt = 0; kt < KT; ++kt) {
        sp_cp_async_wait<${wait}>();
        sp_fence_proxy_async();
        __syncthreads();
        {
            const int pf = kt + ${ahead};
            if (pf < KT) {
                const int stage = pf % ${stages}, k0 = pf * ${bk};
${load_a}
${load_b}
            }
            sp_cp_async_commit();
        }
        const int st = kt % ${stages};
${tile}
        sp_wgmma_wait<1>();
    }
    sp_wgmma_wait<0>();
    sp_cp_async_wait<0>();
]], v)
end

return M
