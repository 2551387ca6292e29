-- The TwELL producer, shared by twell-d2t (alone) and twell-ffn (first kernel of the pipeline):
-- relu(A B^T) on the mma.sync main loop (lib/mma_sync.lua), packed to TwELL straight from the
-- epilogue (lib/epilogue.lua), so the dense activations never reach device memory. The CTA's
-- bn is the TwELL tile width T.
local text = require("lib.text")
local mma = require("lib.mma_sync")
local epilogue = require("lib.epilogue")

local M = {}

M.params = {}
for _, p in ipairs(mma.params) do M.params[#M.params + 1] = p end
M.params[#M.params + 1] = {name = "group_m", values = {1, 8}, default = 8,
                           doc = "CTA rows walked together along M before moving along N (L2 reuse)"}
M.params[#M.params + 1] = {name = "slots", values = {7, 15, 31, 63}, default = 31,
                           doc = "TwELL slots per (row, tile): more slots, fewer overflows, more bytes"}

M.constraints = {}
for _, k in ipairs(mma.constraints) do M.constraints[#M.constraints + 1] = k end
M.constraints[#M.constraints + 1] = {why = "slots fit in a tile", check = function(c) return c.slots < c.bn end}
M.constraints[#M.constraints + 1] = {why = "packing stage fits in shared memory",
  check = function(c, gpu) return epilogue.twell_pack_smem(c) <= gpu.smem_per_block end}

M.name_keys = {"bm", "bn", "bk", "wm", "wn", "stages", "swizzle", "prefetch", "group_m", "slots"}

-- M rows of A against F rows of B.
function M.launch(c, rows, F)
  local d = mma.derive(c)
  local tiles = ((rows + c.bm - 1) // c.bm) * ((F + c.bn - 1) // c.bn)
  return {grid = {tiles, 1, 1}, block = {d.threads, 1, 1}, smem = math.max(d.smem, epilogue.twell_pack_smem(c))}
end

-- The kernel body. Expects in scope: A (rows x K), B (N x K), packed, pool, pool_counter,
-- pool_capacity, M, N, K.
function M.body(c)
  local d = mma.derive(c)
  return text.lines({mma.cta_prologue(c), mma.mainloop(c), epilogue.twell_pack(d, c)})
end

function M.threads(c) return mma.derive(c).threads end

return M
