-- slotfill-spmm's kernel for the bitmap layout (runtime/sp_slotfill.h): W streamed block by block
-- through a byte ring in shared memory, each warp decoding its 16-row tiles' bitmaps straight into
-- mma.m16n8k16 A fragments, X tiles beside them, fp32 accumulators, split-K reduced through a
-- cluster's distributed shared memory.
--
-- A CTA is `warps` consumer warps of `tpw` tiles each plus one producer warp. The producer walks the
-- CTA's K range 128 columns (a chunk) at a time: for each chunk it takes one contiguous allocation in
-- the ring (`ring` KB; a chunk's size follows its nonzeros) for the tiles' blocks (bulk copies,
-- cp.async.bulk, one per tile, completing on the chunk's mbarrier) and the X tile (cp.async, zero past
-- N and K), waiting for the consumers to release the oldest chunks when the ring or the `stages`
-- mbarrier slots are full. Per chunk a consumer warp finds each lane's first value of every step with
-- one warp prefix sum (byte-packed, eight steps in two words), then per 16-column step decodes four
-- registers per lane: the two bits of a register select its values' places (a PRMT selector from an
-- 8-byte table), the values are read with 16-bit shared loads (the second only for a full register).
-- Costs (sm_90a SASS): ~40 integer instructions and 8 shared loads per lane and step of 16 x 16 (~288
-- bytes of W at 50 %): the issue rate of the integer units and the shared-memory wavefronts bound it,
-- not HBM. Before anything else the producer checks the image's header against M, K and the layout:
-- an image that is not this kernel's makes every output NaN and nothing past the header is read.
local text = require("lib.text")
local common = require("lib.slotfill_common")

local M = {}

-- The split-K epilogues' inner loop (both Slot-Filling kernels): thread's element i summed over the cluster's
-- CTAs, read from their shared memory at base + 4 i (mapa + ld.shared::cluster) into `sum`.
M.CLUSTER_SUM = [[
        float sum = 0.0f;
        #pragma unroll
        for (int q = 0; q < SP_SPLIT; ++q) {
            sp_u32 remote;
            float v;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(base + (sp_u32)i * 4u), "r"(q));
            asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
            sum += v;
        }
]]

M.HEADER, M.MASKS = 16, 256
M.BLOCK_MAX = M.HEADER + M.MASKS + 2 * 16 * 128   -- a dense block
M.XROW = 128 + 8                                    -- X tile row in shared memory (elements)

-- Shared memory: the ring (plus a guard a block's worst reads stay inside), then per slot the tiles'
-- and the X tile's ring offsets, then the mbarriers and the producer's bookkeeping.
function M.layout(c)
  local l = {}
  l.nt = c.warps * c.tpw
  l.ring = c.ring * 1024
  l.guard = M.BLOCK_MAX + 512
  l.xbytes = c.bn * M.XROW * 2
  l.need_max = l.nt * M.BLOCK_MAX + l.xbytes       -- the largest chunk: every block dense
  l.slots = l.ring + l.guard
  l.bars = l.slots + c.stages * (l.nt + 1) * 4
  l.bars = (l.bars + 7) // 8 * 8
  l.book = l.bars + 16 * c.stages
  l.total = l.book + 4 * c.stages + 16
  l.red = l.nt * 16 * c.bn * 4                      -- split-K partial tiles (in the ring)
  return l
end

-- Pieces of the kernel text the large-batch kernel (lib/slotfill_wgmma.lua) shares: the barrier, copy and
-- shared-load helpers; the per-step value counts; a chunk's per-lane scan (PREP: tile t's block at slot s);
-- and one 16 x 16 step's decode into the mma A fragment a[4] (DECODE: step st of tile t).
M.DEVICE = cuda_file("slotfill_bitmap_device")
M.STEP_COUNTS = cuda_file("slotfill_step_counts")
M.PREP = [[
                const sp_u32 bo = slot_off[s * (SP_NT + 1) + warp * SP_TPW + t];
                hb[t] = *(const uint4 *)(sp_smem + bo);
                mm[t] = *(const uint2 *)(sp_smem + bo + SP_HDR + 8 * lane);
                vb[t] = base + bo + SP_HDR + SP_MASKB;
                /* each lane's first value of every step: an exclusive scan over the lanes, bytes */
                const sp_u32 ca = sp_step_counts(mm[t].x), cb = sp_step_counts(mm[t].y);
                sp_u32 ea = __shfl_up_sync(SP_FULL, ca, 1), eb = __shfl_up_sync(SP_FULL, cb, 1);
                if (lane == 0) ea = eb = 0;
                #pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const sp_u32 va = __shfl_up_sync(SP_FULL, ea, d), vv = __shfl_up_sync(SP_FULL, eb, d);
                    if (lane >= d) { ea += va; eb += vv; }
                }
                ex0[t] = ea;
                ex1[t] = eb;]]
M.DECODE = [[
                    const sp_u32 mw = st < 4 ? mm[t].x : mm[t].y, ew = st < 4 ? ex0[t] : ex1[t];
                    const int sh = st & 3;
                    const sp_u32 y = (mw >> (2 * sh)) & 0x03030303u;        /* byte i: register i's two bits */
                    const sp_u32 idx = y * 0x22u + 0x10101010u;             /* nibbles 2b, 2b + 1: its selector in t0:t1 */
                    const sp_u32 h1 = (y >> 1) & 0x01010101u;
                    const sp_u32 f = y & h1;                                /* bit 8 i: register i holds two values */
                    const sp_u32 P2 = (y - h1) * 0x02020200u;               /* byte i: 2 x the lane's values before register i */
                    const sp_u32 hw = st < 2 ? hb[t].x : st < 4 ? hb[t].y : st < 6 ? hb[t].z : hb[t].w;
                    /* the step's values (offsets < 4096 in a valid block; masked, a damaged block reads garbage inside the ring's guard, never past it) */
                    const sp_u32 A = vb[t] + (((st & 1) ? hw >> 16 : hw) & 0xfffu) + 2 * sp_prmt(ew, 0u, 0x4440u + sh);
                    const sp_u32 Ai[4] = {A, A + sp_prmt(P2, 0u, 0x4441u), A + sp_prmt(P2, 0u, 0x4442u), A + (P2 >> 24)};
                    const sp_u32 sel01 = sp_prmt(t0, t1, idx), sel23 = sp_prmt(t0, t1, idx >> 16);
                    const sp_u32 sel[4] = {sel01, sel01 >> 16, sel23, sel23 >> 16};
                    sp_u32 a[4];
                    #pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const sp_u32 lo = sp_lds16(Ai[i]);
                        sp_lds16_if(hi[t][i], Ai[i] + 2, f & (1u << (8 * i)));  /* hi of a single is never selected */
                        a[i] = sp_prmt(lo, hi[t][i], sel[i]);
                    }]]

-- The producers' read of a tile's block offsets (every bitmap kernel, `ind` its indentation): one chunk ahead, so
-- that no global round trip stands between a chunk's copy and the next (expects tile, live, offs, chunks, c0, nch);
-- then at chunk `it`, the one after next read and this block's bytes (0 where the offsets are damaged).
function M.block_offsets(ind)
  return ind .. "const sp_u32 *toffs = offs + (size_t)(live ? tile : 0) * chunks + c0;\n" ..
         ind .. "sp_u32 o0 = live && nch > 0 ? toffs[0] : 0u, o1 = live && nch > 0 ? toffs[1] : 0u;"
end
function M.block_next(ind, it)
  return text.fill("${i}const sp_u32 o2 = live && ${it} + 1 < nch ? toffs[${it} + 2] : 0u;\n" ..
                   "${i}const sp_u32 bytes = live && o1 >= o0 && (o1 - o0) * 16u <= SP_BMAX ? (o1 - o0) * 16u : 0u; " ..
                   "/* a damaged image copies nothing */", {i = ind, it = it})
end

-- The producer's place in the ring for a chunk's blocks (both bitmap kernels): each lane's block size scanned over the
-- lanes, `need` the chunk's bytes (its C declaration), a start that no chunk in flight overlaps, waiting for the
-- oldest chunks' release (their barrier at bars + 8 (released + slot)).
function M.ring_alloc(need, released, why)
  return text.fill([[
            sp_u32 pre = bytes;                            /* inclusive scan of the blocks' sizes */
            #pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const sp_u32 v = __shfl_up_sync(SP_FULL, pre, d);
                if (lane >= d) pre += v;
            }
            ${need}
            /* a place in the ring no chunk in flight holds, and a free slot (every lane agrees) */
            const int pos = head + (int)need <= SP_RING ? head : 0;
            while (it - oldest > 0) {
                const int t = (int)book[oldest % SP_S], L = (head - t + SP_RING) % SP_RING;
                const bool overlap = L == 0 || (pos - t + SP_RING) % SP_RING < L || (t - pos + SP_RING) % SP_RING < (int)need;
                if (!overlap && it - oldest < SP_S) break;
                sp_mbar_wait(bars + 8 * (${released}SP_S + oldest % SP_S), (oldest / SP_S) & 1);${why}
                ++oldest;
            }]], {need = need, released = released, why = why})
end

function M.emit(c, name, params, f16)
  local l = M.layout(c)
  local mma = "mma.sync.aligned.m16n8k16.row.col.f32." .. (f16 and "f16.f16" or "bf16.bf16") .. ".f32"
  return text.fill([[
#define SP_NT ${nt}
#define SP_TPW ${tpw}
#define SP_WARPS ${warps}
#define SP_BN ${bn}
#define SP_NB ${nb}
#define SP_S ${stages}
#define SP_SPLIT ${split}
#define SP_RING ${ring}
#define SP_XROW ${xrow}
#define SP_XB ${xbytes}
#define SP_SLOTS ${slots}
#define SP_BARS ${bars}
#define SP_BOOK ${book}
#define SP_HDR ${hdr}
#define SP_MASKB ${masks}
#define SP_BMAX ${bmax}
#define SP_FULL 0xffffffffu

${device}
__device__ __forceinline__ void sp_ldsm(sp_u32 addr, sp_u32 *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void sp_ldsm2(sp_u32 addr, sp_u32 *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void sp_mma(float *d, const sp_u32 *a, sp_u32 b0, sp_u32 b1)
{
    asm volatile("${mma} {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
${out16}
${step_counts}

extern "C" __global__ void __launch_bounds__(${threads})
${name}(${params})
{
    extern __shared__ __align__(128) unsigned char sp_smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int tiles = (M + 15) >> 4, chunks = (K + 127) >> 7;
    const sp_u32 *offs = (const sp_u32 *)(W + 256);
    const unsigned char *blocks = W + 256 + ((((size_t)tiles * chunks + 1) * 4 + 255) & ~(size_t)255);
    const int tile0 = blockIdx.x * SP_NT, n0 = blockIdx.y * SP_BN;
    const int per = (chunks + SP_SPLIT - 1) / SP_SPLIT, c0 = blockIdx.z * per, nch = max(0, min(chunks, c0 + per) - c0);
    const sp_u32 base = sp_smem_u32(sp_smem);
    sp_u32 *slot_off = (sp_u32 *)(sp_smem + SP_SLOTS);     /* [S][NT + 1]: the tiles' blocks, then X */
    const sp_u32 bars = base + SP_BARS;                    /* full[s] at + 8 s, empty[s] at + 8 (S + s) */
    sp_u32 *book = (sp_u32 *)(sp_smem + SP_BOOK);          /* [S]: ring start of a slot's chunk; [S]: the header's verdict */
    if (threadIdx.x == 0) {
        for (int s = 0; s < SP_S; ++s) {
            sp_mbar_init(bars + 8 * s, 33);                /* the producer's expect_tx and its 32 lanes' copies */
            sp_mbar_init(bars + 8 * (SP_S + s), SP_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == SP_WARPS) {
        /* the producer. The image must be this kernel's (magic, version, bf16/fp16, window 128, the
         * bitmap layout, M, K): else nothing past its header is read and the outputs are NaN. */
        const sp_u32 *h = (const sp_u32 *)W;
        const bool ok = h[0] == 0x55545053u && h[1] == 0x4653454eu && h[2] >= 2u && h[4] == ${dtype}u && h[5] == 128u &&
                        h[36] == 2u && h[8] == (sp_u32)M && h[9] == 0u && h[10] == (sp_u32)K && h[11] == 0u;
        if (lane == 0) book[SP_S] = ok;
        const bool xvec = (K % 8 == 0) && (((unsigned long long)X & 15ull) == 0);
        int head = 0, oldest = 0;
        /* a lane's tile's block offsets, read one chunk ahead so that no global round trip stands
         * between a chunk's ring space and its bulk copy (offs holds tiles x chunks + 1 entries) */
        const int tile = tile0 + lane;
        const bool live = ok && lane < SP_NT && tile < tiles;
${offsets}
        for (int it = 0; it < nch; ++it) {
            const int s = it % SP_S, c = c0 + it;
${next_block}
${ring_alloc}
            head = pos + (int)need;
            if (lane == 0) book[s] = (sp_u32)pos;
            if (lane < SP_NT) slot_off[s * (SP_NT + 1) + lane] = (sp_u32)pos + pre - bytes;
            if (lane == 0) slot_off[s * (SP_NT + 1) + SP_NT] = (sp_u32)pos + wbytes;
            __syncwarp();
            const sp_u32 full = bars + 8 * s;
            if (lane == 0) sp_mbar_expect_tx(full, wbytes);
            __syncwarp();
            if (bytes) sp_bulk_load(base + pos + pre - bytes, blocks + (size_t)o0 * 16, bytes, full);
            o0 = o1;
            o1 = o2;
            /* the X tile: bn rows of 128 columns, zero past N and K */
            const sp_u32 xs = base + pos + wbytes;
            for (int u = lane; u < SP_BN * 16; u += 32) {
                const int n = u >> 4, k = (u & 15) * 8, gk = c * 128 + k;
                const bool in = ok && n0 + n < N && gk < K;
                const unsigned short *src = X + (size_t)(n0 + n) * K + gk;
                if (xvec || !in) {
                    sp_cp_async16(xs + (n * SP_XROW + k) * 2, in ? (const void *)src : (const void *)X, in ? 16 : 0);
                } else {
                    unsigned short v[8];
                    #pragma unroll
                    for (int e = 0; e < 8; ++e) v[e] = gk + e < K ? src[e] : (unsigned short)0;
                    sp_st_shared_v4(xs + (n * SP_XROW + k) * 2, v[0] | (sp_u32)v[1] << 16, v[2] | (sp_u32)v[3] << 16,
                                    v[4] | (sp_u32)v[5] << 16, v[6] | (sp_u32)v[7] << 16);
                }
            }
            sp_cp_async_arrive(full);
        }
        if (SP_SPLIT == 1) return;
    }
    const bool consumer = warp < SP_WARPS;
    const int mine = consumer ? min(SP_TPW, tiles - (tile0 + warp * SP_TPW)) : 0; /* this warp's tiles in M */
    ${acc_decl}
    /* the PRMT selectors of a register's bits b (0: none, 1: low half, 2: high half, 3: both), two bytes
     * each, in registers (made by asm so that the compiler keeps them rather than rebuilding them each step) */
    sp_u32 t0, t1;
    asm volatile("mov.b32 %0, 0x32103232;\n" : "=r"(t0));
    asm volatile("mov.b32 %0, 0x54101032;\n" : "=r"(t1));
    sp_u32 hi[SP_TPW][4];
    #pragma unroll
    for (int t = 0; t < SP_TPW; ++t)
        #pragma unroll
        for (int i = 0; i < 4; ++i) hi[t][i] = 0;
    for (int it = 0; consumer && it < nch; ++it) {
        const int s = it % SP_S;
        sp_mbar_wait(bars + 8 * s, (it / SP_S) & 1);
        if (mine > 0 && book[SP_S]) {
            uint2 mm[SP_TPW];
            uint4 hb[SP_TPW];
            sp_u32 ex0[SP_TPW], ex1[SP_TPW], vb[SP_TPW];
            #pragma unroll
            for (int t = 0; t < SP_TPW; ++t) {
${prep}
            }
            const sp_u32 xs = base + slot_off[s * (SP_NT + 1) + SP_NT];
            #pragma unroll
            for (int st = 0; st < 8; ++st) {
                sp_u32 b[SP_NB][2];
                #pragma unroll
                for (int j = 0; j < SP_NB; j += 2) {
                    if (j + 1 < SP_NB) {
                        sp_u32 r[4];
                        sp_ldsm(xs + ((j * 8 + ((lane >> 4) << 3) + (lane & 7)) * SP_XROW + st * 16 + ((lane >> 3) & 1) * 8) * 2, r);
                        b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
                    } else {
                        sp_u32 r[2];
                        sp_ldsm2(xs + ((j * 8 + (lane & 7)) * SP_XROW + st * 16 + ((lane >> 3) & 1) * 8) * 2, r);
                        b[j][0] = r[0]; b[j][1] = r[1];
                    }
                }
                #pragma unroll
                for (int t = 0; t < SP_TPW; ++t) {
                    if (t >= mine) break;
${decode}
                    #pragma unroll
                    for (int j = 0; j < SP_NB; ++j) sp_mma(acc[t][j], a, b[j][0], b[j][1]);
                }
            }
        }
        __syncwarp();
        if (lane == 0) sp_mbar_arrive(bars + 8 * (SP_S + s));
    }
    const int g = lane >> 2, tq = lane & 3;
${epilogue}
}
]], {nt = l.nt, tpw = c.tpw, warps = c.warps, bn = c.bn, nb = c.bn // 8, stages = c.stages, split = c.split,
     ring = l.ring, xrow = M.XROW, xbytes = l.xbytes, slots = l.slots, bars = l.bars, book = l.book,
     hdr = M.HEADER, masks = M.MASKS, bmax = M.BLOCK_MAX, mma = mma, threads = 32 * (c.warps + 1), name = name,
     params = params, dtype = f16 and 1 or 0, device = M.DEVICE, step_counts = M.STEP_COUNTS, prep = M.PREP,
     decode = M.DECODE,
     ring_alloc = M.ring_alloc("const sp_u32 wbytes = __shfl_sync(SP_FULL, pre, 31), need = wbytes + SP_XB;", "", ""),
     offsets = M.block_offsets("        "), next_block = M.block_next("            ", "it"),
     acc_decl = "float acc[SP_TPW][SP_NB][4];\n    #pragma unroll\n    for (int t = 0; t < SP_TPW; ++t)\n" ..
                "        #pragma unroll\n        for (int j = 0; j < SP_NB; ++j)\n            #pragma unroll\n" ..
                "            for (int e = 0; e < 4; ++e) acc[t][j][e] = 0.0f;",
     out16 = common.out16(f16),
     epilogue = c.split == 1 and [[
    if (!consumer) return;
    const bool bad = !book[SP_S]; /* outputs NaN (0xffff: NaN in bf16 and fp16) */
    #pragma unroll
    for (int t = 0; t < SP_TPW; ++t)
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = (tile0 + warp * SP_TPW + t) * 16 + g + 8 * (e >> 1), n = n0 + j * 8 + 2 * tq + (e & 1);
                if (row < M && n < N) Y[(size_t)n * M + row] = bad ? (unsigned short)0xffffu : sp_out16(acc[t][j][e]);
            }]] or [[
    /* split-K: the cluster's partial tiles added through distributed shared memory (in the ring, every
     * chunk consumed); CTA r of the cluster writes rows r, r + SP_SPLIT, ... of the CTA's tiles */
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    const bool bad = !book[SP_S]; /* outputs NaN (0xffff: NaN in bf16 and fp16) */
    float *red = (float *)sp_smem;  /* [NT * 16][BN] */
    #pragma unroll
    for (int t = 0; t < SP_TPW; ++t)
        #pragma unroll
        for (int j = 0; j < SP_NB; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                if (consumer) red[((warp * SP_TPW + t) * 16 + g + 8 * (e >> 1)) * SP_BN + j * 8 + 2 * tq + (e & 1)] = acc[t][j][e];
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    sp_u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    for (int i = threadIdx.x; i < SP_NT * 16 * SP_BN; i += (SP_WARPS + 1) * 32) {
        const int r = i / SP_BN, n = i % SP_BN;
        if (r % SP_SPLIT != (int)rank) continue;
]] .. M.CLUSTER_SUM .. [[
        const int row = tile0 * 16 + r, nn = n0 + n;
        if (row < M && nn < N) Y[(size_t)nn * M + row] = bad ? (unsigned short)0xffffu : sp_out16(sum);
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");]]})
end

return M
