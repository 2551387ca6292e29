-- slotfill-spmm's large-batch kernel with W decoded into shared memory (mainloop=wgmma, wsrc=smem, the bitmap
-- layout, sm_90a): the consumer warps turn the image's blocks into the 128-byte swizzled K-major tile wgmma reads, ahead
-- of the tensor cores, and run both operands from shared memory, as the dense gemm does.
--
-- Why: decoded into wgmma's register operand (lib/slotfill_wgmma.lua) each warp waits out its own decode before its
-- wgmma (0.45x dense at large N). Here a warp decodes its tile of the stage two ahead after its wgmma retire, the two
-- warpgroups offset by half a stage, so one multiplies while the other decodes. Shaped by what ptxas allows: wgmma's
-- m64n256 needs ~154 registers a thread (no kernel of more than 384 threads, whatever setmaxnreg later moves), and a
-- decode placed while the thread's own wgmma are in flight serialises every wgmma of the kernel (C7515). Measured:
-- 0.30-0.68x dense; the decode's ~85 instructions a 16 x 16 step bound it (docs/journal/2026-12-03.md).
--
-- A CTA is 9 warps: warps 0-7 consume (rows 64 r .. 64 r + 63 for warpgroup r) and decode (warp w its tile w), warp 8
-- loads. The loader copies each 128-column chunk's 8 blocks (one a 16-row tile) into one of two fixed slots (bulk
-- copies) one chunk ahead of the X tiles (64 columns a stage, the copy engine, 128-byte swizzle). An item (stage,
-- tile): the tile's 4 steps of the stage decoded as the small-batch kernel decodes them (lib/slotfill_bitmap.lua),
-- stored where the swizzled A tile holds them, made visible to the tensor cores' proxy, then one arrival on the
-- warpgroup's A barrier of the stage and one on the chunk slot's release. The loader's order (a chunk's blocks before
-- the X tiles of the chunk before it) never waits on a stage that needs what it has yet to load.
-- Every thread checks the image's header first (lib/slotfill_wgmma.lua's prologue): an image that is not this
-- kernel's makes every output NaN. K % 8 == 0; X 16-byte aligned.
local text = require("lib.text")
local bitmap = require("lib.slotfill_bitmap")
local wgmma = require("lib.wgmma")
local large = require("lib.slotfill_wgmma")

local M = {}

M.ASTAGE = 128 * 128   -- a stage's A tile: 128 rows of 64 columns

function M.layout(c)
  local l = {threads = 288, bm = 128, nt = 8}
  l.xstage = c.bn * 128
  l.xoff = c.stages * M.ASTAGE
  l.woff = l.xoff + c.stages * l.xstage
  l.wslot = 8 * bitmap.BLOCK_MAX
  -- past the slots: room for a damaged block's worst reads (offsets < 4096 and a byte-wide prefix)
  l.bars = l.woff + 2 * l.wslot + 1024
  l.total = 1024 + l.bars + 8 * (4 * c.stages + 4)
  l.ypitch = l.bm + 8
  l.ystage = c.bn * l.ypitch * 2
  l.rpitch = c.bn + 1
  l.red = c.split > 1 and l.bm * l.rpitch * 4 or 0
  return l
end

function M.check(c, gpu, p)
  if c.wsrc ~= "smem" then return true end
  if c.mainloop ~= "wgmma" or c.decode ~= "bitmap" or not gpu.wgmma then
    return false, "the bitmap layout's wgmma kernel (sm_90a)"
  end
  if c.warps ~= 8 or c.tpw ~= 1 or c.ring ~= 36 or c.bn < 32 or c.stages > 4 or c.split > 4 then
    return false, "two consumer warpgroups (warps 8), tpw 1, ring at its default, bn >= 32, stages 2 to 4, split up to 4"
  end
  return M.fits(M.layout(c), gpu, p)
end

-- The last checks of both shared-memory decode kernels (this one and lib/slotfill_wdec.lua), on their layout l.
function M.fits(l, gpu, p)
  if p and p.K % 8 ~= 0 then return false, "the copy engine reads X rows of a multiple of 16 bytes (K % 8 == 0)" end
  if l.ystage > l.bars or l.red > l.bars then return false, "the output tile fits the stages' space" end
  if l.total > gpu.smem_per_block then return false, string.format("%d bytes > %d", l.total, gpu.smem_per_block) end
  return true
end

-- The small-batch kernel's step decode for one (stage, tile) item: its bitmap word (iw), the lanes' first values
-- (iex) and the header's two words of the stage (hlo, hhi) instead of the whole block's.
-- The item's text for a ring of `slots` chunk slots (two: wsmem's own expressions, its kernels unchanged).
function M.item(slots)
  local two = slots == 2
  return text.fill(M.ITEM, {decode = M.item_decode(), slot = two and "c & 1" or "c % SP_WS",
                            phase = two and "(c >> 1) & 1" or "(c / SP_WS) & 1",
                            free = two and "4 * SP_S + 2" or "4 * SP_S + SP_WS"})
end

function M.item_decode()
  local d = bitmap.DECODE
  local function swap(old, new)
    local i, j = d:find(old, 1, true)
    assert(i, "lib/slotfill_bitmap.lua's decode changed: " .. old)
    d = d:sub(1, i - 1) .. new .. d:sub(j + 1)
  end
  swap("const sp_u32 mw = st < 4 ? mm[t].x : mm[t].y, ew = st < 4 ? ex0[t] : ex1[t];", "const sp_u32 mw = iw, ew = iex;")
  swap("const sp_u32 hw = st < 2 ? hb[t].x : st < 4 ? hb[t].y : st < 6 ? hb[t].z : hb[t].w;",
       "const sp_u32 hw = st < 2 ? hlo : hhi;")
  swap("vb[t]", "vb")
  return (d:gsub("hi%[t%]%[i%]", "hv[i]"))
end

-- The item's device functions (the wsrc=dec kernel, lib/slotfill_wdec.lua, takes them too): its bars are laid out
-- as here, warpgroup 0's A barriers serving its one 64-row A tile.
M.ITEM = [[
__device__ __forceinline__ void sp_sts32(sp_u32 addr, sp_u32 v)
{
    asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
/* One item: tile t's 4 steps of stage j (64 columns: half j % 2 of chunk j / 2) decoded into the stage's A tile, once
 * the chunk's blocks are in and the stage's slot is free; then one arrival on the stage's A barrier and one on the
 * chunk slot's release. `live`: the tile lies inside M (a tile past it only arrives). */
__device__ __forceinline__ void sp_item(const unsigned char *sp_smem, sp_u32 base, sp_u32 bars, int j, int t, bool live,
                                        int lane, sp_u32 t0, sp_u32 t1)
{
    const int c = j >> 1, h = j & 1, s = j % SP_S, w = ${slot}, g = lane >> 2, tq = lane & 3;
    sp_mbar_wait(bars + 8 * (4 * SP_S + w), ${phase});
    if (j >= SP_S) sp_mbar_wait(bars + 8 * (3 * SP_S + s), ((j / SP_S) - 1) & 1);
    if (live) {
        const sp_u32 bo = SP_WOFF + w * SP_WSLOT + t * SP_BMAX;
        const uint4 hb = *(const uint4 *)(sp_smem + bo);
        const sp_u32 iw = *(const sp_u32 *)(sp_smem + bo + SP_HDR + 8 * lane + 4 * h);
        const sp_u32 hlo = h ? hb.z : hb.x, hhi = h ? hb.w : hb.y, vb = base + bo + SP_HDR + SP_MASKB;
        /* each lane's first value of the stage's 4 steps: an exclusive scan over the lanes, bytes */
        const sp_u32 cnt = sp_step_counts(iw);
        sp_u32 iex = __shfl_up_sync(SP_FULL, cnt, 1);
        if (lane == 0) iex = 0;
        #pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const sp_u32 v = __shfl_up_sync(SP_FULL, iex, d);
            if (lane >= d) iex += v;
        }
        /* rows t 16 + g and + 8 of the stage's A tile (128-byte rows, 16-byte chunks swizzled by row % 8) */
        const sp_u32 row = base + s * SP_ASTAGE + (t * 16 + g) * 128 + 4 * tq;
        #pragma unroll
        for (int st = 0; st < 4; ++st) {
            sp_u32 hv[4] = {0u, 0u, 0u, 0u};   /* a fresh register each: no chain through the predicated loads */
${decode}
            const sp_u32 lo16 = (sp_u32)(((2 * st) ^ g) << 4), hi16 = (sp_u32)(((2 * st + 1) ^ g) << 4);
            sp_sts32(row + lo16, a[0]);
            sp_sts32(row + 1024 + lo16, a[1]);
            sp_sts32(row + hi16, a[2]);
            sp_sts32(row + 1024 + hi16, a[3]);
        }
    }
    sp_fence_proxy_async();   /* the stores, seen by the tensor cores' reads */
    __syncwarp();
    if (lane == 0) {
        sp_mbar_arrive(bars + 8 * (SP_S + 2 * s + (t >> 2)));
        sp_mbar_arrive(bars + 8 * (${free} + w));
    }
}

]]

-- The opening of both shared-memory decode kernels (this one and lib/slotfill_wdec.lua): the 1024-aligned base, the
-- thread's place, the image's header checked (lib/slotfill_wgmma.lua's prologue), the stages and the blocks' offsets.
local OPENING = [[
    extern __shared__ __align__(1024) unsigned char sp_smem_raw[];
    unsigned char *const sp_smem = sp_smem_raw + ((1024u - (sp_smem_u32(sp_smem_raw) & 1023u)) & 1023u);
    const sp_u32 base = sp_smem_u32(sp_smem);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
${prologue}    const int halves = 2 * nch;                            /* stages of 64 columns */
    const sp_u32 *offs = (const sp_u32 *)(W + 256);
    const unsigned char *blocks = W + 256 + ((((size_t)tiles * chunks + 1) * 4 + 255) & ~(size_t)255);
]]
-- Their device helpers, with wgmma's SS form of width n.
function M.head(n, f16)
  return large.head(wgmma.wgmma_fn(n, "", 0, "d[64 x " .. n .. "] += A(64 x 16, smem) * B(" .. n .. " x 16, smem)^T",
                                   f16 and "f16.f16" or "bf16.bf16"), f16)
end
function M.opening(f16)
  return text.fill(OPENING, {prologue = text.fill(large.PROLOGUE, {header = "h[5] == 128u && h[36] == 2u",
                                                                    chunks = "(K + 127) >> 7", dtype = f16 and 1 or 0})})
end

local KERNEL = [[
#define SP_NT 8
#define SP_THREADS 288
#define SP_BM 128
#define SP_BN ${bn}
#define SP_NB ${nb}
#define SP_S ${stages}
#define SP_SPLIT ${split}
#define SP_ASTAGE ${astage}
#define SP_XOFF ${xoff}
#define SP_XSTAGE ${xstage}
#define SP_WOFF ${woff}
#define SP_WSLOT ${wslot}
#define SP_BARS ${bars}
#define SP_YP ${ypitch}
#define SP_RP ${rpitch}
${head}
${item}extern "C" __global__ void __launch_bounds__(288, 1)
${name}(${params}, const __grid_constant__ sp_tmap sp_tmX)
{
${opening}    /* xfull[s] at + 8 s; warpgroup r's A rows afull[s][r] at + 8 (S + 2 s + r); empty[s] at + 8 (3 S + s); a chunk
     * slot's wfull[w] at + 8 (4 S + w), its release wfree[w] at + 8 (4 S + 2 + w) */
    const sp_u32 bars = base + SP_BARS;
    if (threadIdx.x == 0) {
        for (int s = 0; s < SP_S; ++s) {
            sp_mbar_init(bars + 8 * s, 1);                 /* the loader's expect_tx; the X box's bytes */
            sp_mbar_init(bars + 8 * (SP_S + 2 * s), 4);    /* the stage's 4 tiles of warpgroup 0 decoded */
            sp_mbar_init(bars + 8 * (SP_S + 2 * s + 1), 4);/* ... of warpgroup 1 */
            sp_mbar_init(bars + 8 * (3 * SP_S + s), SP_NT);/* every consumer warp: the stage's wgmma retired */
        }
        for (int w = 0; w < 2; ++w) {
            sp_mbar_init(bars + 8 * (4 * SP_S + w), 1);    /* the loader's expect_tx; the blocks' bytes */
            sp_mbar_init(bars + 8 * (4 * SP_S + 2 + w), 2 * SP_NT); /* the chunk's 16 items decoded */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    /* the decode's PRMT selectors (made by asm so that the compiler keeps them in registers) */
    sp_u32 t0, t1;
    asm volatile("mov.b32 %0, 0x32103232;\n" : "=r"(t0));
    asm volatile("mov.b32 %0, 0x54101032;\n" : "=r"(t1));
    if (warp == SP_NT) {
        /* the loader: chunk c's blocks, then the two X stages of chunk c - 1 */
        const int tile = tile0 + lane;
        const bool live = lane < SP_NT && tile < tiles;
${offsets}
        for (int c = 0; c <= nch; ++c) {
            if (c < nch) {
                const int w = c & 1;
                if (c >= 2) sp_mbar_wait(bars + 8 * (4 * SP_S + 2 + w), ((c >> 1) - 1) & 1);
${next_block}
                sp_u32 total = bytes;
                #pragma unroll
                for (int d = 16; d > 0; d >>= 1) total += __shfl_xor_sync(SP_FULL, total, d);
                const sp_u32 full = bars + 8 * (4 * SP_S + w);
                if (lane == 0) sp_mbar_expect_tx(full, total);
                __syncwarp();
                if (bytes) sp_bulk_load(base + SP_WOFF + w * SP_WSLOT + lane * SP_BMAX, blocks + (size_t)o0 * 16, bytes, full);
                o0 = o1;
                o1 = o2;
            }
            for (int j = 2 * c - 2; c > 0 && j < 2 * c; ++j) {
                const int s = j % SP_S;
                if (j >= SP_S) sp_mbar_wait(bars + 8 * (3 * SP_S + s), ((j / SP_S) - 1) & 1);
                if (lane == 0) {
                    sp_mbar_expect_tx(bars + 8 * s, SP_XSTAGE);
                    sp_tma_load_2d(base + SP_XOFF + s * SP_XSTAGE, &sp_tmX, (c0 + (j >> 1)) * 128 + (j & 1) * 64, n0,
                                   bars + 8 * s);
                }
            }
        }
    }
    if (warp >= SP_NT && SP_SPLIT == 1) return;
${acc}
    if (warp < SP_NT) {
        /* a consumer: stage j on the tensor cores, then its own tile of stage j + S - 1 decoded while they multiply (the
         * first S - 1 stages before) */
        const bool live = tile0 + warp < tiles;
        for (int j = 0; j < min(SP_S - 1, halves); ++j) sp_item(sp_smem, base, bars, j, warp, live, lane, t0, t1);
        const sp_u32 aw = base + (warp >> 2) * (SP_ASTAGE / 2);
        for (int j = 0; j < halves; ++j) {
            const int s = j % SP_S;
            const sp_u32 par = (j / SP_S) & 1;
            sp_mbar_wait(bars + 8 * s, par);
            sp_mbar_wait(bars + 8 * (SP_S + 2 * s + (warp >> 2)), par);
            if (j == 0 && warp >= 4) asm volatile("bar.sync 2, 256;\n" ::: "memory");
            const sp_u32 as = aw + s * SP_ASTAGE, xs = base + SP_XOFF + s * SP_XSTAGE;
            sp_wgmma_fence();
            #pragma unroll
            for (int q = 0; q < 4; ++q) sp_wgmma_m64n${bn}(acc, sp_wgmma_desc(as + 32 * q), sp_wgmma_desc(xs + 32 * q));
            sp_wgmma_commit();
            /* retired before the decode: ptxas serialises every wgmma of a stage that a decode runs beside (C7515);
             * the other warpgroup's wgmma keep the tensor cores busy meanwhile */
            sp_wgmma_wait<0>();
            if (j == 0 && warp < 4) asm volatile("bar.arrive 2, 256;\n" ::: "memory");
            if (lane == 0) sp_mbar_arrive(bars + 8 * (3 * SP_S + s));
            if (j + SP_S - 1 < halves) sp_item(sp_smem, base, bars, j + SP_S - 1, warp, live, lane, t0, t1);
        }
    }
${epilogue}
}
]]

function M.emit(c, name, params, f16)
  local l = M.layout(c)
  return text.fill(KERNEL, {
    bn = c.bn, nb = c.bn // 8, stages = c.stages, split = c.split, astage = M.ASTAGE,
    xoff = l.xoff, xstage = l.xstage, woff = l.woff, wslot = l.wslot, bars = l.bars, ypitch = l.ypitch,
    rpitch = l.rpitch, name = name, params = params, acc = large.ACC,
    head = M.head(c.bn, f16),
    item = M.item(2), opening = M.opening(f16), epilogue = large.epilogue(c),
    offsets = bitmap.block_offsets("        "),
    next_block = bitmap.block_next("                ", "c")})
end

return M
