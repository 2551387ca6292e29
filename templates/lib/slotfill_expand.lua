-- slotfill-spmm with expand = 1: the image expanded into a dense W in the workspace (Wd, M x K), then the dense
-- GEMM Y = X Wd^T on the tensor cores (lib/mainloop.lua: wgmma + TMA on sm_90a, mma.sync elsewhere). The fused
-- kernels decode W once per token tile (bitmap: ~60 instructions a 16 x 16 step, docs/journal/2026-12-03.md), so from a few
-- hundred tokens on their decode, not the tensor cores, sets the pace; expanded, W is decoded once a call whatever
-- the batch, and the GEMM runs at dense speed: what is left over dense is streaming the image and writing Wd.
--
-- The expansion: a warp a block (bitmap: 16 x 128, its header, bitmap and values; sp24: a 16 x 64 record, its 2:4
-- values and metadata), decoded into a 16-row tile in shared memory and written out 16 bytes a lane (xload = staged:
-- the bitmap block copied whole into shared memory first, lib/slotfill_expand_staged.cuh). Every thread
-- checks the image's header against M, K and the layout first: an image that is not this kernel's writes NaN into
-- Wd (so into Y) and nothing past its header is read. bf16 (the GEMM's), K % 8 == 0 (its copy engine's rows).
local text = require("lib.text")
local mainloop = require("lib.mainloop")
local epilogue = require("lib.epilogue")

local M = {}

M.WARPS = 8   -- expansion warps a CTA (a block each)

-- The GEMM's main loop: the dense template's Hopper default at xbn rows of W a tile, or its portable mma.sync loop.
function M.gemm_config(gpu, xbn)
  local c = {group_m = 8, epi = "inline"}
  for _, p in ipairs(mainloop.params) do c[p.name] = p.default end
  if gpu.wgmma then
    c.mainloop, c.bk, c.wgs, c.load, c.bm, c.bn, c.stages = "wgmma", 64, 2, "tma", 128, xbn, 4
  end
  return c
end

-- The GEMM's tile width (xbn) that keeps the SMs busiest for N tokens of a W of `rows` rows: the fewest tile-times,
-- waves counted whole, a tile's time taken as its width plus half its tokens (the X tile it streams too: fitted to
-- 14336 x 4096 at 1024 tokens, where width alone ranked 128 first and it measured slowest, docs/journal/2026-12-06.md);
-- the widest among equals (and where the SMs are not known: a target named by its architecture).
function M.widest_by_waves(gpu, rows, N)
  local best, cost = 256, math.huge
  if gpu.sm_count <= 0 then return best end
  local bm = M.gemm_config(gpu, best).bm   -- tokens a tile
  for _, bn in ipairs({256, 192, 128}) do
    local tiles = ((N + bm - 1) // bm) * ((rows + bn - 1) // bn)
    local t = ((tiles + gpu.sm_count - 1) // gpu.sm_count) * (bn + bm // 2)
    if t < cost then best, cost = bn, t end
  end
  return best
end

function M.check(c, gpu, p)
  if c.xload ~= "scatter" and (c.expand == 0 or c.decode ~= "bitmap") then
    return false, "xload = staged: the bitmap layout's expansion only"
  end
  if c.xbn ~= 256 and (c.expand == 0 or not gpu.wgmma) then
    return false, "xbn: the wgmma GEMM of expand = 1 (sm_90a)"
  end
  if c.expand == 0 then return true end
  if c.decode ~= "bitmap" and c.decode ~= "sp24" then return false, "the bitmap and sp24 layouts only" end
  if c.dtype ~= "bf16" then return false, "bf16 (the dense GEMM's format)" end
  if p and p.K % 8 ~= 0 then return false, "rows of Wd and X a multiple of 16 bytes (K % 8 == 0)" end
  -- the fused kernels' parameters are unused: each at one value, so that the space holds the expansion once
  if c.mainloop ~= "mma" or c.warps ~= 4 or c.bn ~= 8 or c.stages ~= 8 or c.split ~= 2 or c.tpw ~= 1 or c.ring ~= 36 then
    return false, "mainloop, warps, bn, stages, split, tpw and ring at their defaults"
  end
  return true
end

function M.launch(c, p, gpu)
  local blocks = ((p.M + 15) // 16) * ((p.K + (c.decode == "sp24" and 63 or 127)) // (c.decode == "sp24" and 64 or 128))
  local g = M.gemm_config(gpu, c.xbn)
  return {{grid = {(blocks + M.WARPS - 1) // M.WARPS, 1, 1}, block = {32 * M.WARPS, 1, 1}, smem = 0},
          mainloop.launch{c = g, M = p.N, N = p.M, K = p.K, a = "X", b = "Wd", gpu = gpu,
                          smem = g.mainloop == "wgmma" and epilogue.staging_bytes(g) or 0}}
end

local EXPAND_BITMAP = cuda_file("slotfill_expand_bitmap")
local EXPAND_STAGED = cuda_file("slotfill_expand_staged")

local EXPAND_SP24 = cuda_file("slotfill_expand_sp24")

-- where a bitmap image's blocks start: after the header and the block offsets (xoff, padded to 256 bytes)
local EXTRAS = "W + 256 + ((((size_t)tiles * chunks + 1) * 4 + 255) & ~(size_t)255)"

-- The expansion kernel and the GEMM kernel (names.expand, names.gemm), both over the template's arguments.
function M.emit(c, names, params, gpu)
  local sp24, staged = c.decode == "sp24", c.xload == "staged"
  local g = M.gemm_config(gpu, c.xbn)
  local l = mainloop.loop(g)
  local d = l.derive(g)
  local body = text.lines({l.cta_prologue(g), l.mainloop(g),
                           g.mainloop == "wgmma" and epilogue.store_staged(d, g) or epilogue.store_bf16(d)})
  local threads = d.threads
  return text.fill([[
#define SP_TW ${tw}
${block_fn}
extern "C" __global__ void __launch_bounds__(${xthreads})
${expand}(${params})
{
${tiles}
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const sp_u32 *h = (const sp_u32 *)W;
    /* the image must be this kernel's (magic, version, bf16, the layout, M, K): else Wd (and so Y) is NaN and
       nothing past the header is read */
    const bool ok = h[0] == 0x55545053u && h[1] == 0x4653454eu && h[2] >= 2u && h[4] == 0u && ${header} &&
                    h[8] == (sp_u32)M && h[9] == 0u && h[10] == (sp_u32)K && h[11] == 0u;
    const int tiles = (M + 15) >> 4, chunks = (K + ${cols} - 1) / ${cols};
    const long long b = (long long)blockIdx.x * ${warps} + warp;
    if (b >= (long long)tiles * chunks) return;
    const int i = (int)(b / chunks), c = (int)(b % chunks);
${take}
    if (ok) {
        sp_expand_block(${where}, t, lane);
    } else {
        for (int e = lane; e < 16 * ${cols}; e += 32) t[e / ${cols}][e % ${cols}] = 0xffffu;
    }
    __syncwarp();
    /* 16 rows of `cols` columns, 16 bytes a lane, rows past M and columns past K left out (K % 8 == 0) */
    for (int e = lane; e < 16 * (${cols} / 8); e += 32) {
        const int r = e / (${cols} / 8), k = (e % (${cols} / 8)) * 8, row = 16 * i + r, col = c * ${cols} + k;
        if (row < M && col < K) *(uint4 *)(Wd + (size_t)row * K + col) = *(const uint4 *)&t[r][k];
    }
}

${gemm_device}
extern "C" __global__ void __launch_bounds__(${threads}, 1)
${gemm}(${params}${kparams})
{
    /* the dense GEMM C = A B^T over the expanded W: A = X (tokens x K), B = Wd (M x K), C = Y (tokens x M) */
    const int sp_gm = N, sp_gn = M;
    const sp_bf16 *__restrict__ A = X, *__restrict__ B = Wd;
    sp_bf16 *__restrict__ C = Y;
    (void)A; (void)B;
    {
        const int M = sp_gm, N = sp_gn;
${body}
    }
}
]], {tw = (sp24 and 64 or 128) + 8, xthreads = 32 * M.WARPS,
     block_fn = sp24 and EXPAND_SP24 or staged and EXPAND_STAGED or EXPAND_BITMAP,
     expand = names.expand, params = params, warps = M.WARPS, cols = sp24 and 64 or 128,
     header = sp24 and "h[5] == 64u && h[36] == 3u && (h[22] | h[23] | h[24] | h[25]) == 0u"
                   or "h[5] == 128u && h[36] == 2u",
     -- xload = staged: the block copied whole into the warp's buffer first (16-byte copies all in flight at once),
     -- decoded from there, the tile written over it
     tiles = staged and "    __shared__ __align__(16) unsigned short sp_stage[" .. M.WARPS .. "][SP_STAGE_UNITS * 8];"
                    or "    __shared__ __align__(16) unsigned short sp_tiles[" .. M.WARPS .. "][16][SP_TW];",
     take = staged and "    unsigned short (*t)[SP_TW] = (unsigned short (*)[SP_TW])sp_stage[warp];"
                   or "    unsigned short (*t)[SP_TW] = sp_tiles[warp];",
     where = sp24 and "W + 256 + (size_t)b * 1152"
                  or staged and EXTRAS .. ", (const sp_u32 *)(W + 256) + b"
                  or EXTRAS .. " + (size_t)((const sp_u32 *)(W + 256))[b] * 16",
     gemm_device = mainloop.device(g), threads = threads, gemm = names.gemm, kparams = mainloop.kernel_params(g),
     body = body})
end

return M
