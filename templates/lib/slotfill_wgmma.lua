-- slotfill-spmm's large-batch kernel (mainloop=wgmma, sm_90a): W decoded once per CTA and run against a whole
-- tile of bn tokens on wgmma, for both layouts the small-batch kernels read (bitmap and sp24), from the same image.
--
-- A CTA is `warps` / 4 consumer warpgroups (one 16-row tile of W per warp, 64 rows a warpgroup) and one producer
-- warp. The producer walks the CTA's K range a stage at a time: bitmap, 128 columns (a block's width) of the tiles'
-- blocks, through a byte ring as the small-batch kernel keeps it (a block's size follows its nonzeros); sp24, 64
-- columns, a fixed 1152-byte record a tile; both by bulk copies, and the X tile (bn tokens x the stage's columns,
-- 64-column boxes in the 128-byte swizzle wgmma reads) by the copy engine, all completing on the stage's mbarrier.
-- A consumer warp turns its tile's part into wgmma's register operand A (per warp the layout of mma.sync's A
-- fragment): bitmap, the small-batch kernel's decode (lib/slotfill_bitmap.lua), GROUP 16-column steps at a time
-- (their dependent chains interleave) issued as one group of m64nBNk16; sp24, the record's two k32 steps (16 bytes a
-- lane each, one metadata word a lane for both, sparsity selectors 0 and 1) straight into the sparse m64nBNk32, so
-- that 2:4 weights run at the sparse tensor cores' rate. B is the X tile in shared memory. One group stays in flight
-- while the next is decoded or loaded; a stage's X tile goes back to the producer once the next stage's first group
-- retired, and (bitmap) its ring space as soon as its blocks are decoded, so that a stage's blocks never wait for
-- space the one before holds until this one arrives. Output: the tile staged in shared memory and stored 16 bytes
-- at a time, or with split > 1 the cluster's partial tiles added through distributed shared memory.
-- Every thread checks the image's header against M, K and the layout first: an image that is not this kernel's
-- makes every output NaN and nothing past its header is read. K % 8 == 0 (the copy engine's rows); X 16-byte aligned.
local text = require("lib.text")
local common = require("lib.slotfill_common")
local bitmap = require("lib.slotfill_bitmap")
local wgmma = require("lib.wgmma")

local M = {}

M.REC = 1152       -- sp24: a tile's record of 64 columns (two k32 steps and their metadata)
M.GROUP = 4        -- bitmap: 16-column steps decoded ahead of each commit group (their decode chains interleave)

-- setmaxnreg's budgets by block size: {producer's warpgroup, consumers} after the dec and the inc. 384 threads cap a
-- thread at 168 registers (the accumulators and the decode need more); 544 would leave four consumer warpgroups ~96
-- (ptxas then serialises wgmma; 104 still does). An inc only takes what the CTA's own decs gave back (more waits
-- forever): checked here once for each.
local REGS = {[384] = {40, 232}, [640] = {24, 112}}
for threads, r in pairs(REGS) do
  local start = 65536 // threads // 8 * 8
  assert((start - r[1]) * 128 >= (r[2] - start) * (threads - 128), "setmaxnreg over budget")
end

-- Shared memory (bytes from a 1024-aligned base): the X stages, the W stages (bitmap: a ring and a guard its worst
-- reads stay inside; sp24: fixed records), the bitmap's per-slot block offsets, the mbarriers and the ring's books.
function M.layout(c)
  local l = {}
  l.nt = c.warps
  l.bm = 16 * c.warps
  -- two consumer warpgroups of 128 accumulators (bn 256), and sp24's four (warps 16) at bn 128: the producer a
  -- warpgroup of its own (one warp working), so that setmaxnreg moves registers from it to the consumers (REGS)
  l.threads = (c.warps == 8 and c.bn == 256) and 384 or (c.warps == 16 and c.bn == 128) and 640 or 32 * (c.warps + 1)
  l.regs = REGS[l.threads]
  l.box = c.bn * 128
  if c.decode == "bitmap" then   -- stages of 128 columns (a block's width): two X boxes
    l.xstage = 2 * l.box
    l.ring = c.ring * 1024
    l.need_max = l.nt * bitmap.BLOCK_MAX
    l.warea = l.ring + bitmap.BLOCK_MAX + 512
  else                           -- stages of krec x 64 columns (records): krec X boxes, krec records a tile
    l.xstage = c.krec * l.box
    l.wstage = l.nt * M.REC * c.krec
    l.warea = c.stages * l.wstage
  end
  l.xarea = c.stages * l.xstage
  l.slots = l.xarea + l.warea
  l.bars = (l.slots + c.stages * (l.nt + 1) * 4 + 7) // 8 * 8
  l.book = l.bars + 24 * c.stages
  l.total = 1024 + l.book + 4 * c.stages + 16
  l.ypitch = l.bm + 8                                 -- the output tile's rows (tokens), elements
  l.ystage = c.bn * l.ypitch * 2
  l.rpitch = c.bn + 1                                 -- split-K partial tile's rows (W rows), floats
  l.red = c.split > 1 and l.bm * l.rpitch * 4 or 0
  return l
end

-- Constraints of mainloop=wgmma (slotfill-spmm adds them to its own).
function M.check(c, gpu, p)
  if c.mainloop ~= "wgmma" then return true end
  if not gpu.wgmma then return false, "wgmma needs sm_90a" end
  if c.decode ~= "bitmap" and c.decode ~= "sp24" then return false, "the bitmap and sp24 layouts only" end
  if c.warps ~= 4 and c.warps ~= 8 and not (c.warps == 16 and c.decode == "sp24") then
    return false, "one or two consumer warpgroups (warps 4 or 8; sp24 also four, warps 16)"
  end
  -- two warpgroups at bn 128 with 4 records a stage measured wrong on the H200 (docs/journal/2026-12-04.md), every
  -- shape; the cause is not found, so the tiles' records a stage stay within what measured exact
  if c.warps // 4 * c.bn * c.krec > 512 then
    return false, "warpgroups x bn x krec <= 512 (more measured wrong)"
  end
  if c.warps == 16 and c.bn * c.krec > 128 then
    return false, "four consumer warpgroups take bn x krec <= 128 (their registers)"
  end
  if c.tpw ~= 1 or c.bn < 32 or c.stages > (c.decode == "sp24" and 8 or 4) then
    return false, "tpw 1, bn >= 32, stages 2 to 4 (sp24: to 8)"
  end
  if c.split > 4 then return false, "split up to 4" end
  local l = M.layout(c)
  if c.krec > 1 and l.threads == 384 then
    return false, "krec 1 with bn 256 on two warpgroups (more records a stage serialise wgmma: too few registers)"
  end
  if c.decode == "sp24" and c.ring ~= 36 then return false, "sp24 stages fixed records (ring at its default)" end
  if p and p.K % 8 ~= 0 then return false, "the copy engine reads X rows of a multiple of 16 bytes (K % 8 == 0)" end
  if c.decode == "bitmap" and l.need_max > l.ring then
    return false, string.format("the ring holds the largest chunk (%d > %d bytes)", l.need_max, l.ring)
  end
  if l.ystage > l.xarea + l.warea or l.red > l.xarea + l.warea then return false, "the output tile fits the stages' space" end
  if l.total > gpu.smem_per_block then return false, string.format("%d bytes > %d", l.total, gpu.smem_per_block) end
  return true
end

-- The deepest pipeline (stages 8, 6, 4, 3, 2) this configuration takes on this GPU and problem, or nil.
function M.deepest_stages(c, gpu, p)
  local t = {}
  for k, v in pairs(c) do t[k] = v end
  for _, s in ipairs({8, 6, 4, 3, 2}) do
    t.stages = s
    if M.check(t, gpu, p) then return s end
  end
end

-- d[64 x n] += A(64 x 16 (sparse: 64 x 32, 2:4), registers) * B(n x 16 (32), smem)^T: the register-source forms.
local function rs_fn(n, f16, sparse)
  local outs = {}
  for j = 0, n // 8 - 1 do
    for e = 0, 3 do outs[#outs + 1] = string.format('"+f"(d[%d][%d])', j, e) end
  end
  local regs, list = n // 2, {}
  for r = 0, regs - 1 do list[#list + 1] = "%" .. r end
  local ty = f16 and "f16.f16" or "bf16.bf16"
  local ins = sparse and string.format("wgmma.mma_async.sp.sync.aligned.m64n%dk32.f32.%s", n, ty)
              or string.format("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s", n, ty)
  local a = string.format("{%%%d, %%%d, %%%d, %%%d}", regs, regs + 1, regs + 2, regs + 3)
  -- operands: d, then a (4), the descriptor, [the metadata and the selector,] the scale-d flag
  local tail = sparse and string.format("%%%d, %%%d, %%%d, p, 1, 1, 0", regs + 4, regs + 5, regs + 6)
               or string.format("%%%d, p, 1, 1, 0", regs + 4)
  local pred = sparse and regs + 7 or regs + 5
  return text.fill([[
${tmpl}__device__ __forceinline__ void ${fname}(float (&d)[${nb}][4], const sp_u32 *a, unsigned long long db${earg})
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %${pred}, 0;\n"
                 "${ins} {${list}}, ${a}, ${tail};\n}\n"
                 : ${outs}
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)${ein}, "r"(1));
}
]], {tmpl = sparse and "template <int SEL> " or "", fname = sparse and "sp_wgmma_sp" or "sp_wgmma_rs", nb = n // 8,
     earg = sparse and ", sp_u32 e" or "", pred = pred, ins = ins, list = table.concat(list, ", "), a = a,
     tail = tail, outs = table.concat(outs, ", "),
     ein = sparse and ', "r"(e), "n"(SEL)' or ""})
end

-- The producer's stage fill: bitmap (the ring) and sp24 (fixed records); then both X boxes.
local FILL_BITMAP = [[
        int head = 0, oldest = 0;
        /* a lane's tile's block offsets, read one chunk ahead (offs holds tiles x chunks + 1 entries) */
        const int tile = tile0 + lane;
        const bool live = lane < SP_NT && tile < tiles;
${offsets}
        for (int it = 0; it < nch; ++it) {
            const int s = it % SP_S, c = c0 + it;
            if (it >= SP_S) sp_mbar_wait(bars + 8 * (SP_S + s), ((it / SP_S) - 1) & 1);   /* the slot's X tile */
${next_block}
${ring_alloc}
            head = pos + (int)need;
            if (lane == 0) book[s] = (sp_u32)pos;
            if (lane < SP_NT) slot_off[s * (SP_NT + 1) + lane] = SP_WOFF + (sp_u32)pos + pre - bytes;
            __syncwarp();
            const sp_u32 full = bars + 8 * s;
            if (lane == 0) sp_mbar_expect_tx(full, need + SP_XSTAGE);
            __syncwarp();
            if (bytes) sp_bulk_load(base + SP_WOFF + pos + pre - bytes, blocks + (size_t)o0 * 16, bytes, full);
            o0 = o1;
            o1 = o2;
${xload}
        }]]

local FILL_SP24 = [[
        const int tile = tile0 + lane;
        const bool live = lane < SP_NT && tile < tiles;
        for (int it = 0; it < nch; ++it) {
            const int s = it % SP_S, c = c0 + it;
            if (it >= SP_S) sp_mbar_wait(bars + 8 * (SP_S + s), ((it / SP_S) - 1) & 1);
            const sp_u32 full = bars + 8 * s;
            /* the CTA's tiles inside M, a record each, and the X box */
            if (lane == 0) sp_mbar_expect_tx(full, SP_XSTAGE + (sp_u32)min(tiles - tile0, SP_NT) * SP_REC);
            __syncwarp();
            if (live) sp_bulk_load(base + SP_WOFF + s * SP_WSTAGE + lane * SP_REC, W + 256 + ((size_t)tile * chunks + c) * SP_REC,
                                   SP_REC, full);
            /* the X tile: bn tokens x 64 columns, zero past N and K */
            if (lane == 0) sp_tma_load_2d(base + s * SP_XSTAGE, &sp_tmX, c * 64, n0, full);
        }]]

-- krec > 1 (a pipeline stage of krec records): a tile's records are contiguous in the image, so one bulk copy each;
-- fewer records at K's end, and the X boxes past K zero (kept apart from FILL_SP24 so that shipped krec = 1
-- kernels stay as measured).
local FILL_SP24_KR = [[
        const int tile = tile0 + lane;
        const bool live = lane < SP_NT && tile < tiles;
        const int recs = (K + 63) >> 6;
        for (int it = 0; it < nch; ++it) {
            const int s = it % SP_S, r0 = (c0 + it) * SP_KR, nrec = min(SP_KR, recs - r0);
            if (it >= SP_S) sp_mbar_wait(bars + 8 * (SP_S + s), ((it / SP_S) - 1) & 1);
            const sp_u32 full = bars + 8 * s;
            if (lane == 0) sp_mbar_expect_tx(full, SP_XSTAGE + (sp_u32)(min(tiles - tile0, SP_NT) * nrec) * SP_REC);
            __syncwarp();
            if (live) sp_bulk_load(base + SP_WOFF + s * SP_WSTAGE + lane * (SP_KR * SP_REC),
                                   W + 256 + ((size_t)tile * recs + r0) * SP_REC, (sp_u32)nrec * SP_REC, full);
            if (lane == 0)
                for (int q = 0; q < SP_KR; ++q)
                    sp_tma_load_2d(base + s * SP_XSTAGE + q * SP_BOX, &sp_tmX, (r0 + q) * 64, n0, full);
        }]]

local XLOAD = [[
            /* the X tile: bn tokens x 128 columns in two 64-column boxes, zero past N and K */
            if (lane == 0) {
                const sp_u32 xs = base + s * SP_XSTAGE;
                sp_tma_load_2d(xs, &sp_tmX, c * 128, n0, full);
                sp_tma_load_2d(xs + SP_BOX, &sp_tmX, c * 128 + 64, n0, full);
            }]]

local RING_DECL = [[
    const sp_u32 *offs = (const sp_u32 *)(W + 256);
    const unsigned char *blocks = W + 256 + ((((size_t)tiles * chunks + 1) * 4 + 255) & ~(size_t)255);
    sp_u32 *slot_off = (sp_u32 *)(sp_smem + SP_SLOTS);     /* [S][NT + 1]: the tiles' blocks */
    sp_u32 *book = (sp_u32 *)(sp_smem + SP_BOOK);          /* [S]: ring start of a slot's chunk */]]

local DECODE_DECL = [[
        /* the decode's PRMT selectors (made by asm so that the compiler keeps them in registers) */
        sp_u32 t0, t1;
        asm volatile("mov.b32 %0, 0x32103232;\n" : "=r"(t0));
        asm volatile("mov.b32 %0, 0x54101032;\n" : "=r"(t1));
        sp_u32 hi[SP_G][4];
        #pragma unroll
        for (int q = 0; q < SP_G; ++q)
            #pragma unroll
            for (int i = 0; i < 4; ++i) hi[q][i] = 0u;]]

-- A consumer warp's chunk: bitmap decodes its tile's block step by step; sp24 reads its records.
local CHUNK_BITMAP = [[
        uint2 mm[1];
        uint4 hb[1];
        sp_u32 ex0[1], ex1[1], vb[1];
        if (live) {
            const int t = 0;
${prep}
        }
        #pragma unroll
        for (int grp = 0; grp < 8 / SP_G; ++grp) {
            /* SP_G steps decoded (their chains interleave), then their wgmma as one group */
            sp_u32 ag[SP_G][4];
            #pragma unroll
            for (int q = 0; q < SP_G; ++q) {
                const int st = grp * SP_G + q;
                #pragma unroll
                for (int i = 0; i < 4; ++i) ag[q][i] = 0u;
                if (live) {
                    const int t = 0;
${decode}
                    #pragma unroll
                    for (int i = 0; i < 4; ++i) ag[q][i] = a[i];
                }
            }
            if (grp == 8 / SP_G - 1) {   /* the blocks decoded: their ring space goes back before the wgmma retire */
                __syncwarp();
                if (lane == 0) sp_mbar_arrive(bars + 8 * (2 * SP_S + s));
            }
            sp_wgmma_fence();
            #pragma unroll
            for (int q = 0; q < SP_G; ++q) {
                const int st = grp * SP_G + q;
                sp_wgmma_rs(acc, ag[q], sp_wgmma_desc(xs + (st >> 2) * SP_BOX + (st & 3) * 32));
            }
            sp_wgmma_commit();
            sp_wgmma_wait<1>();
            if (grp == 0 && it > 0 && lane == 0) sp_mbar_arrive(bars + 8 * (SP_S + (it - 1) % SP_S));
        }]]

local CHUNK_SP24 = [[
        /* the record's two k32 steps (one metadata word a lane serves both: sparsity selectors 0 and 1) as one group;
         * fresh registers each stage (the last stage's group reads its own); a tile past M: zeros, valid metadata */
        const sp_u32 ws = base + SP_WOFF + s * SP_WSTAGE + warp * SP_REC;
        sp_u32 a0[4], a1[4];
        sp_lds128(ws + lane * 16, a0);
        sp_lds128(ws + 512 + lane * 16, a1);
        sp_u32 e = sp_lds32(ws + 1024 + lane * 4);
        if (!live) {
            a0[0] = a0[1] = a0[2] = a0[3] = a1[0] = a1[1] = a1[2] = a1[3] = 0u;
            e = 0x44444444u;
        }
        sp_wgmma_fence();
        sp_wgmma_sp<0>(acc, a0, sp_wgmma_desc(xs), e);
        sp_wgmma_sp<1>(acc, a1, sp_wgmma_desc(xs + 64), e);
        sp_wgmma_commit();
        sp_wgmma_wait<1>();
        if (it > 0 && lane == 0) sp_mbar_arrive(bars + 8 * (SP_S + (it - 1) % SP_S));]]

-- krec > 1: the stage's records one after another in one group (a record past K's end or a tile past M: zeros,
-- valid metadata).
local CHUNK_SP24_KR = [[
        const sp_u32 ws = base + SP_WOFF + s * SP_WSTAGE + warp * (SP_KR * SP_REC);
        const int nrec = min(SP_KR, ((K + 63) >> 6) - (c0 + it) * SP_KR);
        sp_u32 a0[SP_KR][4], a1[SP_KR][4], e[SP_KR];
        #pragma unroll
        for (int q = 0; q < SP_KR; ++q) {
            sp_lds128(ws + q * SP_REC + lane * 16, a0[q]);
            sp_lds128(ws + q * SP_REC + 512 + lane * 16, a1[q]);
            e[q] = sp_lds32(ws + q * SP_REC + 1024 + lane * 4);
            if (!live || q >= nrec) {
                a0[q][0] = a0[q][1] = a0[q][2] = a0[q][3] = a1[q][0] = a1[q][1] = a1[q][2] = a1[q][3] = 0u;
                e[q] = 0x44444444u;
            }
        }
        sp_wgmma_fence();
        #pragma unroll
        for (int q = 0; q < SP_KR; ++q) {
            sp_wgmma_sp<0>(acc, a0[q], sp_wgmma_desc(xs + q * SP_BOX), e[q]);
            sp_wgmma_sp<1>(acc, a1[q], sp_wgmma_desc(xs + q * SP_BOX + 64), e[q]);
        }
        sp_wgmma_commit();
        sp_wgmma_wait<1>();
        if (it > 0 && lane == 0) sp_mbar_arrive(bars + 8 * (SP_S + (it - 1) % SP_S));]]

-- Both large-batch kernels (this one and lib/slotfill_wsmem.lua): the image's header checked, the CTA's tiles in the
-- grouped order, its share of the K range (header: the layout's fields; chunks: the count of its stages).
M.PROLOGUE = [[
    /* the image must be this kernel's (magic, version, bf16/fp16, the layout, M, K): else nothing past its header is
     * read and the outputs are NaN */
    const sp_u32 *h = (const sp_u32 *)W;
    const bool ok = h[0] == 0x55545053u && h[1] == 0x4653454eu && h[2] >= 2u && h[4] == ${dtype}u && ${header} &&
                    h[8] == (sp_u32)M && h[9] == 0u && h[10] == (sp_u32)K && h[11] == 0u;
    const int tiles = (M + 15) >> 4, chunks = ${chunks};
    /* grouped order: the token tiles in groups whose X rows take about 16 MB, the W tiles walked inside a group, so
     * that the CTAs running at once share a few X slabs and W tiles in L2 (at N = 16384 in launch order they
     * re-read X from HBM for every W tile: 0.70x) */
    const int tiles_n = (int)gridDim.x, tiles_m = (int)gridDim.y;
    const int gn = (int)max(1LL, min((long long)tiles_n, (16LL << 20) / ((long long)SP_BN * K * 2)));
    const int id = (int)(blockIdx.y * gridDim.x + blockIdx.x), in_group = gn * tiles_m, grp = id / in_group;
    const int first = grp * gn, width = min(gn, tiles_n - first), r = id - grp * in_group;
    const int n0 = (first + r % width) * SP_BN, m0 = (r / width) * SP_BM, tile0 = m0 >> 4;
    /* this CTA's share of the stages (bitmap: 128 columns, sp24: 64) */
    const int per = (chunks + SP_SPLIT - 1) / SP_SPLIT, c0 = blockIdx.z * per;
    const int nch = ok ? max(0, min(chunks, c0 + per) - c0) : 0;
]]

local EPI_ONE = [[
    /* the tile through shared memory (the X stages, every chunk consumed), then 16-byte stores along M */
    asm volatile("bar.sync 1, %0;\n" :: "n"(SP_NT * 32) : "memory");
    unsigned short *ys = (unsigned short *)sp_smem;          /* [BN tokens][BM + 8] */
    #pragma unroll
    for (int j = 0; j < SP_NB; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e)
            ys[(j * 8 + 2 * tq + (e & 1)) * SP_YP + warp * 16 + g + 8 * (e >> 1)] =
                ok ? sp_out16(acc[j][e]) : (unsigned short)0xffffu;  /* NaN in bf16 and fp16 */
    asm volatile("bar.sync 1, %0;\n" :: "n"(SP_NT * 32) : "memory");
    const int rows = min(SP_BN, N - n0), mrows = min(SP_BM, M - m0);
    if ((M & 7) == 0 && ((unsigned long long)Y & 15ull) == 0) {
        for (int i = threadIdx.x; i < rows * (SP_BM / 8); i += SP_NT * 32) {
            const int n = i / (SP_BM / 8), m = (i % (SP_BM / 8)) * 8;
            if (m < mrows) *(uint4 *)(Y + (size_t)(n0 + n) * M + m0 + m) = *(const uint4 *)(ys + n * SP_YP + m);
        }
    } else {
        for (int i = threadIdx.x; i < rows * SP_BM; i += SP_NT * 32) {
            const int n = i / SP_BM, m = i % SP_BM;
            if (m < mrows) Y[(size_t)(n0 + n) * M + m0 + m] = ys[n * SP_YP + m];
        }
    }]]

local EPI_SPLIT = [[
    /* split-K: the cluster's partial tiles added through distributed shared memory; CTA r of the cluster adds and
     * writes rows [r BM / SPLIT, (r + 1) BM / SPLIT) of the tile */
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    float *red = (float *)sp_smem;                            /* [BM][BN + 1] */
    if (warp < SP_NT) {
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                red[(warp * 16 + g + 8 * (e >> 1)) * SP_RP + j * 8 + 2 * tq + (e & 1)] = acc[j][e];
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    sp_u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const sp_u32 rbase = sp_smem_u32(red);
    const int per_rank = SP_BM / SP_SPLIT, rows = min(SP_BN, N - n0);
    for (int i = threadIdx.x; i < per_rank * rows; i += ${red_threads}) {
        const int r = (int)rank * per_rank + i % per_rank, n = i / per_rank;
        const sp_u32 at = rbase + (sp_u32)(r * SP_RP + n) * 4u;
${cluster_sum}
        if (m0 + r < M) Y[(size_t)(n0 + n) * M + m0 + r] = ok ? sp_out16(sum) : (unsigned short)0xffffu;
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");]]

-- With setmaxnreg and split > 1: the producer's warpgroup takes its part in the split epilogue's three cluster
-- barriers and leaves the sums to the consumers (it keeps its few registers).
local PRODUCER_CLUSTER_EXIT = [[
        #pragma unroll 1
        for (int b = 0; b < 3; ++b)
            asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
        return;]]

-- Both large-batch kernels: a consumer's accumulators (wgmma's m64 x bn fragment), zeroed.
M.ACC = [[
    float acc[SP_NB][4];
    #pragma unroll
    for (int j = 0; j < SP_NB; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;]]

-- Both large-batch kernels: the block's sizes, and the device helpers (mma_fn: the kernel's wgmma form).
function M.head(mma_fn, f16)
  return text.fill([[
#define SP_HDR ${hdr}
#define SP_MASKB ${masks}
#define SP_BMAX ${bmax}
#define SP_FULL 0xffffffffu

${device}
${step_counts}
${sync}
${tmap}
${tma_load}
${mma_fn}
${out16}]], {hdr = bitmap.HEADER, masks = bitmap.MASKS, bmax = bitmap.BLOCK_MAX, device = bitmap.DEVICE,
              step_counts = bitmap.STEP_COUNTS, sync = wgmma.SYNC, tmap = wgmma.TMAP, tma_load = wgmma.TMA_LOAD,
              mma_fn = mma_fn, out16 = common.out16(f16)})
end

-- With setmaxnreg the producer's warpgroup leaves by a plain return: behind the constant split test ptxas ignores
-- its 40 registers (C7507) and then serialises wgmma for want of registers (C7512; the bitmap kernel at split 1 is
-- not, and keeps the text its results were measured with). The wsrc=smem and dec kernels keep their own.
function M.producer_exits(c)
  return c.wsrc ~= "smem" and c.wsrc ~= "dec" and M.layout(c).regs ~= nil and (c.decode == "sp24" or c.split > 1)
end

-- The output tile: staged in shared memory and stored 16 bytes at a time, or the cluster's partial tiles added.
function M.epilogue(c)
  return c.split == 1 and "    if (warp >= SP_NT) return;\n" .. EPI_ONE
         or text.fill(EPI_SPLIT, {cluster_sum = (bitmap.CLUSTER_SUM:gsub("base %+ %(sp_u32%)i %* 4u", "at")),
                                  red_threads = M.producer_exits(c) and "SP_NT * 32" or "SP_THREADS"})
end

function M.emit(c, name, params, f16)
  local l = M.layout(c)
  local sp24 = c.decode == "sp24"
  local kr = c.krec
  local header = sp24
    and "h[5] == 64u && h[36] == 3u && (h[22] | h[23] | h[24] | h[25]) == 0u"
    or "h[5] == 128u && h[36] == 2u"
  return text.fill([[
#define SP_NT ${nt}
#define SP_THREADS ${threads}
#define SP_TPW 1
#define SP_BM ${bm}
#define SP_BN ${bn}
#define SP_NB ${nb}
#define SP_S ${stages}
#define SP_SPLIT ${split}
#define SP_BOX ${box}
#define SP_XSTAGE ${xstage}
#define SP_WOFF ${woff}
#define SP_SLOTS ${slots}
#define SP_BARS ${bars}
#define SP_BOOK ${book}
#define SP_YP ${ypitch}
#define SP_RP ${rpitch}
#define SP_RING ${ring}
#define SP_WSTAGE ${wstage}
#define SP_REC ${rec}
#define SP_G ${group}${kr_def}
${head}
__device__ __forceinline__ void sp_lds128(sp_u32 addr, sp_u32 *r)
{
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ sp_u32 sp_lds32(sp_u32 addr)
{
    sp_u32 v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}

extern "C" __global__ void __launch_bounds__(${threads}, 1)
${name}(${params}, const __grid_constant__ sp_tmap sp_tmX)
{
    extern __shared__ __align__(1024) unsigned char sp_smem_raw[];
    unsigned char *const sp_smem = sp_smem_raw + ((1024u - (sp_smem_u32(sp_smem_raw) & 1023u)) & 1023u);
    const sp_u32 base = sp_smem_u32(sp_smem);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
${prologue}    const sp_u32 bars = base + SP_BARS;                    /* full[s], empty[s] at + 8 (S + s), decoded[s] at + 8 (2 S + s) */
${ring_decl}
    if (threadIdx.x == 0) {
        for (int s = 0; s < SP_S; ++s) {
            sp_mbar_init(bars + 8 * s, 1);                 /* the producer's expect_tx; the copies' bytes */
            sp_mbar_init(bars + 8 * (SP_S + s), SP_NT);    /* every consumer warp: the stage's wgmma retired */
            sp_mbar_init(bars + 8 * (2 * SP_S + s), SP_NT);/* bitmap: the stage's blocks decoded */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp >= SP_NT) {
${dec}
        if (warp == SP_NT) {
${fill}
        }
${exit}
    }${inc}
${acc}
    if (warp < SP_NT) {
        const int tile = tile0 + warp;
        const bool live = tile < tiles;
${decode_decl}
        for (int it = 0; it < nch; ++it) {
            const int s = it % SP_S;
            sp_mbar_wait(bars + 8 * s, (it / SP_S) & 1);
            const sp_u32 xs = base + s * SP_XSTAGE;
${chunk}
        }
        sp_wgmma_wait<0>();
        if (nch > 0 && lane == 0) sp_mbar_arrive(bars + 8 * (SP_S + (nch - 1) % SP_S));
    }
${epilogue}
}
]], {nt = l.nt, bm = l.bm, bn = c.bn, nb = c.bn // 8, stages = c.stages, split = c.split, box = l.box,
     xstage = l.xstage, woff = l.xarea, slots = l.slots, bars = l.bars, book = l.book, ypitch = l.ypitch,
     rpitch = l.rpitch, ring = l.ring or 0, wstage = l.wstage or 0, rec = M.REC, group = M.GROUP,
     head = M.head(rs_fn(c.bn, f16, sp24), f16), acc = M.ACC, threads = l.threads, name = name, params = params, dtype = f16 and 1 or 0,
     ring_decl = sp24 and "" or RING_DECL, decode_decl = sp24 and "" or DECODE_DECL,
     exit = not M.producer_exits(c) and "        if (SP_SPLIT == 1) return;" or c.split == 1 and "        return;"
            or PRODUCER_CLUSTER_EXIT,
     dec = l.regs and string.format('        asm volatile("setmaxnreg.dec.sync.aligned.u32 %d;\\n" ::: "memory");',
                                    l.regs[1]) or "",
     inc = l.regs and string.format(' else {\n        asm volatile("setmaxnreg.inc.sync.aligned.u32 %d;\\n" ::: "memory");\n    }',
                                    l.regs[2]) or "",
     kr_def = kr > 1 and "\n#define SP_KR " .. kr or "",
     fill = text.fill(sp24 and (kr > 1 and FILL_SP24_KR or FILL_SP24) or FILL_BITMAP,
                      {xload = XLOAD, offsets = bitmap.block_offsets("        "),
                       next_block = bitmap.block_next("            ", "it"), ring_alloc = bitmap.ring_alloc("const sp_u32 need = __shfl_sync(SP_FULL, pre, 31);",
                                                                     "2 * ", "   /* its blocks decoded */")}),
     -- each step of a group keeps its own high halves (the decode's predicated loads read-modify-write them: one
     -- register set would chain the group's steps one after another)
     chunk = sp24 and (kr > 1 and CHUNK_SP24_KR or CHUNK_SP24) or text.fill(CHUNK_BITMAP, {prep = bitmap.PREP,
                                                            decode = (bitmap.DECODE:gsub("hi%[t%]%[i%]", "hi[q][i]"))}),
     prologue = text.fill(M.PROLOGUE, {header = header, chunks = sp24 and (kr > 1 and "(((K + 63) >> 6) + SP_KR - 1) / SP_KR"
                                                                        or "(K + 63) >> 6") or "(K + 127) >> 7",
                                       dtype = f16 and 1 or 0}),
     epilogue = M.epilogue(c)})
end

return M
