/* Workloads: the problems the main job tunes. The built-in default comes from common LLM shapes, the
 * product first: the whole TwELL layer and the Slot-Filling projections take the largest shares of a
 * budget, the TwELL parts less, and gemm (the dense reference) the least;
 * a user's list is a text file, one problem per line:
 *
 *     # comment
 *     gemm       M=4096,N=4096,K=4096
 *     twell-d2t  M=16384,D=2048,F=5632,nnz=40     the rest of a line after the problem is a note
 *
 * (op, whitespace, problem in the op's `sptune space --shape` syntax, optional note). Sharding
 * (`--shard i/n`) keeps the problems whose position (from 1) is i modulo n, so n machines
 * running shards 1/n .. n/n cover the list exactly once. */
#ifndef SP_WORKLOAD_H
#define SP_WORKLOAD_H

#include "sptune.h"

typedef struct sp_workload_item {
    const char *op;
    const char *problem;   /* sp_problem_parse syntax */
    const char *why;       /* where the shape comes from */
    double share;          /* its weight in a budget shared over the list (a user's file: 1 each) */
} sp_workload_item;

typedef struct sp_workload {
    sp_workload_item *items;
    int n;
    char *storage;         /* the file's text, when loaded from one */
} sp_workload;

/* The built-in list (no allocation beyond the item array). */
sptune_status sp_workload_default(sp_workload *w);
/* A user's list; errors name the file and line. Ops and problems are checked by the caller. */
sptune_status sp_workload_load(const char *path, sp_workload *w);
/* "i/n" with 1 <= i <= n: keeps that shard. */
sptune_status sp_workload_shard(sp_workload *w, const char *spec);
void sp_workload_free(sp_workload *w);

#endif
