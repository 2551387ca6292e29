-- A test-only gemm for the fault-injection test (tests/gpu_faults.sh): a plain one-thread-per-
-- output kernel with the gemm op's signature, and a `fault` parameter whose variants write far
-- out of bounds (an illegal address: the context is lost), trap, or spin forever. The tuner must
-- record them as failures, replace its worker, and still find a winner among the sound ones.
-- Used through SPTUNE_TEMPLATES=tests/fault-templates; never embedded.
return {
  name = "gemm",
  family = "dense",
  description = "TEST ONLY: naive gemm with injected faults",
  dims = {"M", "N", "K"},
  -- the real gemm's arguments (the harness binds them by name)
  args = {
    {name = "A", type = "bf16", role = "input", shape = {"M", "K"}},
    {name = "B", type = "bf16", role = "input", shape = {"N", "K"}},
    {name = "C", type = "bf16", role = "output", shape = {"M", "N"}},
    {name = "M", type = "i32", role = "dim"},
    {name = "N", type = "i32", role = "dim"},
    {name = "K", type = "i32", role = "dim"},
  },
  params = {
    {name = "threads", values = {64, 128, 256}, default = 128, doc = "threads per block"},
    {name = "fault", values = {"none", "oob", "trap", "spin"}, default = "none", doc = "the injected fault"},
  },
  constraints = {},
  kernel = function(c) return "sp_fault_gemm_" .. c.threads .. "_" .. c.fault end,
  launch = function(c, p)
    return {grid = {(p.M * p.N + c.threads - 1) // c.threads}, block = {c.threads}}
  end,
  emit = function(c)
    local fault = ({
      none = "",
      oob = "if (i == 0) C[(size_t)1 << 40] = out;",
      trap = "if (i == 0) asm volatile(\"trap;\");",
      spin = "if (i == 0) for (;;) { if (clock64() < 0) break; }",
    })[c.fault]
    return ([[
typedef unsigned short sp_bf16;
__device__ __forceinline__ float sp_bf2f(sp_bf16 h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ sp_bf16 sp_f2bf(float f)
{
    unsigned u = __float_as_uint(f);
    return (sp_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
extern "C" __global__ void %s(const sp_bf16 *A, const sp_bf16 *B, sp_bf16 *C, int M, int N, int K)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)M * N) return;
    int m = (int)(i / N), n = (int)(i %% N);
    float acc = 0.f;
    for (int k = 0; k < K; k++) acc += sp_bf2f(A[(size_t)m * K + k]) * sp_bf2f(B[(size_t)n * K + k]);
    sp_bf16 out = sp_f2bf(acc);
    %s
    C[i] = out;
}
]]):format("sp_fault_gemm_" .. c.threads .. "_" .. c.fault, fault)
  end,
}
