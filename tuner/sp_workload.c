#include "sp_workload.h"
#include "sp_status.h"
#include "sp_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Token counts of a prefill batch; hidden sizes of Llama-3-8B (4096 / 14336) and of the TwELL
 * paper's 1.5B model (2048 / 5632). */
static const sp_workload_item builtin[] = {
    {"twell-ffn", "M=16384,D=2048,F=5632,nnz=40",
     "TwELL gated FFN layer (producer + gated consumer), 1.5B-class FFN (d=2048, d_ff=5632), ~40 nonzeros/token"
     " with dense tokens", 4},
    {"slotfill-spmm", "M=14336,K=4096,N=8,sparsity=50,fp16=0,dist=1",
     "Slot-Filling: Llama-3-8B gate/up projection pruned to 50% (unstructured, Wanda-like rows), 8 tokens", 2},
    {"slotfill-spmm", "M=4096,K=14336,N=16,sparsity=50,fp16=0,dist=1",
     "Slot-Filling: Llama-3-8B down projection pruned to 50%, 16 tokens", 2},
    {"twell-d2t", "M=16384,D=2048,F=5632,nnz=40", "TwELL producer, same layer", 1},
    {"twell-t2d", "M=16384,F=5632,D=2048,T=128,S=31,nnz=40",
     "TwELL down projection, same layer (T=128 matches the producer's default tile)", 1},
    {"twell-gated", "M=16384,F=5632,D=2048,T=128,S=31,nnz=40",
     "TwELL gated consumer (up for active neurons, then down), same layer", 1},
    {"gemm", "M=4096,N=4096,K=4096", "dense reference: square shape", 0.5},
    {"gemm", "M=4096,N=14336,K=4096", "dense reference: Llama-3-8B FFN gate/up projection, 4096 tokens", 0.5},
    {"gemm", "M=4096,N=4096,K=14336", "dense reference: Llama-3-8B FFN down projection, 4096 tokens", 0.5},
};

sptune_status sp_workload_default(sp_workload *w)
{
    int n = (int)(sizeof builtin / sizeof builtin[0]);
    memset(w, 0, sizeof *w);
    w->items = malloc((size_t)n * sizeof *w->items);
    if (!w->items) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    memcpy(w->items, builtin, sizeof builtin);
    w->n = n;
    return SPTUNE_OK;
}

static char *skip_space(char *p) { while (*p == ' ' || *p == '\t') p++; return p; }
static char *token_end(char *p) { while (*p && *p != ' ' && *p != '\t') p++; return p; }

sptune_status sp_workload_load(const char *path, sp_workload *w)
{
    memset(w, 0, sizeof *w);
    size_t len = 0;
    sptune_status st = sp_read_file(path, &w->storage, &len);
    if (st != SPTUNE_OK) return st;
    if (strlen(w->storage) != len) {
        sp_workload_free(w);
        return sp_fail(SPTUNE_ERR_INVALID, "%s: not a text file", path);
    }
    int cap = 0, lineno = 0;
    for (char *line = w->storage; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r') line[--l] = 0;
        char *op = skip_space(line);
        if (*op == 0 || *op == '#') { line = next; continue; }
        char *op_end = token_end(op);
        char *prob = skip_space(op_end);
        char *prob_end = token_end(prob);
        char *note = skip_space(prob_end);
        if (prob == prob_end) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s:%d: expected 'OP PROBLEM [note]', got '%s'", path, lineno, op);
            break;
        }
        *op_end = 0;
        *prob_end = 0;
        if (w->n == cap) {
            cap = cap ? cap * 2 : 16;
            sp_workload_item *it = realloc(w->items, (size_t)cap * sizeof *it);
            if (!it) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); break; }
            w->items = it;
        }
        w->items[w->n++] = (sp_workload_item){op, prob, *note ? note : path, 1.0};
        line = next;
    }
    if (st == SPTUNE_OK && w->n == 0) st = sp_fail(SPTUNE_ERR_INVALID, "%s: no problem in the workload", path);
    if (st != SPTUNE_OK) sp_workload_free(w);
    return st;
}

sptune_status sp_workload_shard(sp_workload *w, const char *spec)
{
    int i = 0, n = 0, used = 0;
    if (sscanf(spec, "%d/%d%n", &i, &n, &used) != 2 || spec[used] != 0 || n < 1 || i < 1 || i > n)
        return sp_fail(SPTUNE_ERR_INVALID, "--shard wants I/N with 1 <= I <= N, got '%s'", spec);
    int k = 0;
    for (int j = 0; j < w->n; j++)
        if (j % n == i - 1) w->items[k++] = w->items[j];
    w->n = k;
    return SPTUNE_OK;
}

void sp_workload_free(sp_workload *w)
{
    free(w->items);
    free(w->storage);
    memset(w, 0, sizeof *w);
}
