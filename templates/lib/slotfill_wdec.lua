-- slotfill-spmm's large-batch kernel with decoder warps of their own (mainloop=wgmma, wsrc=dec, the bitmap layout,
-- sm_90a): decoder warps turn the image's blocks into the 128-byte swizzled A tile of a stage while one or two
-- consumer warpgroups do nothing but wgmma with both operands in shared memory.
--
-- Why: with the consumers decoding (lib/slotfill_wgmma.lua, lib/slotfill_wsmem.lua) a warp waits out its own decode
-- or its own wgmma (ptxas serialises a decode placed beside them, C7515), so at most one decoding warp a scheduler
-- ran and the decode's latency set the pace (0.44 eligible warps a scheduler, 36 % of issue slots). Here the decode
-- never waits on the tensor cores; with 64 rows the two consumer warpgroups share each decoded tile, so a 16 x 16 step
-- of W (~50 instructions) serves 2 bn tokens: at bn 128 a sixth of the issue slots at cuBLAS's rate.
--
-- A CTA is `wrows` rows of W and `warps` / 4 consumer warpgroups, then `dwarps` decoder warps (warp d: tile
-- d % tiles of every (dwarps / tiles)-th stage, taking turns), a W loader warp and an X loader warp. 64 rows:
-- warpgroup r takes tokens n0 + r bn .. of the one A tile; 128 rows (two warpgroups): warpgroup r rows 64 r .., both
-- the same bn tokens, X read half as often a MAC. The decode is lib/slotfill_wsmem.lua's (an item: a tile's 4 steps
-- of a 64-column stage) over a ring of 2 to 4 chunk slots, as many as shared memory holds (with two, 8 decoder warps
-- waited on W's loads); the barriers are laid out as there. X's boxes go in as soon as a stage is released (behind
-- the blocks' loads, the consumers waited on X more than on the decode). A consumer keeps one stage's wgmma in
-- flight and releases the stage before (its X boxes and A tile) once they retire. Every thread checks the image's
-- header first (lib/slotfill_wgmma.lua's prologue): an image that is not this kernel's makes every output NaN.
-- K % 8 == 0; X 16-byte aligned.
local text = require("lib.text")
local bitmap = require("lib.slotfill_bitmap")
local large = require("lib.slotfill_wgmma")
local wsmem = require("lib.slotfill_wsmem")

local M = {}

function M.layout(c, gpu_smem)
  local cw = c.warps // 4
  local l = {bm = c.wrows, nt = c.warps, cw = cw, tiles = c.wrows // 16}
  l.share = c.wrows == 64                   -- the warpgroups share the A tile (and split the tokens)
  l.tn = l.share and cw * c.bn or c.bn
  l.threads = 32 * (c.warps + c.dwarps + 2)
  l.astage = c.wrows * 128                  -- a stage's A tile: wrows rows of 64 columns
  l.box = c.bn * 128
  l.xstage = (l.share and cw or 1) * l.box
  l.xoff = c.stages * l.astage
  l.woff = l.xoff + c.stages * l.xstage
  l.wslot = l.tiles * bitmap.BLOCK_MAX
  -- as many chunk slots as fit, up to 4
  local function total(ws) return 1024 + l.woff + ws * l.wslot + 1024 + 8 * (4 * c.stages + 2 * ws) end
  l.wslots = 2
  while l.wslots < 4 and gpu_smem and total(l.wslots + 1) <= gpu_smem do l.wslots = l.wslots + 1 end
  -- past the slots: room for a damaged block's worst reads (offsets < 4096 and a byte-wide prefix)
  l.bars = l.woff + l.wslots * l.wslot + 1024
  l.total = total(l.wslots)
  l.ypitch = l.bm + 8
  l.ystage = l.tn * l.ypitch * 2
  l.rpitch = l.tn + 4                       -- 16-byte rows: the sums read 4 tokens at a time
  l.red = c.split > 1 and l.bm * l.rpitch * 4 or 0
  return l
end

function M.check(c, gpu, p)
  if c.wsrc ~= "dec" then return true end
  if c.mainloop ~= "wgmma" or c.decode ~= "bitmap" or not gpu.wgmma then
    return false, "the bitmap layout's wgmma kernel (sm_90a)"
  end
  if (c.warps ~= 4 and c.warps ~= 8) or c.tpw ~= 1 or c.ring ~= 36 or c.bn < 32 or c.split > 4 then
    return false, "one or two consumer warpgroups (warps 4 or 8), tpw 1, ring at its default, bn >= 32, split up to 4"
  end
  -- 13 warps or more leave a thread 152 registers: m64n256's accumulators and descriptors need more
  if c.warps + c.dwarps > 8 and c.bn > 128 then
    return false, "bn 256 with one consumer warpgroup and 4 decoder warps (their registers)"
  end
  -- 22 warps or more leave a thread 80 registers or fewer: bn 128's accumulators need 90
  if c.dwarps == 16 and c.bn > 64 then return false, "16 decoder warps with bn <= 64 (their registers)" end
  local l = M.layout(c, gpu.smem_per_block)
  if c.wrows == 128 and (c.warps ~= 8 or c.dwarps ~= 8) then
    return false, "128 rows: two consumer warpgroups and a decoder warp a tile (warps 8, dwarps 8)"
  end
  if p and l.share and c.warps == 8 and p.N <= c.bn then
    return false, "the second consumer warpgroup has tokens (N > bn)"
  end
  return wsmem.fits(l, gpu, p)
end

local KERNEL = [[
#define SP_NT ${nt}
#define SP_MT ${mt}
#define SP_DW ${dw}
#define SP_XB ${xb}
#define SP_THREADS ${threads}
#define SP_BM ${bm}
#define SP_BN ${tn}
#define SP_WN ${bn}
#define SP_NB ${nb}
#define SP_S ${stages}
#define SP_SPLIT ${split}
#define SP_ASTAGE ${astage}
#define SP_BOX ${box}
#define SP_XOFF ${xoff}
#define SP_XSTAGE ${xstage}
#define SP_WOFF ${woff}
#define SP_WSLOT ${wslot}
#define SP_BARS ${bars}
#define SP_YP ${ypitch}
#define SP_RP ${rpitch}
#define SP_WS ${wslots}
${head}
${item}extern "C" __global__ void __launch_bounds__(${threads}, 1)
${name}(${params}, const __grid_constant__ sp_tmap sp_tmX)
{
${opening}    /* as lib/slotfill_wsmem.lua lays them out: xfull[s] at + 8 s; the A tile's afull[s][r] at + 8 (S + 2 s + r);
     * empty[s] at + 8 (3 S + s); a chunk slot's wfull[w] at + 8 (4 S + w), its release wfree[w] at
     * + 8 (4 S + WS + w) */
    const sp_u32 bars = base + SP_BARS;
    if (threadIdx.x == 0) {
        for (int s = 0; s < SP_S; ++s) {
            sp_mbar_init(bars + 8 * s, 1);                 /* the loader's expect_tx; the X boxes' bytes */
            sp_mbar_init(bars + 8 * (SP_S + 2 * s), 4);    /* the tiles of warpgroup 0's rows decoded */
            sp_mbar_init(bars + 8 * (SP_S + 2 * s + 1), ${afull1});    /* ... of warpgroup 1's (128 rows) */
            sp_mbar_init(bars + 8 * (3 * SP_S + s), SP_NT);/* every consumer warp: the stage's wgmma retired */
        }
        for (int w = 0; w < SP_WS; ++w) {
            sp_mbar_init(bars + 8 * (4 * SP_S + w), 1);    /* the loader's expect_tx; the blocks' bytes */
            sp_mbar_init(bars + 8 * (4 * SP_S + SP_WS + w), 2 * SP_MT); /* the chunk's items decoded */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == SP_NT + SP_DW + 1) {
        /* the X loader: stage j's boxes (one per consumer warpgroup) once stage j - S is released, as far ahead of the
         * decode as the stages allow (behind the blocks' loads, the consumers waited on X more than on the decode) */
        for (int j = 0; j < halves && lane == 0; ++j) {
            const int s = j % SP_S;
            if (j >= SP_S) sp_mbar_wait(bars + 8 * (3 * SP_S + s), ((j / SP_S) - 1) & 1);
            sp_mbar_expect_tx(bars + 8 * s, SP_XSTAGE);
            for (int r = 0; r < SP_XB; ++r)
                sp_tma_load_2d(base + SP_XOFF + s * SP_XSTAGE + r * SP_BOX, &sp_tmX,
                               (c0 + (j >> 1)) * 128 + (j & 1) * 64,
                               n0 + r * SP_WN, bars + 8 * s);
        }
    } else if (warp == SP_NT + SP_DW) {
        /* the W loader: chunk c's blocks into slot c % WS once chunk c - WS's are decoded */
        const int tile = tile0 + lane;
        const bool live = lane < SP_MT && tile < tiles;
${offsets}
        for (int c = 0; c < nch; ++c) {
            const int w = c % SP_WS;
            if (c >= SP_WS) sp_mbar_wait(bars + 8 * (4 * SP_S + SP_WS + w), ((c / SP_WS) - 1) & 1);
${next_block}
            sp_u32 total = bytes;
            #pragma unroll
            for (int d = 16; d > 0; d >>= 1) total += __shfl_xor_sync(SP_FULL, total, d);
            const sp_u32 full = bars + 8 * (4 * SP_S + w);
            if (lane == 0) sp_mbar_expect_tx(full, total);
            __syncwarp();
            if (bytes)
                sp_bulk_load(base + SP_WOFF + w * SP_WSLOT + lane * SP_BMAX, blocks + (size_t)o0 * 16, bytes, full);
            o0 = o1;
            o1 = o2;
        }
    } else if (warp >= SP_NT) {
        /* a decoder: its tile's item of its stages, as far ahead as the stages' release lets it */
        sp_u32 t0, t1;   /* the decode's PRMT selectors (made by asm so that the compiler keeps them in registers) */
        asm volatile("mov.b32 %0, 0x32103232;\n" : "=r"(t0));
        asm volatile("mov.b32 %0, 0x54101032;\n" : "=r"(t1));
        const int d = warp - SP_NT, t = d % SP_MT;
        const bool live = tile0 + t < tiles;
        for (int j = d / SP_MT; j < halves; j += SP_DW / SP_MT) sp_item(sp_smem, base, bars, j, t, live, lane, t0, t1);
    }
    if (warp >= SP_NT && SP_SPLIT == 1) return;
${acc}
    if (warp < SP_NT) {
        /* a consumer: stage j's wgmma once its X boxes and A tile are in, one stage in flight */
        const int r = warp >> 2;
        const sp_u32 xw = base + SP_XOFF + ${xr} * SP_BOX, aw = base + ${ar} * (64 * 128);
        for (int j = 0; j < halves; ++j) {
            const int s = j % SP_S;
            const sp_u32 par = (j / SP_S) & 1;
            sp_mbar_wait(bars + 8 * s, par);
            sp_mbar_wait(bars + 8 * (SP_S + 2 * s + ${ar}), par);
            const sp_u32 as = aw + s * SP_ASTAGE, xs = xw + s * SP_XSTAGE;
            sp_wgmma_fence();
            #pragma unroll
            for (int q = 0; q < 4; ++q) sp_wgmma_m64n${bn}(acc, sp_wgmma_desc(as + 32 * q), sp_wgmma_desc(xs + 32 * q));
            sp_wgmma_commit();
            sp_wgmma_wait<1>();
            if (j > 0 && lane == 0) sp_mbar_arrive(bars + 8 * (3 * SP_S + (j - 1) % SP_S));
        }
        sp_wgmma_wait<0>();
        if (halves > 0 && lane == 0) sp_mbar_arrive(bars + 8 * (3 * SP_S + (halves - 1) % SP_S));
    }
${epilogue}
}
]]

-- split-K: the cluster's partial tiles added through distributed shared memory, CTA r of the cluster adding rows
-- [r BM / SPLIT, (r + 1) BM / SPLIT) of the tile, 4 tokens a read and 4 such reads in flight a thread (one scalar
-- read at a time, a thread waited out each remote read's latency in turn: a quarter of the kernel's time).
local EPI_SPLIT = [[
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    float *red = (float *)sp_smem;                            /* [BM][BN + 4] */
    if (warp < SP_NT) {
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                red[(${row} + g + 8 * (e >> 1)) * SP_RP + ${col} + j * 8 + 2 * tq + (e & 1)] = acc[j][e];
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    sp_u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const sp_u32 rbase = sp_smem_u32(red);
    const int per_rank = SP_BM / SP_SPLIT, rows = min(SP_BN, N - n0), items = per_rank * (SP_BN / 4);
    for (int i0 = threadIdx.x; i0 < items; i0 += 4 * SP_THREADS) {
        float v[4][SP_SPLIT][4];
        #pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int i = min(i0 + u * SP_THREADS, items - 1);
            const sp_u32 at = rbase + (sp_u32)(((int)rank * per_rank + i % per_rank) * SP_RP + (i / per_rank) * 4) * 4u;
            #pragma unroll
            for (int q = 0; q < SP_SPLIT; ++q) {
                sp_u32 remote;
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(at), "r"(q));
                asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                             : "=f"(v[u][q][0]), "=f"(v[u][q][1]), "=f"(v[u][q][2]), "=f"(v[u][q][3])
                             : "r"(remote) : "memory");
            }
        }
        #pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int i = i0 + u * SP_THREADS, r = (int)rank * per_rank + i % per_rank, n = (i / per_rank) * 4;
            if (i >= items || m0 + r >= M) continue;
            #pragma unroll
            for (int e = 0; e < 4; ++e) {
                float sum = 0.0f;
                #pragma unroll
                for (int q = 0; q < SP_SPLIT; ++q) sum += v[u][q][e];
                if (n + e < rows) Y[(size_t)(n0 + n + e) * M + m0 + r] = ok ? sp_out16(sum) : (unsigned short)0xffffu;
            }
        }
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");]]

-- The output tile's place of a consumer's fragment: with 64 rows warpgroup r's rows are the CTA's, its tokens r bn
-- on; with 128 as lib/slotfill_wgmma.lua places them.
local function epilogue(c)
  if c.split > 1 then
    return text.fill(EPI_SPLIT, {row = c.wrows == 128 and "warp * 16" or "(warp & 3) * 16",
                                 col = c.wrows == 128 and "0" or "(warp >> 2) * SP_WN"})
  end
  local e = large.epilogue(c)
  if c.wrows == 128 then return e end
  local function swap(old, new)
    local i, j = e:find(old, 1, true)
    assert(i, "lib/slotfill_wgmma.lua's epilogue changed: " .. old)
    e = e:sub(1, i - 1) .. new .. e:sub(j + 1)
  end
  swap("warp * 16 + g", "(warp & 3) * 16 + g")
  swap("j * 8 + 2 * tq", "(warp >> 2) * SP_WN + j * 8 + 2 * tq")
  return e
end

function M.emit(c, name, params, f16, gpu)
  local l = M.layout(c, gpu.smem_per_block)
  return text.fill(KERNEL, {
    nt = c.warps, mt = l.tiles, dw = c.dwarps, xb = l.xstage // l.box, bm = l.bm, xr = l.share and "r" or "0",
    afull1 = l.share and 1 or 4,
    ar = l.share and "0" or "r", threads = l.threads, tn = l.tn, bn = c.bn, nb = c.bn // 8,
    stages = c.stages, split = c.split, wslots = l.wslots, astage = l.astage, box = l.box, xoff = l.xoff,
    xstage = l.xstage,
    woff = l.woff, wslot = l.wslot, bars = l.bars, ypitch = l.ypitch, rpitch = l.rpitch, name = name,
    params = params, acc = large.ACC,
    head = wsmem.head(c.bn, f16),
    item = wsmem.item(l.wslots), opening = wsmem.opening(f16),
    epilogue = epilogue(c), offsets = bitmap.block_offsets("        "),
    next_block = bitmap.block_next("            ", "c")})
end

return M
