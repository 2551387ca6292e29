-- Epilogues for the tensor-core main loops: what happens to the fp32 accumulators. A kernel
-- template picks one (the plain store here; TwELL plugs in its packing epilogue), so the main loop
-- never changes with the output format.
local text = require("lib.text")
local M = {}

local acts = {
  none = function(x) return x end,
  relu = function(x) return "fmaxf(" .. x .. ", 0.0f)" end,
}

-- Row-major bf16 store of acc (layout in lib/mma_sync.lua, lib/wgmma.lua: d.acc_row, d.acc_col)
-- to C (M x N, leading dimension N), optionally through an elementwise activation. Pairs of
-- columns go out as one 32-bit store when N is even; tails are bounds-checked.
function M.store_bf16(d, opts)
  local act = acts[(opts and opts.act) or "none"]
  if not act then error("epilogue.store_bf16: unknown activation " .. tostring(opts.act), 2) end
  return text.fill([[
    {
        const bool pair_ok = (N % 2 == 0) && ((((unsigned long long)C) & 3ull) == 0);
        #pragma unroll
        for (int i = 0; i < ${mt}; ++i) {
            #pragma unroll
            for (int j = 0; j < ${nt}; ++j) {
                const int col = n0 + ${acol} + (lane & 3) * 2;
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = m0 + ${arow} + (lane >> 2) + h * 8;
                    if (row >= M) continue;
                    const float x0 = ${x0}, x1 = ${x1};
                    sp_bf16 *out = C + (size_t)row * N + col;
                    if (pair_ok && col + 1 < N) {
                        *(sp_u32 *)out = sp_pack_bf16x2(x0, x1);
                    } else {
                        if (col < N) out[0] = sp_f32_to_bf16(x0);
                        if (col + 1 < N) out[1] = sp_f32_to_bf16(x1);
                    }
                }
            }
        }
    }
]], {mt = d.mt, nt = d.nt, arow = d.acc_row, acol = d.acc_col,
     x0 = act("acc[i][j][2 * h]"), x1 = act("acc[i][j][2 * h + 1]")})
end

-- Shared memory the TwELL packing epilogue stages its tile in (bytes): bm rows of bn bf16, each
-- row padded by 8 elements against bank conflicts.
function M.twell_pack_smem(c) return M.staging_bytes(c) end

-- TwELL packing (runtime/sp_twell.h) in two steps, so that a kernel may give them to different
-- warps: twell_stage writes relu(acc) of the CTA's bm x bn tile to shared memory as bf16 (rows
-- padded by 8 elements against bank conflicts); twell_pack_rows has one warp per row count the
-- row's nonzeros in the tile and write them in ascending column order (16-byte loads, a warp sum and
-- ballots: deterministic, no atomics) into the row's S slots, or, when they do not fit, into the overflow
-- pool at an offset taken with one atomicAdd per overflowing (row, tile). Tile width T = bn.

-- act(acc) of the CTA's bm x bn tile to shared memory as bf16, rows padded by 8 elements against bank
-- conflicts (staging_bytes). Expects in scope: sC (sp_bf16 *), N, n0, lane, acc; the warps that hold
-- accumulators run it.
function M.staging_bytes(c) return c.bm * (c.bn + 8) * 2 end

function M.stage(d, c, act_name)
  local act = acts[act_name]
  return text.fill([[
        #pragma unroll
        for (int i = 0; i < ${mt}; ++i) {
            #pragma unroll
            for (int j = 0; j < ${nt}; ++j) {
                const int col = ${acol} + (lane & 3) * 2;
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = ${arow} + (lane >> 2) + h * 8;
                    /* columns past N are zeros: they never become entries */
                    const float x0 = n0 + col < N ? ${x0} : 0.0f;
                    const float x1 = n0 + col + 1 < N ? ${x1} : 0.0f;
                    *(sp_u32 *)(sC + r * ${row} + col) = sp_pack_bf16x2(x0, x1);
                }
            }
        }]], {mt = d.mt, nt = d.nt, arow = d.acc_row, acol = d.acc_col, row = c.bn + 8,
              x0 = act("acc[i][j][2 * h]"), x1 = act("acc[i][j][2 * h + 1]")})
end

function M.twell_stage(d, c) return M.stage(d, c, "relu") end

-- Rows first, first + step, ... of the staged tile (M.stage) to C (M x N, row-major): one warp per
-- row, 16 bytes per lane when N % 8 == 0 and C is 16-byte aligned. Expects in scope: sC, C, M, N,
-- m0, n0, lane.
function M.store_rows(c, first, step)
  return text.fill([[
        const bool vec = (N % 8 == 0) && ((((unsigned long long)C) & 15ull) == 0);
        for (int r = ${first}; r < ${bm} && m0 + r < M; r += ${step}) {
            const sp_bf16 *src = sC + r * ${row};
            sp_bf16 *dst = C + (size_t)(m0 + r) * N + n0;
            if (vec) {
                for (int ch = lane; ch < ${bn} / 8; ch += 32)
                    if (n0 + ch * 8 < N) *(uint4 *)(dst + ch * 8) = *(const uint4 *)(src + ch * 8);
            } else {
                for (int col = lane; col < ${bn}; col += 32)
                    if (n0 + col < N) dst[col] = src[col];
            }
        }]], {first = first, step = step, bm = c.bm, bn = c.bn, row = c.bn + 8})
end

-- Rows first, first + step, ... of the staged tile combined into dst (a C expression: a bf16 matrix
-- of rows x N, row-major, n0 its first column here): op "mul" (dst = staged * dst), in fp32, one rounding to
-- bf16 (an "add" would round twice: twell-ffn's hot_y adds through M.add_regs). Expects in scope: sC, M, m0, n0,
-- lane, and N.
function M.combine_rows(c, first, step, dst, op)
  local f = ({mul = "*"})[op] or error("epilogue.combine_rows: unknown op " .. tostring(op), 2)
  -- vec: each lane one 16-byte chunk of a row (bn <= 256), 8 rows' loads of dst issued before any
  -- is used (the drain warps are few: a chain of round trips per row would bound the kernel)
  return text.fill([[
        const bool vec = (N % 8 == 0) && ((((unsigned long long)(${dst})) & 15ull) == 0);
        if (vec) {
            const int ch = lane * 8;
            for (int r0 = ${first}; r0 < ${bm} && m0 + r0 < M; r0 += 8 * ${step}) {
                uint4 a[8], b[8];
                #pragma unroll
                for (int u = 0; u < 8; ++u) {
                    const int r = r0 + u * ${step};
                    if (r < ${bm} && m0 + r < M && ch < ${bn} && n0 + ch < N) {
                        a[u] = *(const uint4 *)(sC + r * ${row} + ch);
                        b[u] = *(const uint4 *)((${dst}) + (size_t)(m0 + r) * N + n0 + ch);
                    }
                }
                #pragma unroll
                for (int u = 0; u < 8; ++u) {
                    const int r = r0 + u * ${step};
                    if (!(r < ${bm} && m0 + r < M && ch < ${bn} && n0 + ch < N)) continue;
                    sp_u32 *bw = (sp_u32 *)&b[u];
                    const sp_u32 *aw = (const sp_u32 *)&a[u];
                    #pragma unroll
                    for (int e = 0; e < 4; ++e)
                        bw[e] = sp_pack_bf16x2(__uint_as_float(aw[e] << 16) ${f} __uint_as_float(bw[e] << 16),
                                               __uint_as_float(aw[e] & 0xffff0000u) ${f} __uint_as_float(bw[e] & 0xffff0000u));
                    *(uint4 *)((${dst}) + (size_t)(m0 + r) * N + n0 + ch) = b[u];
                }
            }
        } else {
            for (int r = ${first}; r < ${bm} && m0 + r < M; r += ${step}) {
                const sp_bf16 *src = sC + r * ${row};
                sp_bf16 *out = (${dst}) + (size_t)(m0 + r) * N + n0;
                for (int col = lane; col < ${bn}; col += 32)
                    if (n0 + col < N) out[col] = sp_f32_to_bf16(sp_bf16_to_f32(src[col]) ${f} sp_bf16_to_f32(out[col]));
            }
        }]], {first = first, step = step, bm = c.bm, bn = c.bn, row = c.bn + 8, dst = dst, f = f})
end

-- A persistent kernel's tile accumulators set to (op "=": lib/mainloop.lua's x.init, before the main loop) or
-- increased by (op "+=": in the epilogue, from the registers) hi + lo, two bf16 matrices of M x N, row-major
-- (twell-ffn's hot_y: Y and Ylo, the cold part's output and its rounding remainder), so that the sum is rounded
-- once. Pairs of columns as 4-byte words where N is even and both are 4-byte aligned (element-wise otherwise).
-- Expects in scope: acc, t, n0, M, N, lane, warp.
function M.add_regs(d, c, hi, lo, op)
  return text.fill([[
        {
            const int m0 = SP_PID_M(t) * ${bm}, q = lane & 3;
            const bool pair = (N % 2 == 0) && (((((unsigned long long)(${hi})) | ((unsigned long long)(${lo}))) & 3ull) == 0);
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i)
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int grow = m0 + ${arow} + (lane >> 2) + h * 8;
                    if (grow >= M) continue;
                    const size_t at = (size_t)grow * N + n0;
                    #pragma unroll
                    for (int j = 0; j < ${nt}; ++j) {
                        const int col = j * 8 + q * 2;
                        if (pair) {
                            if (n0 + col >= N) continue;
                            const sp_u32 a = *(const sp_u32 *)((${hi}) + at + col), b = *(const sp_u32 *)((${lo}) + at + col);
                            acc[i][j][2 * h] ${op} __uint_as_float(a << 16) + __uint_as_float(b << 16);
                            acc[i][j][2 * h + 1] ${op} __uint_as_float(a & 0xffff0000u) + __uint_as_float(b & 0xffff0000u);
                        } else {
                            #pragma unroll
                            for (int e = 0; e < 2; ++e)
                                if (n0 + col + e < N)
                                    acc[i][j][2 * h + e] ${op} sp_bf16_to_f32((${hi})[at + col + e]) + sp_bf16_to_f32((${lo})[at + col + e]);
                        }
                    }
                }
        }]], {bm = c.bm, mt = d.mt, nt = d.nt, arow = d.acc_row, hi = hi, lo = lo, op = op})
end

-- The same straight from the accumulators of a persistent kernel's warpgroup (lib/mainloop.lua's x.stage; with
-- ping-pong warpgroups nothing waits for it): op "mul" or "store" (dst = the tile). Each value rounded to bf16
-- first, as the staged tile is, so that both forms give the same bits. A lane's pairs of columns as 4-byte words
-- where N is even and dst 4-byte aligned (element-wise otherwise); a row's 2 x nt words loaded before any is
-- stored (stores may alias the loads: the compiler would not hoist them). Expects in scope: t, n0, M, N, lane, warp.
function M.combine_regs(d, c, dst, op)
  local f = ({mul = "*", store = ""})[op] or error("epilogue.combine_regs: unknown op " .. tostring(op), 2)
  local combine = op == "store" and "v" or text.fill([[
sp_pack_bf16x2(__uint_as_float(v << 16) ${f} __uint_as_float(old[j] << 16),
                                           __uint_as_float(v & 0xffff0000u) ${f} __uint_as_float(old[j] & 0xffff0000u))]],
    {f = f})
  local one = op == "store" and "x" or ("x " .. f .. " sp_bf16_to_f32(out[col + b])")
  return text.fill([[
        {
            const int m0 = SP_PID_M(t) * ${bm}, q = lane & 3;
            sp_bf16 *const C = ${dst};
            const bool pair = (N % 2 == 0) && ((((unsigned long long)C) & 3ull) == 0);
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i) {
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int grow = m0 + ${arow} + (lane >> 2) + h * 8;
                    if (grow >= M) continue;
                    sp_bf16 *const out = C + (size_t)grow * N + n0;
                    if (pair) {${load}
                        #pragma unroll
                        for (int j = 0; j < ${nt}; ++j) {
                            const int col = j * 8 + q * 2;
                            const sp_u32 v = sp_pack_bf16x2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                            if (n0 + col < N) *(sp_u32 *)(out + col) = ${combine};
                        }
                    } else {
                        #pragma unroll
                        for (int j = 0; j < ${nt}; ++j)
                            #pragma unroll
                            for (int b = 0; b < 2; ++b) {
                                const int col = j * 8 + q * 2;
                                const float x = sp_bf16_to_f32(sp_f32_to_bf16(acc[i][j][2 * h + b]));
                                if (n0 + col + b < N) out[col + b] = sp_f32_to_bf16(${one});
                            }
                    }
                }
            }
        }]], {bm = c.bm, mt = d.mt, nt = d.nt, arow = d.acc_row, dst = dst, combine = combine, one = one,
              load = op == "store" and "" or text.fill([[

                        sp_u32 old[${nt}];
                        #pragma unroll
                        for (int j = 0; j < ${nt}; ++j)
                            old[j] = n0 + j * 8 + q * 2 < N ? *(const sp_u32 *)(out + j * 8 + q * 2) : 0u;]],
                {nt = d.nt})})
end

-- Two steps by the whole CTA after its main loop, through the pipeline's shared memory: the warps that
-- hold accumulators stage the tile, then every warp runs `rows` over it. Expects in scope what both
-- need, plus sp_smem and warp.
local function through_smem(d, stage, rows)
  return text.fill([[
    {
        __syncthreads(); /* every warp is done with the pipeline's shared memory */
        sp_bf16 *sC = (sp_bf16 *)sp_smem;
        if (${owner}) {  /* the warps that hold accumulators */
${stage}
        }
        __syncthreads();
${rows}
    }
]], {owner = d.acc_owner or "true", stage = stage, rows = rows})
end

-- The accumulators written out row by row (coalesced) after the main loop.
function M.store_staged(d, c) return through_smem(d, M.stage(d, c, "none"), M.store_rows(c, "warp", d.warps)) end

-- Rows first, first + step, ... of the staged tile. Expects in scope: sC (16-byte aligned), packed, pool,
-- pool_counter, pool_capacity, M, N, m0, pid_n, lane; bn a multiple of 8 up to 256. With cold = {cols = ..., tile = ...} (C
-- expressions: twell-ffn's hot/cold split, whose first tiles are not packed) the packed gate has the
-- tiles of `cols` columns per row and this staged tile is number `tile` of them. A tile that overflows its slots when the pool
-- has no room left is marked lost (0xC0000000, runtime/sp_twell.h). With c.route (twell-ffn), each
-- row's count is also added to row_info[row] (c.route >= 0), and a row whose count reaches c.route
-- (when > 0), or that lost a tile, is routed to the dense path (twell_dense.lua) while dense_capacity allows.
function M.twell_pack_rows(c, first, step, cold)
  -- Rows go in groups of 32 per warp: their counts first (lane u holds row u's), then every lane issues
  -- its row's atomics (with c.route the running count, and where the tile overflows the pool offset) at
  -- once, then the entries row by row. Atomic round trips and the entry loop's instructions bound the
  -- packer warps, and with them the producer: the warpgroups waited for the staging tile
  -- (docs/journal). A lane scans 8 columns of a row with one 16-byte load: its nonzeros' mask, the
  -- row's count a warp sum, an entry's slot the count in the lanes before it (one ballot where no lane
  -- holds more than one, else bit planes of the lanes' counts) plus its rank in the lane.
  if c.bn % 8 ~= 0 or c.bn > 256 then
    error(string.format("epilogue.twell_pack_rows: bn = %d (a lane scans 8 columns: a multiple of 8 up to 256)", c.bn), 2)
  end
  local routed = (c.route or -1) >= 0
  return text.fill([[
        const int ntiles = ${ntiles};
        const unsigned lt = (1u << lane) - 1u;
        const unsigned long long pool_room = min(pool_capacity, 0x40000000ull); /* offsets have 30 bits */
        const bool scan = lane * 8 < ${bn};   /* this lane's 8 columns are in the tile */
        /* the lane's 8 staged values of row r, and which of them are nonzero (bit e: column lane * 8 + e) */
        auto load8 = [&](int r) -> uint4 {
            return scan ? *(const uint4 *)(sC + r * ${row} + lane * 8) : make_uint4(0u, 0u, 0u, 0u);
        };
        auto nz8 = [](uint4 q) -> unsigned {
            const sp_u32 w[4] = {q.x, q.y, q.z, q.w};
            unsigned m = 0u;
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                m |= ((w[e] & 0x7fffu) != 0u ? 1u : 0u) << (2 * e) | ((w[e] & 0x7fff0000u) != 0u ? 2u : 0u) << (2 * e);
            return m;
        };
        for (int r0 = ${first}; r0 < ${bm} && m0 + r0 < M; r0 += 32 * ${step}) {
            int count = 0;   /* lane u: row r0 + u * step's nonzeros in this tile */
            #pragma unroll 4
            for (int u = 0; u < 32; ++u) {
                const int r = r0 + u * ${step};
                if (r >= ${bm} || m0 + r >= M) break;
                const int n = __reduce_add_sync(0xffffffffu, __popc(nz8(load8(r))));
                if (lane == u) count = n;
            }
            const int grow = m0 + r0 + lane * ${step};
            const bool live = r0 + lane * ${step} < ${bm} && grow < M;
            sp_u32 word0 = (sp_u32)count;
            bool lost = false;
            unsigned long long off = 0;
${route_issue}
            if (live && count > ${slots}) {
                off = atomicAdd(pool_counter, (unsigned long long)(count + 1));
                /* no room: the counter says how much was needed; the tile is marked lost */
                lost = off + (unsigned long long)count + 1ull > pool_room;
                if (!lost) {
                    pool[off] = (sp_u32)count;
                    word0 = 0x80000000u | (sp_u32)off;
                }
            }
${route}
            if (live && lost) packed[((size_t)grow * ntiles + ${tile}) * ${words}] = 0xC0000000u;
            #pragma unroll 1
            for (int u = 0; u < 32; ++u) {
                const int r = r0 + u * ${step};
                if (r >= ${bm} || m0 + r >= M) break;
                if (__shfl_sync(0xffffffffu, (int)lost, u)) continue;
                const int n = __shfl_sync(0xffffffffu, count, u);
                const sp_u32 w0 = __shfl_sync(0xffffffffu, word0, u);
                sp_u32 *w = packed + ((size_t)(m0 + r) * ntiles + ${tile}) * ${words};
                if (lane == 0) w[0] = w0;
                if (n == 0) continue;   /* most (row, tile)s of a sparse layer: the count says it all */
                sp_u32 *dst = n > ${slots} ? pool + (w0 & 0x3fffffffu) + 1 : w + 1;
                const uint4 q = load8(r);
                unsigned m = nz8(q);
                const int k = __popc(m);
                int base;
                if (__all_sync(0xffffffffu, k <= 1)) {   /* the usual case: one ballot */
                    base = __popc(__ballot_sync(0xffffffffu, k != 0) & lt);
                } else {   /* k <= 8: four bit planes */
                    base = 0;
                    #pragma unroll
                    for (int b = 0; b < 4; ++b) base += __popc(__ballot_sync(0xffffffffu, (k >> b) & 1) & lt) << b;
                }
                while (m) {
                    const int e = __ffs(m) - 1;
                    m &= m - 1u;
                    const sp_u32 v = e < 4 ? (e < 2 ? q.x : q.y) : (e < 6 ? q.z : q.w);
                    dst[base++] = ((e & 1) ? (v & 0xffff0000u) : (v << 16)) | (sp_u32)(lane * 8 + e);
                }
            }
        }]], {bm = c.bm, bn = c.bn, row = c.bn + 8, first = first, step = step, words = c.slots + 1, slots = c.slots,
              ntiles = string.format("(%s + %d - 1) / %d", cold and cold.cols or "N", c.bn, c.bn),
              tile = cold and cold.tile or "pid_n",
              -- the running count's atomic is issued before the pool's result is needed: both in flight
              route_issue = routed
                and "            const sp_u32 old = live ? atomicAdd(row_info + grow, (sp_u32)count) : 0u;" or "",
              route = routed and text.fill([[
            if (live) {
                const sp_u32 before = old & 0x3fffffffu;
                const bool reach = ${route} > 0 && before < ${route}u && before + (sp_u32)count >= ${route}u;
                if ((lost || reach) && !(old & 0x80000000u)) sp_twell_route(row_info, M, grow, dense_capacity);
            }]], {route = c.route}) or ""})
end

-- TwELL packing straight from the accumulators (epi = regs: no staging tile, so the pipeline keeps
-- its shared memory for a fourth stage). The four lanes of a quad hold a row's bn columns between
-- them (lane q: columns j * 8 + q * 2 + b, lib/wgmma.lua); each lane makes a mask of its nonzeros
-- (bit 2j + b, over two words), the quad swaps masks, and an entry's slot is the count of nonzeros in
-- earlier columns: every lane's below its 8-column group, the lower lanes' in it, its own lower bit.
-- The same words in the same order as twell_pack_rows writes (deterministic, no atomics for slots);
-- a row's atomics go to one lane of its quad, and with c.route its routing (which needs its count's
-- atomic back) waits for the next tile. A value is nonzero after relu and bf16 rounding exactly when it
-- is above 2^-134 (half the least bf16 subnormal; NaN is not, as fmaxf makes it 0). Returns {stage =
-- the tile's epilogue, pre, post = what runs before the first tile and after the last (nil without
-- c.route)} for lib/mainloop.lua's persistent kernel. The stage expects in scope: acc, lane, warp, n0,
-- t (the tile), M, N, packed, pool, pool_counter, pool_capacity (and row_info, dense_capacity with
-- c.route); hot as in M.overlap_body (lib/twell_produce.lua): tiles of the first hot.cols columns go to
-- hot_h as bf16 instead.
function M.twell_pack_regs(d, c, hot)
  local routed = (c.route or -1) >= 0
  if d.nt > 32 or d.nt % 4 ~= 0 then error("epilogue.twell_pack_regs: a lane's masks hold 4 to 32 column groups", 2) end
  local hot_part, tile, cols = "", "pid_n", "N"
  if hot then
    tile, cols = "(pid_n - hot_tiles)", "(N - hot_n)"
    hot_part = text.fill([[
            const int hot_n = ${H}, hot_tiles = (hot_n + ${bn} - 1) / ${bn};
            if (pid_n < hot_tiles) {   /* a hot tile: relu(gate) to hot_h (H is a multiple of 8: whole pairs) */
                #pragma unroll
                for (int i = 0; i < ${mt}; ++i) {
                    #pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int grow = m0 + ${arow} + (lane >> 2) + h * 8;
                        if (grow >= M) continue;
                        #pragma unroll
                        for (int j = 0; j < ${nt}; ++j) {
                            const int col = n0 + j * 8 + q * 2;
                            if (col < hot_n)
                                *(sp_u32 *)(hot_h + (size_t)grow * hot_n + col) =
                                    sp_pack_bf16x2(fmaxf(acc[i][j][2 * h], 0.0f), fmaxf(acc[i][j][2 * h + 1], 0.0f));
                        }
                    }
                }
                continue;
            }]], {H = hot.cols, bn = c.bn, mt = d.mt, nt = d.nt, arow = d.acc_row})
  end
  local flush = text.fill([[
        #pragma unroll
        for (int i = 0; i < ${mt}; ++i)
            if (pend_row[i] >= 0) {   /* the count before this row's tile, and the tile's (bit 31: lost) */
                const sp_u32 before = pend_old[i] & 0x3fffffffu, cnt = pend_cnt[i] & 0x7fffffffu;
                const bool reach = ${route} > 0 && before < ${route}u && before + cnt >= ${route}u;
                if (((pend_cnt[i] >> 31) || reach) && !(pend_old[i] & 0x80000000u))
                    sp_twell_route(row_info, M, pend_row[i], dense_capacity);
                pend_row[i] = -1;
            }]], {mt = d.mt, route = c.route or 0})
  local stage = text.fill([[
        {${flush}
            const int pid_n = SP_PID_N(t), m0 = SP_PID_M(t) * ${bm};
            const int q = lane & 3, quad = lane & ~3;
${hot}
            const int ntiles = (${cols} + ${bn} - 1) / ${bn};
            const unsigned long long pool_room = min(pool_capacity, 0x40000000ull); /* offsets have 30 bits */
            const float tiny = __int_as_float(0x00008000);   /* 2^-134 */
            sp_u32 valid0 = ~0u, valid1 = ~0u;   /* this lane's columns inside N, bit 2j + b as below */
            if (n0 + ${bn} > N) {
                /* column j * 8 + q * 2 + b is inside when j * 8 + b < lim: groups j < e0 (b = 0), j < e1 (b = 1) */
                const int lim = N - n0 - q * 2, e0 = lim <= 0 ? 0 : (lim + 7) / 8, e1 = lim <= 1 ? 0 : (lim + 6) / 8;
                valid0 = (0x55555555u & sp_bits_below(2 * e0)) | (0xaaaaaaaau & sp_bits_below(2 * e1));
                valid1 = (0x55555555u & sp_bits_below(2 * e0 - 32)) | (0xaaaaaaaau & sp_bits_below(2 * e1 - 32));
            }
            #pragma unroll
            for (int i = 0; i < ${mt}; ++i) {
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int grow = m0 + ${arow} + (lane >> 2) + h * 8;
                    const bool live = grow < M;
                    /* bit 2j + b of (own1:own0): column j * 8 + q * 2 + b is nonzero */
                    sp_u32 own0 = 0u, own1 = 0u;
                    #pragma unroll
                    for (int j = 0; j < ${nt}; ++j) {
                        const sp_u32 two = ((acc[i][j][2 * h] > tiny ? 1u : 0u) | (acc[i][j][2 * h + 1] > tiny ? 2u : 0u)) << (2 * (j & 15));
                        if (j < 16) own0 |= two; else own1 |= two;
                    }
                    own0 &= valid0;
                    own1 &= valid1;
                    sp_u32 qm0[4], qm1[4];   /* the quad's masks, by lane */
                    #pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        qm0[k] = __shfl_sync(0xffffffffu, own0, quad | k);
                        qm1[k] = __shfl_sync(0xffffffffu, own1, quad | k);
                    }
                    int count = 0;
                    #pragma unroll
                    for (int k = 0; k < 4; ++k) count += __popc(qm0[k]) + __popc(qm1[k]);
                    sp_u32 *const w = packed + ((size_t)grow * ntiles + ${tile}) * ${words};
                    sp_u32 word0 = (sp_u32)count;
                    int lost = 0;
                    if (q == h && live) {   /* the row's atomics and first word: one lane of the quad */${route_issue}
                        if (count > ${slots}) {
                            const unsigned long long off = atomicAdd(pool_counter, (unsigned long long)(count + 1));
                            /* no room: the counter says how much was needed; the tile is marked lost */
                            lost = off + (unsigned long long)count + 1ull > pool_room;
                            if (!lost) {
                                pool[off] = (sp_u32)count;
                                word0 = 0x80000000u | (sp_u32)off;
                            }
                        }${route}
                        w[0] = lost ? 0xC0000000u : word0;
                    }
                    if (count > ${slots}) {   /* the quad agrees on count */
                        word0 = __shfl_sync(0xfu << quad, word0, quad | h);
                        lost = __shfl_sync(0xfu << quad, lost, quad | h);
                    }
                    if (!live || lost || (own0 | own1) == 0u) continue;
                    sp_u32 *const dst = count > ${slots} ? pool + (word0 & 0x3fffffffu) + 1 : w + 1;
                    #pragma unroll
                    for (int g = 0; g < ${nt} / 4; ++g) {   /* four column groups (a byte of the mask) at a time */
                        if ((((g < 4 ? own0 : own1) >> (8 * (g & 3))) & 0xffu) == 0u) continue;
                        #pragma unroll
                        for (int j = 4 * g; j < 4 * g + 4; ++j) {
                            const unsigned two = ((j < 16 ? own0 : own1) >> (2 * (j & 15))) & 3u;
                            if (two == 0u) continue;
                            /* the row's nonzeros before column j * 8 + q * 2: bits below 2j (all lanes), below 2j + 2 (lower lanes) */
                            int slot = 0;
                            #pragma unroll
                            for (int k = 0; k < 4; ++k)
                                slot += sp_popc_below(qm0[k], qm1[k], k < q ? 2 * j + 2 : 2 * j);
                            const sp_u32 v = sp_pack_bf16x2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                            const sp_u32 col = (sp_u32)(j * 8 + q * 2);
                            if (two & 1u) dst[slot++] = (v << 16) | col;
                            if (two & 2u) dst[slot] = (v & 0xffff0000u) | (col + 1u);
                        }
                    }
                }
            }
        }]], {bm = c.bm, bn = c.bn, mt = d.mt, nt = d.nt, arow = d.acc_row, words = c.slots + 1, slots = c.slots,
              hot = hot_part, tile = tile, cols = cols, flush = routed and ("\n" .. flush) or "",
              -- a row without nonzeros in the tile adds nothing to its count: no atomic, nothing to route
              route_issue = routed and [[

                        const sp_u32 old = count > 0 ? atomicAdd(row_info + grow, (sp_u32)count) : 0u;]] or "",
              route = routed and [[

                        if (count > 0) {
                            pend_row[i] = grow;
                            pend_old[i] = old;
                            pend_cnt[i] = (sp_u32)count | (lost ? 0x80000000u : 0u);
                        }]] or ""})
  if not routed then return {stage = stage} end
  return {stage = stage, pre = text.fill([[
        /* a row's routing needs its count's atomic back: checked at the next tile, when it has long returned */
        int pend_row[${mt}];
        sp_u32 pend_old[${mt}], pend_cnt[${mt}];
        #pragma unroll
        for (int i = 0; i < ${mt}; ++i) pend_row[i] = -1;]], {mt = d.mt}), post = flush}
end

-- The device functions twell_pack_regs counts with: the low n bits set (n of 0 .. 32, clamped), and the
-- set bits of the 64-bit mask (hi:lo) below bit n.
M.popc_below_device = cuda_file("popc_below")

-- The device function the routing above calls (emitted once per source when c.route is set): the
-- row's flag taken once (atomicOr), then a slot in the list; no slot left, the flag is given back
-- and the row stays on the sparse path (which recomputes lost tiles: exact either way).
M.twell_route_device = cuda_file("twell_route")

-- Both steps by the whole CTA after its main loop.
function M.twell_pack(d, c) return through_smem(d, M.twell_stage(d, c), M.twell_pack_rows(c, "warp", d.warps)) end

return M
