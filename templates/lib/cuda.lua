-- The CUDA C prelude every generated kernel starts with. No headers are included (NVRTC then
-- needs no include path): bf16 is carried as raw 16-bit words and converted with PTX.
-- Everything here exists on sm_80 and newer, sm_90a and sm_120 included.
local text = require("lib.text")
local M = {}

M.prelude = cuda_file("cuda_prelude")

-- float acc[mt][nt][4], zeroed: the tensor-core main loops' accumulators.
function M.acc_decl(mt, nt)
  return text.fill([[
    float acc[${mt}][${nt}][4];
    #pragma unroll
    for (int i = 0; i < ${mt}; ++i)
        #pragma unroll
        for (int j = 0; j < ${nt}; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;]], {mt = mt, nt = nt})
end

-- The start of a tiled kernel body: dynamic shared memory, the CTA's tile (m0, n0, pid_n) walked
-- group_m CTA rows at a time along M so that their B tiles stay in L2, and the thread's lane and
-- warp. Expects int M, N in scope and c.bm, c.bn, c.group_m.
function M.tile_order(c)
  return text.fill([[
    extern __shared__ __align__(1024) unsigned char sp_smem[];
    const int tiles_m = (M + ${bm} - 1) / ${bm}, tiles_n = (N + ${bn} - 1) / ${bn};
    const int pid = blockIdx.x;
    const int per_group = ${group_m} * tiles_n;
    const int first_m = (pid / per_group) * ${group_m};
    const int group_rows = min(tiles_m - first_m, ${group_m});
    const int pid_m = first_m + (pid % per_group) % group_rows;
    const int pid_n = (pid % per_group) / group_rows;
    const int m0 = pid_m * ${bm}, n0 = pid_n * ${bn};
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;]], {bm = c.bm, bn = c.bn, group_m = c.group_m})
end

return M
