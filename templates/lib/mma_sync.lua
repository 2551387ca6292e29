-- Tensor-core main loop on mma.sync (m16n8k16, bf16 in, fp32 accumulate) fed by a multi-stage
-- cp.async pipeline with ldmatrix fragment loads. Runs on sm_80, sm_90a and sm_120.
--
-- Computes, per CTA, acc = A[m0:m0+bm, :] * B[n0:n0+bn, :]^T where A is M x K and B is N x K,
-- both row-major (K contiguous: activations and nn.Linear weights). Tails in M, N and K are
-- zero-filled; when K is not a multiple of 8 or a pointer is not 16-byte aligned the tiles are
-- loaded element by element instead of with 16-byte copies (same result, slower).
--
-- Accumulator layout (for epilogues): acc[i][j][e] holds row
--   m0 + warp_m*wm + i*16 + (lane >> 2) + (e >= 2 ? 8 : 0)
-- and column n0 + warp_n*wn + j*8 + (lane & 3)*2 + (e & 1).
local text = require("lib.text")
local cuda = require("lib.cuda")
local M = {}

-- Parameters a template using this main loop exposes (in this order).
M.params = {
  {name = "bm", values = {64, 128, 256}, default = 128, doc = "CTA tile rows (M)"},
  {name = "bn", values = {64, 128, 256}, default = 128, doc = "CTA tile columns (N)"},
  {name = "bk", values = {32, 64}, default = 32, doc = "K depth of one pipeline stage"},
  {name = "wm", values = {32, 64}, default = 64, doc = "warp tile rows"},
  {name = "wn", values = {32, 64}, default = 64, doc = "warp tile columns"},
  {name = "stages", values = {2, 3, 4, 5}, default = 3, doc = "cp.async pipeline depth"},
  {name = "swizzle", values = {"xor", "pad"}, default = "xor",
   doc = "shared-memory layout against ldmatrix bank conflicts: XOR of 16-byte chunks, or row padding"},
  {name = "prefetch", values = {"none", "a", "ab"}, default = "a",
   doc = "fragments loaded one k-step ahead into a second register buffer: none, A only, or A and B"},
}

function M.derive(c)
  local d = {}
  d.warps_m = c.bm // c.wm
  d.warps_n = c.bn // c.wn
  d.warps = d.warps_m * d.warps_n
  d.threads = 32 * d.warps
  d.mt = c.wm // 16           -- m16 tiles per warp
  d.nt = c.wn // 8            -- n8 tiles per warp
  d.row = c.swizzle == "pad" and c.bk + 8 or c.bk   -- elements per shared row
  d.a_stage = c.bm * d.row    -- elements
  d.b_stage = c.bn * d.row
  d.smem = c.stages * (d.a_stage + d.b_stage) * 2
  d.cpr = c.bk // 8           -- 16-byte chunks per tile row
  d.a_iters = c.bm * d.cpr // math.max(d.threads, 1)
  d.b_iters = c.bn * d.cpr // math.max(d.threads, 1)
  -- accumulators + fragments + addressing, per thread (rough: the compiler's report is the truth)
  local extra = ({none = 0, a = d.mt * 4, ab = d.mt * 4 + d.nt * 2})[c.prefetch or "none"]
  d.est_regs = d.mt * d.nt * 4 + d.mt * 4 + d.nt * 2 + extra + 40
  d.wm, d.wn = c.wm, c.wn
  -- the accumulator's row and column inside the CTA tile, less (lane >> 2) + h*8 and (lane & 3)*2
  d.acc_row = string.format("warp_m * %d + i * 16", c.wm)
  d.acc_col = string.format("warp_n * %d + j * 8", c.wn)
  return d
end

M.constraints = {
  {why = "warp tile divides the CTA tile",
   check = function(c) return c.bm % c.wm == 0 and c.bn % c.wn == 0 end},
  {why = "2 to 8 warps per CTA",
   check = function(c) local d = M.derive(c); return d.warps >= 2 and d.warps <= 8 end},
  {why = "tile loads divide evenly among the threads",
   check = function(c)
     local d = M.derive(c)
     return (c.bm * d.cpr) % d.threads == 0 and (c.bn * d.cpr) % d.threads == 0
       and d.a_iters >= 1 and d.b_iters >= 1
   end},
  {why = "pipeline fits in shared memory",
   check = function(c, gpu)
     local need = M.derive(c).smem
     if need > gpu.smem_per_block then
       return false, string.format("%d bytes > %d", need, gpu.smem_per_block)
     end
     return true
   end},
  {why = "accumulators fit in registers",
   check = function(c, gpu)
     local d = M.derive(c)
     -- 216: above it (64x64 warp tiles with two fragment buffers) ptxas spills
     return d.est_regs <= 216 and d.est_regs * d.threads <= gpu.regs_per_sm
   end},
  {why = "needs cp.async and mma.sync (sm_80+)",
   check = function(c, gpu) return gpu.cp_async end},
}

-- Element offset of 16-byte chunk `cidx` of row `r` inside one stage (C expressions in, C out).
local function off(c, r, cidx)
  if c.swizzle == "pad" then
    return string.format("((%s) * %d + ((%s) << 3))", r, c.bk + 8, cidx)
  elseif c.bk == 64 then          -- 128-byte rows: XOR the chunk with the row's low 3 bits
    return string.format("((%s) * 64 + (((%s) ^ ((%s) & 7)) << 3))", r, cidx, r)
  else                            -- 64-byte rows: two rows share a 128-byte line
    return string.format("((%s) * 32 + (((%s) ^ (((%s) >> 1) & 3)) << 3))", r, cidx, r)
  end
end

-- Loads of one operand tile (rows x bk) into stage `stage` at k-tile `kt`: cp.async 16-byte
-- copies, or element by element when !vec. Reads c.swizzle and c.bk (the layout), d.cpr and
-- d.threads; lib/wgmma.lua calls it for its 128-byte swizzle (bk = 64, xor).
function M.load_operand(c, d, v)
  return text.fill([[
        #pragma unroll
        for (int i = 0; i < ${iters}; ++i) {
            const int id = tid + i * ${threads};
            const int r = id / ${cpr}, ch = id % ${cpr};
            const int g = ${base} + r, gk = k0 + ch * 8;
            const sp_u32 dst = ${smem} + (sp_u32)((stage) * ${stage_elems} + ${off}) * 2u;
            if (vec) {
                const bool in = g < ${limit} && gk < K;
                sp_cp_async16(dst, in ? (const void *)(${ptr} + (size_t)g * K + gk) : (const void *)${ptr},
                              in ? 16 : 0);
            } else {
                sp_u32 w[4];
                #pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const sp_u32 lo = (g < ${limit} && gk + 2 * e < K) ? ${ptr}[(size_t)g * K + gk + 2 * e] : 0u;
                    const sp_u32 hi = (g < ${limit} && gk + 2 * e + 1 < K)
                                      ? ${ptr}[(size_t)g * K + gk + 2 * e + 1] : 0u;
                    w[e] = lo | (hi << 16);
                }
                sp_st_shared_v4(dst, w[0], w[1], w[2], w[3]);
            }
        }]], {iters = v.iters, threads = d.threads, cpr = d.cpr, base = v.base, limit = v.limit,
              smem = v.smem, stage_elems = v.stage_elems, off = off(c, "r", "ch"), ptr = v.ptr})
end

-- The start of a kernel body using this main loop: the tile order (lib/cuda.lua) and the
-- thread's warp coordinates.
function M.cta_prologue(c)
  return cuda.tile_order(c) .. text.fill([[

    const int warp_m = warp / ${warps_n}, warp_n = warp % ${warps_n};]], {warps_n = M.derive(c).warps_n})
end

-- ldmatrix loads of k-step `ks` (C expression) from the stage at byte address a_base (A) or
-- b_base (B) into af<buf> / bf<buf>.
local function frag_loads_a(c, d, buf, ks)
  return text.fill([[
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i) {
                const int ra = warp_m * ${wm} + i * 16 + (lane & 15);
                const int ca = (${ks}) * 2 + (lane >> 4);
                sp_ldmatrix_x4(a_base + (sp_u32)${off_a} * 2u,
                               af${buf}[i][0], af${buf}[i][1], af${buf}[i][2], af${buf}[i][3]);
            }]], {mt = d.mt, wm = c.wm, ks = ks, buf = buf, off_a = off(c, "ra", "ca")})
end

local function frag_loads_b(c, d, buf, ks)
  return text.fill([[
            #pragma unroll
            for (int j = 0; j < ${nt}; j += 2) {
                const int rb = warp_n * ${wn} + j * 8 + (lane & 7) + ((lane >> 4) << 3);
                const int cb = (${ks}) * 2 + ((lane >> 3) & 1);
                sp_ldmatrix_x4(b_base + (sp_u32)${off_b} * 2u,
                               bf${buf}[j][0], bf${buf}[j][1], bf${buf}[j + 1][0], bf${buf}[j + 1][1]);
            }]], {nt = d.nt, wn = c.wn, ks = ks, buf = buf, off_b = off(c, "rb", "cb")})
end

local function frag_loads(c, d, buf, ks)
  return frag_loads_a(c, d, buf, ks) .. "\n" .. frag_loads_b(c, d, buf, ks)
end

local function mmas(d, abuf, bbuf)
  return text.fill([[
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i)
                #pragma unroll
                for (int j = 0; j < ${nt}; ++j) sp_mma_bf16_16816(acc[i][j], af${abuf}[i], bf${bbuf}[j]);]],
    {mt = d.mt, nt = d.nt, abuf = abuf, bbuf = bbuf == nil and abuf or bbuf})
end

-- The main loop. Expects in scope: const sp_bf16 *A, *B; int M, N, K; int m0, n0, tid, lane,
-- warp_m, warp_n; unsigned char sp_smem[] (dynamic shared memory, >= derive(c).smem bytes).
-- Declares float acc[mt][nt][4].
--
-- prefetch = "none": per k-tile, wait + barrier, then load fragments and multiply step by step.
-- prefetch = "ab": fragments double-buffered in registers: the loads of k-step s+1 (and of the
-- next stage's first step, across the barrier) are issued before the MMAs of step s, so the
-- tensor cores need not idle at the barrier; costs registers for a second set of fragments.
-- prefetch = "a": only the A fragments are double-buffered (B is loaded at its own step), for
-- warp tiles too large to hold two full fragment sets.
function M.mainloop(c)
  local d = M.derive(c)
  local v = {
    stages = c.stages, bk = c.bk, mt = d.mt, nt = d.nt, acc = cuda.acc_decl(d.mt, d.nt),
    a_stage = d.a_stage, b_stage = d.b_stage, ks = c.bk // 16, wait = c.stages - 2,
    load_a = M.load_operand(c, d, {iters = d.a_iters, base = "m0", limit = "M", smem = "sA",
                                 stage_elems = d.a_stage, ptr = "A"}),
    load_b = M.load_operand(c, d, {iters = d.b_iters, base = "n0", limit = "N", smem = "sB",
                                 stage_elems = d.b_stage, ptr = "B"}),
  }
  local head = text.fill([[
    const sp_u32 sA = sp_smem_u32(sp_smem);
    const sp_u32 sB = sA + ${stages} * ${a_stage} * 2;
    /* 16-byte copies need K % 8 == 0 and 16-byte aligned operands; otherwise load by element. */
    const bool vec = (K % 8 == 0) && ((((unsigned long long)A) | ((unsigned long long)B)) & 15ull) == 0;
    const int KT = (K + ${bk} - 1) / ${bk};
${acc}

    #pragma unroll
    for (int s = 0; s < ${stages} - 1; ++s) {
        if (s < KT) {
            const int stage = s, k0 = s * ${bk};
${load_a}
${load_b}
        }
        sp_cp_async_commit();
    }
]], v)
  local prefetch = text.fill([[
            {
                const int pf = kt + ${stages} - 1;
                if (pf < KT) {
                    const int stage = pf % ${stages}, k0 = pf * ${bk};
${load_a}
${load_b}
                }
                sp_cp_async_commit();
            }]], v)
  local body
  if c.prefetch == "none" then
    local steps = {}
    for ks = 0, v.ks - 1 do
      steps[#steps + 1] = frag_loads(c, d, "", tostring(ks))
      steps[#steps + 1] = mmas(d, "")
    end
    body = text.fill([[
    for (int kt = 0; kt < KT; ++kt) {
        sp_cp_async_wait<${wait}>();
        __syncthreads();
${prefetch}
        const int st = kt % ${stages};
        const sp_u32 a_base = sA + (sp_u32)(st * ${a_stage}) * 2u;
        const sp_u32 b_base = sB + (sp_u32)(st * ${b_stage}) * 2u;
        sp_u32 af[${mt}][4], bf[${nt}][2];
${steps}
    }
]], {wait = v.wait, prefetch = prefetch, stages = c.stages, a_stage = d.a_stage, b_stage = d.b_stage,
     mt = d.mt, nt = d.nt, steps = table.concat(steps, "\n")})
  else
    -- Unrolled k-steps; buffer (ks & 1) holds step ks, and step 0 of the next stage lands in
    -- buffer 0 again. The barrier sits before the loads of the last step's successor (the next
    -- stage's step 0); the prefetch overwrites the stage every warp finished reading before that
    -- barrier one iteration earlier.
    if v.ks % 2 ~= 0 then error("prefetch needs an even number of k-steps per stage (bk / 16)") end
    local both = c.prefetch == "ab"
    local steps = {}
    for ks = 0, v.ks - 1 do
      local cur, nxt = tostring(ks % 2), tostring((ks + 1) % 2)
      -- B of this step first when it is not prefetched (before the barrier on the last step)
      if not both then steps[#steps + 1] = frag_loads_b(c, d, "", tostring(ks)) end
      local load_next = both and frag_loads or frag_loads_a
      if ks == v.ks - 1 then
        steps[#steps + 1] = text.fill([[
            sp_cp_async_wait<${wait}>();
            __syncthreads();
            /* the next stage; after the last tile there is none, and nothing wrote it: stay on a
               written one (a select, not a branch: a branch here costs ~25 %) */
            st = (kt + 1 < KT) ? ((st + 1 == ${stages}) ? 0 : st + 1) : st;
            a_base = sA + (sp_u32)(st * ${a_stage}) * 2u;
            b_base = sB + (sp_u32)(st * ${b_stage}) * 2u;]], {wait = v.wait, stages = c.stages,
                                                            a_stage = d.a_stage, b_stage = d.b_stage})
        steps[#steps + 1] = load_next(c, d, nxt, "0")
      else
        steps[#steps + 1] = load_next(c, d, nxt, tostring(ks + 1))
      end
      if ks == 0 then steps[#steps + 1] = prefetch end
      steps[#steps + 1] = mmas(d, cur, both and cur or "")
    end
    body = text.fill([[
    sp_cp_async_wait<${wait}>();
    __syncthreads();
    int st = 0;
    sp_u32 a_base = sA, b_base = sB;
    sp_u32 af0[${mt}][4], af1[${mt}][4], ${bdecl};
${first}
    for (int kt = 0; kt < KT; ++kt) {
${steps}
    }
]], {wait = v.wait, mt = d.mt,
     bdecl = both and string.format("bf0[%d][2], bf1[%d][2]", d.nt, d.nt) or string.format("bf[%d][2]", d.nt),
     first = (both and frag_loads or frag_loads_a)(c, d, "0", "0"),
     steps = table.concat(steps, "\n")})
  end
  return head .. body .. "    sp_cp_async_wait<0>();\n"
end

return M
