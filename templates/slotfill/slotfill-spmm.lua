-- slotfill-spmm: Y[N x M] = X[N x K] * W^T for a weight matrix W (M x K, nn.Linear's layout) at
-- moderate unstructured sparsity, in an encoded image (runtime/sp_slotfill.h: the format, its encoders
-- and CPU decoders). X and Y are token-major (N tokens of K and of M features), as inference engines
-- keep activations; fp32 accumulation; bf16 or fp16. Three kernels, by the image's layout (`decode`):
--
-- bitmap (the default; lib/slotfill_bitmap.lua): a bit per element in mma fragment order and the
-- values (0.5625 of dense bytes at 50 %, any pattern), streamed through a byte ring by a producer warp
-- (bulk copies, mbarriers), decoded by each warp straight into mma.m16n8k16 A fragments. It beats the
-- three-layer kernel below on every measured shape (docs/journal/2026-12-01.md): fewer bytes and no correction pass.
--
-- sp24 (lib/slotfill_sp24.lua): W exactly 2:4 (2:4-pruned weights; problems with dist=3): the list
-- layout's records alone (window 64), loaded from global memory straight into mma.sp fragments, a CTA's
-- warps splitting K. No decode at all: it streams at what HBM gives (sm_80+).
--
-- owner / list (the three-layer design: 2:4 on sparse tensor cores, filled slots and a residual):
-- a CTA takes `warps` 16-row tiles of W (one per warp) and `bn` tokens; its K range (all of it, or
-- a 1/split share when a cluster of `split` CTAs splits K) is walked `window` columns at a time
-- through a cp.async pipeline of `stages` stages. Each stage holds every warp's fixed-size record
-- (2:4 values and metadata in mma.sp register order, the filled-slot masks) and the first `ecap`
-- words of its extras (distances, residual), and the X chunk (bn x window). Per chunk, a warp:
--   1. decodes the Slot-Filling and Residual entries on CUDA cores and scatters them into the
--      warp's 16 x window correction tile (`decode`, which also picks the encoding's layout:
--      `owner`, each lane its own filled slots from the record's masks, its first distance found by a
--      warp prefix sum of the masks' popcounts; `list`, 16-bit entries spread evenly over the lanes,
--      the masks rebuilt in shared memory with atomic ORs);
--   2. runs mma.sp (sparse tensor cores) over the 2:4 layer with the filled slots masked out, and
--      mma.sync over the touched 16 x 16 blocks of the correction tile (whose values sit at their
--      true columns), both into the same fp32 accumulators, then clears the touched blocks.
-- With split > 1 the cluster's CTAs add their partial tiles through distributed shared memory,
-- each CTA writing a slice of the output: no second pass over global memory.
-- Any M, N, K: tails are zero (the encoder pads W; X is loaded with zero fill; K % 8 != 0 or an
-- unaligned X takes element-wise loads). owner/list: sm_80+ (mma.sp, cp.async), split needs
-- clusters (sm_90+); bitmap: sm_90+ (bulk copies, mbarrier transactions).
local text = require("lib.text")
local args = require("lib.args")
local cuda = require("lib.cuda")
local bitmap = require("lib.slotfill_bitmap")
local sp24 = require("lib.slotfill_sp24")
local common = require("lib.slotfill_common")
local large = require("lib.slotfill_wgmma")
local expand = require("lib.slotfill_expand")
local wsmem = require("lib.slotfill_wsmem")
local wdec = require("lib.slotfill_wdec")

-- Defaults: the best measured on an H200 at decode sizes (docs/journal/2026-12-01.md, the slotfill table).
local params = {
  {name = "dtype", values = {"bf16", "f16"}, default = "bf16", same_cost = true,
   doc = "16-bit float format of W, X and Y (the problem's fp16 chooses it; the same instructions either way, so "
      .. "a result measured in one format serves the other)"},
  {name = "window", values = {64, 128, 256}, default = 128,
   doc = "encoding: columns per chunk, the k depth of a pipeline stage (fillers stay in their chunk; bitmap: 128)"},
  {name = "dbits", values = {5, 6, 7, 8, 9}, default = 5,
   doc = "encoding: bits of a filler's distance (reach +-2^(dbits-1) columns): fewer bits, more residual"},
  {name = "fill", values = {1, 0}, default = 0,
   doc = "encoding: overflow nonzeros go into free 2:4 slots (1) or all to the residual (0)"},
  {name = "warps", values = {2, 4, 8, 16}, default = 4,
   doc = "warps per CTA (bitmap: consumer warps, plus one producer), a 16-row tile each (x tpw); sp24: "
      .. "slices of K over the CTA's tiles (16: sp24 only; on wgmma, four consumer warpgroups)"},
  {name = "bn", values = {8, 16, 32, 64, 128, 256}, default = 8,
   doc = "block tile N: tokens per CTA (128 and 256: the wgmma kernel's)"},
  {name = "stages", values = {2, 3, 4, 6, 8}, default = 8,
   doc = "cp.async pipeline depth (bitmap: chunks in flight at most, one mbarrier pair each; sp24: k32 steps "
      .. "a register batch loads, two batches in flight)"},
  {name = "split", values = {1, 2, 4, 8}, default = 2,
   doc = "split-K over a thread-block cluster, reduced through distributed shared memory (sm_90+)"},
  {name = "decode", values = {"bitmap", "owner", "list", "sp24"}, default = "bitmap",
   doc = "encoding and its decoder: a bit per element and the values, decoded into tensor-core fragments "
      .. "(bitmap); or 2:4 on sparse tensor cores with filled slots, a mask per lane each lane decoding its own "
      .. "slots after a warp prefix sum (owner), or a list of 16-bit entries decoded evenly by all lanes (list); "
      .. "or W exactly 2:4, streamed into mma.sp fragments as it is (sp24: 2:4-pruned weights only)"},
  {name = "tpw", values = {1, 2}, default = 1,
   doc = "bitmap, sp24: 16-row tiles per warp (they share the X fragments)"},
  {name = "ring", values = {36, 16, 20, 24, 28, 48, 60}, default = 36,
   doc = "bitmap: KB of the shared-memory ring the producer streams W's blocks and X's tiles through (smaller: more CTAs per SM)"},
  {name = "ecap", values = {32, 64, 128}, default = 128,
   doc = "extras words staged per warp and 64 columns of a chunk; more are read from global memory"},
  {name = "vec", values = {16, 8}, default = 8, doc = "bytes per cp.async of the weight records"},
  {name = "mainloop", values = {"mma", "wgmma"}, default = "mma", added = true,
   doc = "the small-batch kernels on mma.sync (each warp its tiles against bn tokens), or the large-batch kernel "
      .. "(bitmap and sp24, sm_90a): a CTA's W tiles decoded once into wgmma's register operand and run against bn "
      .. "tokens at a time, one or two warpgroups (warps 4 or 8; sp24 also 16), sp24 on the sparse tensor cores"},
  {name = "expand", values = {0, 1}, default = 0, added = true,
   doc = "1: the image expanded into a dense W in the workspace, then a dense GEMM (bitmap and sp24, bf16): W decoded "
      .. "once a call instead of once per token tile, for large batches (lib/slotfill_expand.lua)"},
  {name = "wsrc", values = {"regs", "smem", "dec"}, default = "regs", added = true,
   doc = "the large-batch bitmap kernel: W decoded by the consumer warps into wgmma's register operand (regs), or "
      .. "ahead of the tensor cores into shared memory that both of wgmma's operands come from (smem, "
      .. "lib/slotfill_wsmem.lua), or so by decoder warps of their own for consumers that only multiply, "
      .. "their token tiles sharing each decoded tile (dec, lib/slotfill_wdec.lua)"},
  {name = "krec", values = {1, 2, 4}, default = 1, added = true,
   doc = "the large-batch sp24 kernel: 64-column records a pipeline stage carries (each tile's in one bulk copy, and "
      .. "as many X boxes): fewer, larger copies and barrier rounds a call"},
  {name = "dwarps", values = {4, 8, 16}, default = 4, added = true,
   doc = "wsrc=dec: decoder warps (a tile each, or with 64 rows 8 or 16: two or four a tile, taking turns by stage)"},
  {name = "wrows", values = {64, 128}, default = 64, added = true,
   doc = "wsrc=dec: rows of W a CTA (64: its consumer warpgroups split the tokens; 128: the rows, X read half as often)"},
  {name = "xload", values = {"scatter", "staged"}, default = "scatter", added = true,
   doc = "expand = 1, bitmap: each value loaded from the image where its lane's count puts it (scatter), or each "
      .. "block copied whole into shared memory with 16-byte copies first and decoded from there (staged)"},
  {name = "xbn", values = {256, 192, 128}, default = 256, added = true,
   doc = "expand = 1 on sm_90a: rows of W a tile of the dense GEMM (128 tokens by xbn), narrower where the wide tiles "
      .. "leave SMs idle over their waves (a few hundred tokens, or rows just past a wave)"},
}

local function kernel_name(c) return text.kernel_name("sp_slotfill", c, params) end
local function expand_names(c)
  local n = kernel_name(c)
  return {expand = n .. "_expand", gemm = n .. "_gemm"}
end

local ARGS = {
  {name = "W", type = "u8", role = "input", shape = {"?"},
   doc = "the encoded weight matrix: an sp_slotfill image (runtime/sp_slotfill.h) made with this configuration's window, dbits and fill"},
  {name = "X", type = "x16", role = "input", shape = {"N", "K"}, doc = "activations, token-major"},
  {name = "Y", type = "x16", role = "output", shape = {"N", "M"}, doc = "X W^T, token-major"},
  {name = "M", type = "i32", role = "dim"},
  {name = "N", type = "i32", role = "dim"},
  {name = "K", type = "i32", role = "dim"},
  -- last: the fused kernels' signatures end before it (their launches say args = 6)
  {name = "Wd", type = "x16", role = "workspace", shape = {"expand * M", "K"},
   doc = "expand = 1: W expanded, dense (empty otherwise)"},
}
local FUSED_ARGS = {table.unpack(ARGS, 1, 6)}

local function log2(n) local l = 0; while (1 << l) < n do l = l + 1 end; return l end
local function list_dbits(window) return 16 - log2(8 * window) end

-- Shared-memory layout (bytes), per configuration and problem (the X chunk rows are padded by
-- 16 bytes against ldmatrix bank conflicts).
local function layout(c, K)
  local l = {}
  l.rec = (c.decode == "list" and 18 or 19) * c.window
  l.ecap = c.ecap * c.window // 64                          -- words
  l.warp_stage = l.rec + 4 * l.ecap
  l.xrow = c.window + 8                                     -- elements per X row in shared memory
  l.x = c.bn * l.xrow * 2
  l.stage = c.warps * l.warp_stage + l.x
  l.corr_row = c.window + 8
  l.corr = c.warps * 16 * l.corr_row * 2
  l.pref = c.decode == "list" and c.warps * 32 * (c.window == 256 and 8 or 4) or 0  -- the rebuilt masks
  l.red = c.split > 1 and c.warps * 16 * c.bn * 4 or 0
  l.pipe = math.max(c.stages * l.stage, l.red)
  -- last, sized by the problem (the source does not depend on it): each warp's chunk offsets
  local chunks = K and (K + c.window - 1) // c.window or 1
  l.xoff = c.warps * ((chunks + c.split - 1) // c.split + 1) * 4
  l.total = l.pipe + l.corr + l.pref + l.xoff
  return l
end

local constraints = {
  {why = "the data's format: fp16=1 takes dtype=f16, fp16=0 dtype=bf16",
   check = function(c, gpu, p) return p == nil or (p.fp16 == 1) == (c.dtype == "f16") end},
  {why = "the distance fits the window (dbits <= log2(window) + 1)",
   check = function(c) return c.dbits <= log2(c.window) + 1 end},
  {why = "without filling the distance width is unused (dbits stays 5, or the list's own)",
   check = function(c)
     return c.fill == 1 or c.dbits == ((c.decode == "list" or c.decode == "sp24") and list_dbits(c.window) or 5)
   end},
  {why = "a list entry holds the slot and the distance in 16 bits: dbits = 16 - log2(8 window)",
   check = function(c) return c.decode ~= "list" or c.dbits == list_dbits(c.window) end},
  {why = "sparse tensor cores (mma.sp) and cp.async: sm_80 or newer",
   check = function(c, gpu) return gpu.mma_sp and gpu.cp_async end},
  {why = "split-K reduces through a cluster: sm_90 or newer",
   check = function(c, gpu) return c.split == 1 or gpu.cluster end},
  {why = "bn covers the tokens without idle n8 tiles beyond the first (bn <= max(8, N rounded up to 8))",
   check = function(c, gpu, p) return p == nil or c.bn <= math.max(8, (p.N + 7) // 8 * 8) end},
  {why = "each split has at least one chunk",
   check = function(c, gpu, p) return p == nil or c.split == 1 or (p.K + c.window - 1) // c.window >= c.split end},
  {why = "the bitmap layout takes window 128 and neither filling nor distances (fill 0, dbits 5)",
   check = function(c) return c.decode ~= "bitmap" or (c.window == 128 and c.fill == 0 and c.dbits == 5) end},
  {why = "the bitmap kernel stages no records or extras (ecap and vec at their defaults)",
   check = function(c) return c.decode ~= "bitmap" or (c.ecap == 128 and c.vec == 8) end},
  {why = "tpw is the bitmap and sp24 kernels' (1 for the others), ring the bitmap kernel's (36 for the others)",
   check = function(c)
     return (c.decode == "bitmap" or c.decode == "sp24" or c.tpw == 1) and (c.decode == "bitmap" or c.ring == 36)
   end},
  {why = "the three-layer kernels pipeline at most 6 stages",
   check = function(c) return c.decode == "bitmap" or c.decode == "sp24" or c.stages <= 6 end},
  {why = "sp24 reads exactly 2:4 weights (dist=3): the list layout's records alone, window 64, no filling (dbits 7)",
   check = function(c, gpu, p)
     if c.decode ~= "sp24" then return true end
     return c.window == 64 and c.fill == 0 and c.dbits == list_dbits(64) and (p == nil or p.dist == 3)
   end},
  {why = "sp24: its warps split K inside the CTA (split 1), a batch of 2, 4 or 8 k32 steps, no staging "
      .. "(ecap, vec at defaults)",
   check = function(c)
     return c.decode ~= "sp24" or c.mainloop == "wgmma" or c.expand == 1 or (c.split == 1 and (c.stages == 2 or c.stages == 4 or c.stages == 8) and
                                   c.ecap == 128 and c.vec == 8)
   end},
  {why = "sp24: two register batches fit without spilling (k32 steps x (tiles + token tiles of 8) at most 16; "
      .. "at most 8 with 16 warps, 128 registers a thread)",
   check = function(c)
     return c.decode ~= "sp24" or c.mainloop == "wgmma" or c.stages * (c.tpw + c.bn // 8) <= (c.warps == 16 and 8 or 16)
   end},
  {why = "16 warps a CTA: the sp24 kernels' only (the small-batch one's K slices, the large-batch one's four warpgroups)",
   check = function(c) return c.warps ~= 16 or c.decode == "sp24" end},
  {why = "bitmap: bulk copies and mbarrier transactions, sm_90 or newer",
   check = function(c, gpu) return c.decode ~= "bitmap" or gpu.tma end},
  {why = "bitmap: the ring holds the largest chunk (every block dense) and the split-K partial tiles",
   check = function(c)
     if c.decode ~= "bitmap" or c.mainloop == "wgmma" then return true end
     local l = bitmap.layout(c)
     if l.need_max > l.ring or l.red > l.ring then
       return false, string.format("%d and %d bytes > %d", l.need_max, l.red, l.ring)
     end
     return true
   end},
  {why = "bn 128 and 256 are the wgmma kernel's",
   check = function(c) return c.mainloop == "wgmma" or c.bn <= 64 end},
  -- the small-batch kernels re-read and re-decode W for every bn tokens: 0.1-0.5x dense from N = 64 on (H200)
  {why = "where wgmma exists, batches of 32 tokens or more run the large-batch kernel (mainloop=wgmma)",
   check = function(c, gpu, p) return p == nil or not gpu.wgmma or c.mainloop == "wgmma" or c.expand == 1 or p.N < 32 end},
  {why = "the wgmma kernel (sm_90a): bitmap or sp24, one or two consumer warpgroups (sp24: up to four), bn >= 32, "
      .. "stages 2 to 4 (sp24: to 8), split up to 4, K % 8 == 0, its stages and output tile in shared memory",
   check = function(c, gpu, p)   -- large.check's reason said (an `or` would drop it)
     if c.wsrc ~= "regs" then return true end
     return large.check(c, gpu, p)
   end},
  {why = "krec is the large-batch sp24 kernel's (1 for every other)",
   check = function(c) return c.krec == 1 or (c.decode == "sp24" and c.mainloop == "wgmma" and c.expand == 0) end},
  {why = "wsrc=smem: the bitmap layout's wgmma kernel (sm_90a) with two consumer warpgroups (warps 8), tpw 1, ring at "
      .. "its default, bn >= 32, stages 2 to 4, split up to 4, K % 8 == 0, its stages in shared memory",
   check = wsmem.check},
  {why = "dwarps and wrows are the wsrc=dec kernel's (4 and 64 for every other)",
   check = function(c) return (c.dwarps == 4 and c.wrows == 64) or c.wsrc == "dec" end},
  {why = "wsrc=dec: the bitmap layout's wgmma kernel (sm_90a), one or two consumer warpgroups (warps 4 or 8; two: bn "
      .. "<= 128 and, on 64 rows, tokens for both; bn 256 with 4 decoder warps, 16 with bn <= 64; 128 rows: warps 8, "
      .. "dwarps 8), tpw 1, ring at its default, bn >= 32, stages 2 to 8, split up to 4, K % 8 == 0, its stages in "
      .. "shared memory",
   check = wdec.check},
  {why = "expand = 1: the bitmap or sp24 image in bf16, K % 8 == 0, the fused kernels' parameters at their defaults",
   check = expand.check},
  {why = "shared memory fits",
   check = function(c, gpu, p)
     if c.mainloop == "wgmma" then return true end
     local need = c.decode == "bitmap" and bitmap.layout(c).total or c.decode == "sp24" and sp24.layout(c).red
                  or layout(c, p and p.K).total
     if need > gpu.smem_per_block then return false, string.format("%d bytes > %d", need, gpu.smem_per_block) end
     return true
   end},
}

local OWNER = cuda_file("slotfill_owner_decode")
local LIST = cuda_file("slotfill_list_decode")

local function kernel(c)
  local l = layout(c, nil)
  local f16 = c.dtype == "f16"
  local steps = c.window // 32
  local nbt = c.bn // 8
  local mma_d = "mma.sync.aligned.m16n8k16.row.col.f32." .. (f16 and "f16.f16" or "bf16.bf16") .. ".f32"
  local maskt = c.window == 256 and "unsigned long long" or "unsigned int"
  return text.fill([[
#define SP_W ${window}
#define SP_STEPS ${steps}
#define SP_DBITS ${dbits}
#define SP_REACH ${reach}
#define SP_WARPS ${warps}
#define SP_BN ${bn}
#define SP_NBT ${nbt}
#define SP_STAGES ${stages}
#define SP_SPLIT ${split}
#define SP_REC ${rec}
#define SP_ECAP ${ecap}
#define SP_WSTAGE ${warp_stage}
#define SP_XROW ${xrow}
#define SP_STAGE ${stage}
#define SP_CROW ${corr_row}
#define SP_FULL 0xffffffffu
typedef ${maskt} sp_mask_t;
/* a lane's mask in the record: W / 32 bytes (a 16-bit load for a window of 64) */
#define SP_MASK_LOAD(p) ${maskload}

__device__ __forceinline__ void sp_cp_async8(sp_u32 dst, const void *src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sp_ldsm_x4(sp_u32 addr, sp_u32 *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
${mma_sp_fn}
__device__ __forceinline__ void sp_mma_dense(float *d, const sp_u32 *a, sp_u32 b0, sp_u32 b1)
{
    asm volatile("${mma_d} {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
${out16}
/* A word of the chunk's extras: staged in shared memory, or past the cap from global memory
 * (FAST: the whole chunk is staged). */
template <bool FAST> __device__ __forceinline__ sp_u32 sp_ex(const sp_u32 *staged, const sp_u32 *global, int j)
{
    return (FAST || j < SP_ECAP) ? staged[j] : global[j];
}
/* Writes one entry into the correction tile and marks its 16-column block touched. */
__device__ __forceinline__ void sp_put(unsigned short *corr, int row, int col, unsigned short v, unsigned &touched)
{
    col &= SP_W - 1;
    corr[(row & 15) * SP_CROW + col] = v;
    touched |= 1u << (col >> 4);
}
/* Slot b of a lane (mask bit 8 s + 2 w + h: step s, word w, half h) lies in row g + 8 (w & 1) of
 * the tile; its value is half-word 8 (32 s + lane) + b % 8 of the record; its group starts at
 * column 32 s + 4 (lane % 4) + 16 (w >> 1) of the chunk. */
${decode_fn}
extern "C" __global__ void __launch_bounds__(${threads})
${name}(${params})
{
    extern __shared__ __align__(128) unsigned char sp_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int tiles = (M + 15) >> 4, chunks = (K + SP_W - 1) / SP_W;
    const int tile = blockIdx.x * SP_WARPS + warp, n0 = blockIdx.y * SP_BN;
    const bool live = tile < tiles;
    /* the image's sections (runtime/sp_slotfill.h) */
    const size_t rec_bytes = (size_t)tiles * chunks * SP_REC;
    const size_t xoff_at = 256 + ((rec_bytes + 255) & ~(size_t)255);
    const unsigned char *recs = W + 256;
    const sp_u32 *xoff = (const sp_u32 *)(W + xoff_at);
    const sp_u32 *extras = (const sp_u32 *)(W + xoff_at + ((((size_t)tiles * chunks + 1) * 4 + 255) & ~(size_t)255));
    /* this CTA's share of K */
    const int per = (chunks + SP_SPLIT - 1) / SP_SPLIT;
    const int c0 = (int)blockIdx.z * per, c1 = min(chunks, c0 + per), nch = max(0, c1 - c0);
    unsigned char *pipe = sp_smem;
    unsigned short *corr = (unsigned short *)(sp_smem + SP_PIPE) + warp * 16 * SP_CROW;
${pref_decl}
    sp_u32 *xo = (sp_u32 *)(sp_smem + SP_PIPE + SP_CORR + SP_PREF) + warp * (per + 1);
    /* the correction tile starts zero; the warp's chunk offsets are read once */
    for (int i = lane; i < 16 * SP_CROW / 8; i += 32) ((uint4 *)corr)[i] = make_uint4(0u, 0u, 0u, 0u);
    if (live)
        for (int i = lane; i <= nch; i += 32) xo[i] = xoff[(size_t)tile * chunks + c0 + i];
    const bool xvec = (K % 8 == 0) && (((unsigned long long)X & 15ull) == 0);

    auto load = [&](int it) {
        const int c = c0 + it, k0 = c * SP_W;
        unsigned char *st = pipe + (it % SP_STAGES) * SP_STAGE;
        if (live) {
            const unsigned char *rec = recs + ((size_t)tile * chunks + c) * SP_REC;
            const sp_u32 dst = sp_smem_u32(st + warp * SP_WSTAGE);
            for (int p = lane; p < SP_REC / ${vec}; p += 32)
                ${copy_rec}
            const int units = min((int)(xo[it + 1] - xo[it]), SP_ECAP / 4);
            const sp_u32 *ex = extras + (size_t)xo[it] * 4;
            for (int p = lane; p < units; p += 32) sp_cp_async16(dst + SP_REC + p * 16, ex + p * 4, 16);
        }
        /* the X chunk: bn rows of W columns, zero past N and K */
        unsigned short *xs = (unsigned short *)(st + SP_WARPS * SP_WSTAGE);
        for (int p = tid; p < SP_BN * (SP_W / 8); p += SP_WARPS * 32) {
            const int n = p / (SP_W / 8), k = (p % (SP_W / 8)) * 8;
            const bool in = n0 + n < N && k0 + k < K;
            const unsigned short *src = X + (size_t)(n0 + n) * K + k0 + k;
            if (xvec) {
                sp_cp_async16(sp_smem_u32(xs + n * SP_XROW + k), in ? (const void *)src : (const void *)X, in ? 16 : 0);
            } else {
                unsigned short v[8];
                #pragma unroll
                for (int e = 0; e < 8; ++e) v[e] = (in && k0 + k + e < K) ? src[e] : (unsigned short)0;
                sp_st_shared_v4(sp_smem_u32(xs + n * SP_XROW + k), v[0] | (sp_u32)v[1] << 16, v[2] | (sp_u32)v[3] << 16,
                                v[4] | (sp_u32)v[5] << 16, v[6] | (sp_u32)v[7] << 16);
            }
        }
    };

    /* three accumulator sets (2:4 layer; correction blocks of even and of odd 16-column steps), so
     * that consecutive mma of a chunk do not wait on each other; added at the end */
    float acc[SP_NBT][4], acc1[SP_NBT][4], acc2[SP_NBT][4];
    #pragma unroll
    for (int j = 0; j < SP_NBT; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = acc1[j][e] = acc2[j][e] = 0.0f;

    __syncthreads(); /* xo and the zeroed tiles */
    #pragma unroll
    for (int s = 0; s < SP_STAGES - 1; ++s) {
        if (s < nch) load(s);
        sp_cp_async_commit();
    }
    for (int it = 0; it < nch; ++it) {
        sp_cp_async_wait<SP_STAGES - 2>();
        __syncthreads();
        if (it + SP_STAGES - 1 < nch) load(it + SP_STAGES - 1);
        sp_cp_async_commit();
        if (!live) continue;
        const unsigned char *st = pipe + (it % SP_STAGES) * SP_STAGE;
        const unsigned char *rec = st + warp * SP_WSTAGE;
        const sp_u32 *staged = (const sp_u32 *)(rec + SP_REC);
        const sp_u32 *gex = extras + (size_t)xo[it] * 4;
        const int nwords = (int)(xo[it + 1] - xo[it]) * 4;
        const sp_u32 xs = sp_smem_u32(st + SP_WARPS * SP_WSTAGE);
        /* 1. decode the filled slots and the residual into the correction tile (all from shared
         *    memory when the chunk's extras were staged whole) */
        sp_mask_t mine;
        unsigned touched = 0;
        if (nwords <= SP_ECAP) sp_decode<true>(rec, staged, gex, nwords, lane, corr, msk, mine, touched);
        else sp_decode<false>(rec, staged, gex, nwords, lane, corr, msk, mine, touched);
        /* a butterfly, not __reduce_or_sync: redux.sync.or after this divergent loop returned
         * partial masks on the H200 (sm_90a, CUDA 13.0), dropping corrections */
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) touched |= __shfl_xor_sync(SP_FULL, touched, o);
        __syncwarp();
        /* 2. sparse tensor cores over the 2:4 layer (filled slots masked out), dense ones over the
         *    touched blocks of the correction tile */
        const sp_u32 cbase = sp_smem_u32(corr) + ((lane & 15) * SP_CROW + 8 * (lane >> 4)) * 2;
        #pragma unroll
        for (int s = 0; s < SP_STEPS; ++s) {
            const uint4 q = *(const uint4 *)(rec + (s * 32 + lane) * 16);
            sp_u32 a[4] = {q.x, q.y, q.z, q.w};
            const unsigned m8 = (unsigned)(mine >> (8 * s)) & 0xffu;
            #pragma unroll
            for (int w = 0; w < 4; ++w) {
                const unsigned two = (m8 >> (2 * w)) & 3u;
                a[w] &= ((two & 1u) ? 0xffff0000u : 0xffffffffu) & ((two & 2u) ? 0x0000ffffu : 0xffffffffu);
            }
            const sp_u32 e = *(const sp_u32 *)(rec + 16 * SP_W + ((s >> 1) * 32 + lane) * 4);
            sp_u32 c0a[4], c1a[4];
            const bool t0 = (touched >> (2 * s)) & 1u, t1 = (touched >> (2 * s + 1)) & 1u;
            if (t0) sp_ldsm_x4(cbase + (s * 32) * 2, c0a);
            if (t1) sp_ldsm_x4(cbase + (s * 32 + 16) * 2, c1a);
            #pragma unroll
            for (int j = 0; j < SP_NBT; ++j) {
                sp_u32 b[4];
                sp_ldsm_x4(xs + ((j * 8 + (lane & 7)) * SP_XROW + s * 32 + 8 * (lane >> 3)) * 2, b);
                if (s & 1) sp_mma_sp<1>(acc[j], a, b, e);
                else sp_mma_sp<0>(acc[j], a, b, e);
                if (t0) sp_mma_dense(acc1[j], c0a, b[0], b[1]);
                if (t1) sp_mma_dense(acc2[j], c1a, b[2], b[3]);
            }
        }
        __syncwarp();
        /* the touched blocks back to zero: 16 rows x 16 columns, 16 bytes a lane */
        #pragma unroll
        for (int blk = 0; blk < SP_W / 16; ++blk)
            if ((touched >> blk) & 1u)
                *(uint4 *)(corr + (lane >> 1) * SP_CROW + blk * 16 + (lane & 1) * 8) = make_uint4(0u, 0u, 0u, 0u);
    }
    sp_cp_async_wait<0>();
    #pragma unroll
    for (int j = 0; j < SP_NBT; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] += acc1[j][e] + acc2[j][e];
${epilogue}
}
]], {window = c.window, steps = steps, dbits = c.dbits, reach = 1 << (c.dbits - 1), warps = c.warps, bn = c.bn,
     nbt = nbt, stages = c.stages, split = c.split, rec = l.rec, ecap = l.ecap, warp_stage = l.warp_stage,
     xrow = l.xrow, stage = l.stage, corr_row = l.corr_row, maskt = maskt,
     maskload = c.window == 64 and "((sp_mask_t) * (const unsigned short *)(p))" or "(*(const sp_mask_t *)(p))", mma_sp_fn = common.mma_sp(f16), mma_d = mma_d,
     out16 = common.out16(f16),
     threads = 32 * c.warps, name = kernel_name(c), params = args.params(FUSED_ARGS),
     vec = c.vec,
     copy_rec = c.vec == 16 and "sp_cp_async16(dst + p * 16, rec + p * 16, 16);"
                or "sp_cp_async8(dst + p * 8, rec + p * 8, 8);",
     pref_decl = "    sp_mask_t *msk = (sp_mask_t *)(sp_smem + SP_PIPE + SP_CORR) + warp * 32; /* list: rebuilt masks */",
     decode_fn = c.decode == "owner" and OWNER or LIST,
     epilogue = c.split == 1 and [[
    if (!live) return;
    #pragma unroll
    for (int j = 0; j < SP_NBT; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int m = tile * 16 + g + 8 * (e >> 1), n = n0 + j * 8 + 2 * t + (e & 1);
            if (m < M && n < N) Y[(size_t)n * M + m] = sp_out16(acc[j][e]);
        }]] or [[
    /* split-K: the cluster's partial tiles added through distributed shared memory; CTA r of the
     * cluster writes every SP_SPLIT-th output row of the CTA's tile, starting at r */
    __syncthreads();
    float *red = (float *)sp_smem;  /* [16 * SP_WARPS rows][SP_BN], the pipeline's space */
    #pragma unroll
    for (int j = 0; j < SP_NBT; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e)
            red[(warp * 16 + g + 8 * (e >> 1)) * SP_BN + j * 8 + 2 * t + (e & 1)] = acc[j][e];
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    sp_u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const sp_u32 base = sp_smem_u32(red);
    for (int i = tid; i < 16 * SP_WARPS * SP_BN; i += SP_WARPS * 32) {
        const int r = i / SP_BN, n = i % SP_BN;
        if (r % SP_SPLIT != (int)rank) continue;
]] .. bitmap.CLUSTER_SUM .. [[
        const int m = (int)blockIdx.x * SP_WARPS * 16 + r, nn = n0 + n;
        if (m < M && nn < N) Y[(size_t)nn * M + m] = sp_out16(sum);
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");]]})
end

-- The large-batch kernel's module for where its W is decoded.
local function large_module(c) return c.wsrc == "smem" and wsmem or c.wsrc == "dec" and wdec or large end

local function fused_launch(c, p, gpu)
  local tiles = (p.M + 15) // 16
  if c.mainloop == "wgmma" then
    local l = large_module(c).layout(c, gpu.smem_per_block)
    local tn = l.tn or c.bn
    return {grid = {(p.N + tn - 1) // tn, (p.M + l.bm - 1) // l.bm, c.split}, block = {l.threads, 1, 1},
            smem = l.total, cluster = {1, 1, c.split},
            tmaps = {{arg = "X", rows = p.N, cols = p.K, box_rows = c.bn, box_cols = 64, swizzle = 128}}}
  end
  if c.decode == "bitmap" then
    local nt = c.warps * c.tpw
    return {grid = {(tiles + nt - 1) // nt, (p.N + c.bn - 1) // c.bn, c.split},
            block = {32 * (c.warps + 1), 1, 1}, smem = bitmap.layout(c).total, cluster = {1, 1, c.split}}
  end
  if c.decode == "sp24" then
    return {grid = {(tiles + c.tpw - 1) // c.tpw, (p.N + c.bn - 1) // c.bn, 1},
            block = {32 * c.warps, 1, 1}, smem = sp24.layout(c).red, cluster = {1, 1, 1}}
  end
  local l = layout(c, p.K)
  return {grid = {(tiles + c.warps - 1) // c.warps, (p.N + c.bn - 1) // c.bn, c.split},
          block = {32 * c.warps, 1, 1}, smem = l.total, cluster = {1, 1, c.split}}
end

local function fused_emit(c, p, gpu)
  if c.mainloop == "wgmma" then
    return cuda.prelude .. "\n" .. large_module(c).emit(c, kernel_name(c), args.params(FUSED_ARGS), c.dtype == "f16", gpu)
  end
  if c.decode == "bitmap" then
    return cuda.prelude .. "\n" .. bitmap.emit(c, kernel_name(c), args.params(FUSED_ARGS), c.dtype == "f16")
  end
  if c.decode == "sp24" then
    return cuda.prelude .. "\n" .. sp24.emit(c, kernel_name(c), args.params(FUSED_ARGS), c.dtype == "f16")
  end
  local l = layout(c, nil)
  return text.fill([[
${prelude}
#define SP_PIPE ${pipe}
#define SP_CORR ${corr}
#define SP_PREF ${pref}
${kernel}
]], {prelude = cuda.prelude, pipe = l.pipe, corr = l.corr, pref = l.pref, kernel = kernel(c)})
end

return {
  name = "slotfill-spmm",
  family = "slotfill",
  description = "Slot-Filling SpMM Y = X W^T from pruned weights encoded once (exact): ~50% unstructured (the bitmap"
    .. " layout, decoded into tensor-core fragments) or 2:4 (sp24, on the sparse tensor cores); large batches on wgmma"
    .. " with W decoded once per CTA, or with W expanded into the workspace before a dense GEMM",
  args = ARGS,
  dims = {"M", "K", "N", "sparsity", "fp16", "dist"}, -- sparsity (percent) and dist (0 uniform, 1 magnitude-pruned,
                                                      -- 2 per-row, 3 exactly 2:4, 4 the hard rows): how benchmarks draw W
  ranges = {sparsity = {0, 99, int = true}, fp16 = {0, 1, int = true, category = true},
            dist = {0, 4, int = true, category = true}},
  tokens = "N",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = constraints,

  -- batches of 32 tokens or more on sm_90a: the large-batch kernel, its token tile covering the batch (up to 256),
  -- two warpgroups where that leaves every SM a tile and one otherwise, split-K where even that does not, as deep a
  -- pipeline as shared memory allows (the layout from the problem's kind of pruning: 2:4 weights take sp24, up to bn
  -- 128 in stages of 2 or 4 records: docs/journal/2026-12-04.md); for
  -- unstructured weights in bf16, W expanded before the dense GEMM once the batch fills 64 of its tiles (from 256
  -- tokens on: that measured faster than the fused kernel on every H200 shape, docs/journal/2026-12-03.md), each
  -- block staged whole (0-3 % faster on every H100 problem measured), the GEMM's tile as wide as its waves allow
  -- (the best of 256, 192 and 128 rows at each of 20 H100 problems, docs/journal/2026-12-06.md)
  defaults = function(gpu, p)
    if not (gpu.wgmma and p and p.N and p.N >= 32) then return nil end
    if p.dist ~= 3 and p.fp16 == 0 and p.K % 8 == 0 and p.N >= 256 and
       ((p.N + 127) // 128) * ((p.M + 255) // 256) >= 64 then
      return "expand=1,xload=staged,xbn=" .. expand.widest_by_waves(gpu, p.M, p.N)
    end
    local bn = 32
    while bn < p.N and bn < 256 do bn = bn * 2 end
    local ntiles = (p.N + bn - 1) // bn
    local warps = ((p.M + 127) // 128) * ntiles >= gpu.sm_count and 8 or 4
    local ctas, split = ((p.M + 16 * warps - 1) // (16 * warps)) * ntiles, 1
    while split < 4 and ctas * split < gpu.sm_count and (p.K + 127) // 128 >= 2 * split do split = split * 2 end
    if p.dist == 3 then   -- up to bn 128, stages of 2 or 4 records (fewer, larger copies), as many as fit
      local krec = bn == 256 and 1 or (warps == 4 and bn <= 64) and 4 or 2
      local stages = bn == 256 and 4 or large.deepest_stages({mainloop = "wgmma", decode = "sp24", warps = warps, bn = bn,
                                                               split = split, krec = krec, tpw = 1, ring = 36}, gpu, p)
      return string.format("mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=%d,bn=%d,stages=%d,split=%d,krec=%d",
                           warps, bn, stages, split, krec)
    end
    return string.format("mainloop=wgmma,warps=%d,bn=%d,stages=%d,split=%d", warps, bn, bn == 256 and 2 or 4, split)
  end,

  kernel = function(c, gpu)
    if c.expand == 1 then
      local n = expand_names(c)
      return {n.expand, n.gemm}
    end
    return kernel_name(c)
  end,

  launch = function(c, p, gpu)
    if c.expand == 1 then return expand.launch(c, p, gpu) end
    local l = fused_launch(c, p, gpu)
    l.args = #FUSED_ARGS
    return l
  end,

  emit = function(c, p, gpu)
    if c.expand == 1 then return cuda.prelude .. "\n" .. expand.emit(c, expand_names(c), args.params(ARGS), gpu) end
    return fused_emit(c, p, gpu)
  end,
}
