#include "sp_prebuild.h"
#include "sp_eval.h"
#include "sp_status.h"
#include "sp_variant.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define SP_PREBUILD_AHEAD 512

struct sp_prebuild {
    int n;
    pid_t pids[32];
    long long planned;
    long long *counts;   /* shared with the builders: [0] built (or found in the cache), [1] failed */
};

int sp_prebuild_default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN) - 1;
    return n < 1 ? 1 : n > 32 ? 32 : (int)n;
}

/* The order the strategy would propose in, without results (exactly the order for exhaustive
 * and random; for descent its opening moves: the default and its neighbours, then the rest). */
static sptune_status proposal_order(const sp_template *t, const sp_configs *space, sp_search_kind kind,
                                    unsigned long long seed, long long limit, long long **order, long long *n)
{
    sp_search *s;
    sptune_status st = sp_search_create(kind, t, space, seed, &s);
    if (st != SPTUNE_OK) return st;
    /* without a limit on evaluations (a time budget), the next few hundred: predicting the whole order
     * of a large space costs a scan of it per proposal (183,696 twell-ffn configurations: minutes
     * before the first measurement), and no time budget measures that many */
    const long long want = limit > 0 ? limit : SP_PREBUILD_AHEAD;
    long long cap = want < space->n ? want : space->n, i, k = 0;
    *order = malloc((size_t)(cap > 0 ? cap : 1) * sizeof **order);
    if (!*order) { sp_search_free(s); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    while (k < cap && sp_search_next(s, &i)) {
        /* The first as if it passed (descent then turns to its neighbours), the rest as if they
         * failed (descent then restarts at random): no results are known yet. */
        sp_search_report(s, i, k == 0, 1.0);
        (*order)[k++] = i;
    }
    sp_search_free(s);
    *n = k;
    return SPTUNE_OK;
}

sptune_status sp_prebuild_start(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                                const sp_configs *space, sp_search_kind kind, unsigned long long seed,
                                long long limit, sp_cache *cache, int jobs, sp_prebuild **out)
{
    *out = NULL;
    if (!cache) return sp_fail(SPTUNE_ERR_INVALID, "prebuild: needs the kernel cache");
    long long *order = NULL, n = 0;
    sptune_status st = proposal_order(t, space, kind, seed, limit, &order, &n);
    if (st != SPTUNE_OK) return st;
    sp_prebuild *pb = calloc(1, sizeof *pb);
    if (!pb) { free(order); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    /* the builders' tallies, for the progress line (none when the mapping fails: the builds still happen) */
    void *shared = mmap(NULL, 2 * sizeof(long long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pb->counts = shared == MAP_FAILED ? NULL : shared;
    pb->planned = n;
    if (jobs > 32) jobs = 32;
    if (jobs > n) jobs = (int)n;
    fflush(NULL);
    pid_t parent = getpid();
    for (int j = 0; j < jobs; j++) {
        pid_t pid = fork();
        if (pid < 0) break; /* fewer builders; the worker compiles the rest */
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphaned compilers after a kill -9 of the tuner */
            if (getppid() != parent) _exit(0);
            /* Builder j takes every jobs-th configuration, so that all start near the front. */
            for (long long k = j; k < n; k += jobs) {
                sp_kernel_src src;
                sp_cubin cub;
                const int ok = sp_variant_build(t, &space->v[order[k]], gpu, p, cache, &src, &cub) == SPTUNE_OK;
                if (ok) sp_kernel_src_free(&src);
                sp_cubin_free(&cub);
                if (pb->counts) __atomic_fetch_add(&pb->counts[ok ? 0 : 1], 1, __ATOMIC_RELAXED);
            }
            _exit(0); /* no atexit handlers: the parent's database and files are its own */
        }
        pb->pids[pb->n++] = pid;
    }
    free(order);
    *out = pb;
    return SPTUNE_OK;
}

static void reap(sp_prebuild *pb, int kill_first)
{
    if (!pb) return;
    if (kill_first)
        for (int j = 0; j < pb->n; j++) kill(pb->pids[j], SIGKILL);
    for (int j = 0; j < pb->n; j++) {
        int st;
        while (waitpid(pb->pids[j], &st, 0) < 0 && errno == EINTR) {}
    }
    if (pb->counts) munmap(pb->counts, 2 * sizeof(long long));
    free(pb);
}

void sp_prebuild_counts(const sp_prebuild *pb, long long *planned, long long *built, long long *failed)
{
    *planned = pb ? pb->planned : 0;
    *built = pb && pb->counts ? __atomic_load_n(&pb->counts[0], __ATOMIC_RELAXED) : 0;
    *failed = pb && pb->counts ? __atomic_load_n(&pb->counts[1], __ATOMIC_RELAXED) : 0;
}

void sp_prebuild_wait(sp_prebuild *pb) { reap(pb, 0); }

void sp_prebuild_stop(sp_prebuild *pb) { reap(pb, 1); }
