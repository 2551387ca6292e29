-- Pieces of CUDA C the Slot-Filling kernels share (lib/slotfill_bitmap.lua, lib/slotfill_sp24.lua and
-- the three-layer kernel in slotfill/slotfill-spmm.lua).
local M = {}

-- sp_out16: an fp32 sum to the problem's 16-bit type (fp16 when f16, else bf16), rounded to nearest even.
function M.out16(f16)
  local body = f16 and "    unsigned short r;\n    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x));\n    return r;"
               or "    return sp_f32_to_bf16(x);"
  return "__device__ __forceinline__ unsigned short sp_out16(float x)\n{\n" .. body .. "\n}"
end

-- sp_mma_sp<SEL>: D += A B on the sparse tensor cores (mma.sp m16n8k32, fp32 accumulators): A 2:4 in four
-- registers, B in four, the metadata word e, the sparsity selector SEL (which lanes' metadata is read).
function M.mma_sp(f16)
  local ins = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32." .. (f16 and "f16.f16" or "bf16.bf16") .. ".f32"
  return "template <int SEL> __device__ __forceinline__ void sp_mma_sp(float *d, const sp_u32 *a, const sp_u32 *b, " ..
         "sp_u32 e)\n{\n    asm volatile(\"" .. ins .. " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9, %10, %11}, " ..
         "{%0, %1, %2, %3}, %12, %13;\\n\"\n" ..
         "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n" ..
         "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]), " ..
         "\"r\"(b[2]), \"r\"(b[3]), \"r\"(e), \"n\"(SEL));\n}"
end

return M
