#include "sp_workload.h"

#include <stddef.h>

/* Token counts of a prefill batch; hidden sizes of Llama-3-8B (4096 / 14336). */
const sp_workload_item sp_default_workload[] = {
    {"gemm", "M=4096,N=4096,K=4096", "square reference shape"},
    {"gemm", "M=4096,N=14336,K=4096", "Llama-3-8B FFN gate/up projection, 4096 tokens"},
    {"gemm", "M=4096,N=4096,K=14336", "Llama-3-8B FFN down projection, 4096 tokens"},
    {NULL, NULL, NULL},
};
