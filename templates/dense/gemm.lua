-- gemm: C = A * B^T, bf16 in, fp32 accumulate, bf16 out, any M, N, K.
-- A is M x K, B is N x K, C is M x N, all row-major (B as nn.Linear keeps its weight). The
-- baseline check of the whole pipeline, and the main loop the TwELL producer reuses.
local text = require("lib.text")
local args = require("lib.args")
local cuda = require("lib.cuda")
local mainloop = require("lib.mainloop")
local epilogue = require("lib.epilogue")

local params = {}
for _, p in ipairs(mainloop.params) do params[#params + 1] = p end
params[#params + 1] = {name = "group_m", values = {1, 8}, default = 8,
                       doc = "CTA rows walked together along M before moving along N (L2 reuse)"}
params[#params + 1] = {name = "epi", values = {"inline", "overlap"}, default = "inline",
  doc = "the store: by the whole CTA after its main loop, or (wgmma + tma) by store warps of a persistent CTA"
    .. " while the next tile's main loop runs"}

local function kernel_name(c) return text.kernel_name("sp_gemm", c, params) end

local constraints = mainloop.constraints(function(p) return p.K end)
constraints[#constraints + 1] = {why = "the overlapped store needs the wgmma main loop with tma",
  check = function(c) return c.epi == "inline" or (c.mainloop == "wgmma" and c.load == "tma") end}
constraints[#constraints + 1] = {why = "pipeline and staging tile fit in shared memory",
  check = function(c, gpu)
    if c.mainloop ~= "wgmma" then return true end
    local need = c.epi == "overlap" and mainloop.persistent_smem(c, epilogue.staging_bytes(c))
                 or epilogue.staging_bytes(c)
    if need > gpu.smem_per_block then return false, string.format("%d bytes > %d", need, gpu.smem_per_block) end
    return true
  end}

local function threads(c)
  return c.epi == "overlap" and mainloop.persistent_threads(c, mainloop.STORERS) or mainloop.derive(c).threads
end

-- The kernel body: the mma.sync loop stores from its registers; the wgmma loop stages the tile in
-- shared memory and stores it coalesced (after its main loop, or overlapped with the next tile's).
local function body(c)
  local l = mainloop.loop(c)
  local d = l.derive(c)
  if c.epi == "overlap" then
    return mainloop.store_body(c, epilogue.store_rows(c, "pw", mainloop.STORERS))
  end
  return text.lines({l.cta_prologue(c), l.mainloop(c),
                     c.mainloop == "wgmma" and epilogue.store_staged(d, c) or epilogue.store_bf16(d)})
end

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
  description = "dense GEMM C = A*B^T (bf16 in, fp32 accumulate, bf16 out) on tensor cores (mma.sync, or wgmma +"
    .. " TMA on sm_90a)",
  args = ARGS,
  dims = {"M", "N", "K"},
  tokens = "M",   -- a launch may pass fewer tokens than the problem: one kernel per maximum batch
  params = params,
  constraints = constraints,
  -- on Hopper the wgmma + TMA main loop (docs/journal/2026-11-29-30.md: the gemm table)
  defaults = function(gpu) return mainloop.hopper_default(gpu, "bm=128,bn=256,stages=4") end,

  kernel = function(c, gpu) return kernel_name(c) end,

  launch = function(c, p, gpu)
    return mainloop.launch{c = c, M = p.M, N = p.N, K = p.K, a = "A", b = "B", gpu = gpu,
                           smem = c.mainloop == "wgmma" and epilogue.staging_bytes(c) or 0,
                           persistent = c.epi == "overlap" and mainloop.store_persistent(c) or nil}
  end,

  emit = function(c, p, gpu)
    return cuda.prelude .. "\n" .. mainloop.device(c) .. "\n"
      .. mainloop.kernel(threads(c), kernel_name(c), args.params(ARGS) .. mainloop.kernel_params(c), body(c))
  end,
}
