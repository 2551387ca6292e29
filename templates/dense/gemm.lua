-- gemm: C = A * B^T, bf16 in, fp32 accumulate, bf16 out, any M, N, K.
-- A is M x K, B is N x K, C is M x N, all row-major (B as nn.Linear keeps its weight). The
-- baseline check of the whole pipeline, and the main loop the TwELL producer reuses.
local text = require("lib.text")
local args = require("lib.args")
local cuda = require("lib.cuda")
local mma = require("lib.mma_sync")
local epilogue = require("lib.epilogue")

local params = {}
for _, p in ipairs(mma.params) do params[#params + 1] = p end
params[#params + 1] = {name = "group_m", values = {1, 8}, default = 8,
                       doc = "CTA rows walked together along M before moving along N (L2 reuse)"}

local function kernel_name(c) return text.kernel_name("sp_gemm", c, params) end

local ARGS = {
  {name = "A", type = "bf16", role = "input", shape = {"M", "K"}},
  {name = "B", type = "bf16", role = "input", shape = {"N", "K"},
   doc = "row n: output column n, as nn.Linear keeps its weight"},
  {name = "C", type = "bf16", role = "output", shape = {"M", "N"}},
  {name = "M", type = "i32", role = "dim"},
  {name = "N", type = "i32", role = "dim"},
  {name = "K", type = "i32", role = "dim"},
}

return {
  name = "gemm",
  family = "dense",
  description = "dense GEMM C = A*B^T (bf16 in, fp32 accumulate, bf16 out) on mma.sync tensor cores",
  args = ARGS,
  dims = {"M", "N", "K"},
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = mma.constraints,

  kernel = function(c, gpu) return kernel_name(c) end,

  launch = function(c, p, gpu)
    local d = mma.derive(c)
    local tiles = ((p.M + c.bm - 1) // c.bm) * ((p.N + c.bn - 1) // c.bn)
    return {grid = {tiles, 1, 1}, block = {d.threads, 1, 1}, smem = d.smem}
  end,

  emit = function(c, p, gpu)
    local d = mma.derive(c)
    return text.fill([[
${prelude}
extern "C" __global__ void __launch_bounds__(${threads}, 1)
${name}(${params})
{
${prologue}
${mainloop}
${epilogue}
}
]], {name = kernel_name(c), params = args.params(ARGS), prelude = cuda.prelude, threads = d.threads,
     prologue = mma.cta_prologue(c),
     mainloop = mma.mainloop(c), epilogue = epilogue.store_bf16(d)})
  end,
}
