#include "sp_workload.h"

#include <stddef.h>

/* Token counts of a prefill batch; hidden sizes of Llama-3-8B (4096 / 14336) and of the TwELL
 * paper's 1.5B model (2048 / 5632). */
const sp_workload_item sp_default_workload[] = {
    {"gemm", "M=4096,N=4096,K=4096", "square reference shape"},
    {"gemm", "M=4096,N=14336,K=4096", "Llama-3-8B FFN gate/up projection, 4096 tokens"},
    {"gemm", "M=4096,N=4096,K=14336", "Llama-3-8B FFN down projection, 4096 tokens"},
    {"twell-d2t", "M=16384,D=2048,F=5632,nnz=40", "TwELL producer, 1.5B-class FFN (d=2048, d_ff=5632), ~40 nonzeros/token"},
    {"twell-t2d", "M=16384,F=5632,D=2048,T=128,S=31,nnz=40", "TwELL down projection, same layer (T=128 matches the producer's default tile)"},
    {NULL, NULL, NULL},
};
