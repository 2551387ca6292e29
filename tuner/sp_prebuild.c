#include "sp_prebuild.h"
#include "sp_space.h"
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

/* What the builders share with the tuner (an anonymous shared mapping): their tallies, and the hint. */
enum { BUILT, FAILED, HINT, HINT_SEQ, DONE, NSHARED };

struct sp_prebuild {
    int n;
    pid_t pids[32];
    long long planned;
    long long *counts;   /* NSHARED words shared with the builders (NULL where the mapping failed) */
    long long hinted;    /* the last hint given */
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

static void build_one(sp_prebuild *pb, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                      const sp_config *c, sp_cache *cache)
{
    sp_kernel_src src;
    sp_cubin cub;
    const int ok = sp_variant_build(t, c, gpu, p, cache, &src, &cub) == SPTUNE_OK;
    if (ok) sp_kernel_src_free(&src);
    sp_cubin_free(&cub);
    if (pb->counts) __atomic_fetch_add(&pb->counts[ok ? BUILT : FAILED], 1, __ATOMIC_RELAXED);
}

/* The configurations one parameter away from space->v[hint] (what a descent proposes around its best), every
 * jobs-th from the j-th: those not in the cache yet are built (the rest cost a lookup). */
static void build_neighbours(sp_prebuild *pb, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                             const sp_configs *space, long long hint, int j, int jobs, sp_cache *cache)
{
    if (hint < 0 || hint >= space->n) return;
    long long m = 0;
    for (long long i = 0; i < space->n; i++)
        if (sp_config_distance(&space->v[i], &space->v[hint]) == 1 && m++ % jobs == j)
            build_one(pb, t, gpu, p, &space->v[i], cache);
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
    /* the builders' tallies and the hint (none when the mapping fails: the predicted builds still happen) */
    void *shared = mmap(NULL, NSHARED * sizeof(long long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pb->counts = shared == MAP_FAILED ? NULL : shared;
    pb->planned = n;
    pb->hinted = -1;
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
            /* Builder j takes every jobs-th configuration, so that all start near the front; a new hint first. */
            long long seen = 0, k = j;
            for (;;) {
                const long long seq = pb->counts ? __atomic_load_n(&pb->counts[HINT_SEQ], __ATOMIC_ACQUIRE) : 0;
                if (seq != seen) {
                    seen = seq;
                    build_neighbours(pb, t, gpu, p, space, __atomic_load_n(&pb->counts[HINT], __ATOMIC_RELAXED), j,
                                     jobs, cache);
                    continue;
                }
                if (k < n) {
                    build_one(pb, t, gpu, p, &space->v[order[k]], cache);
                    k += jobs;
                    continue;
                }
                /* the predicted order done: wait for hints until the tuner is done (sp_prebuild_wait, _stop); a hint
                 * given before it was done is seen once DONE is (it was published first) */
                if (!pb->counts) break;
                if (__atomic_load_n(&pb->counts[DONE], __ATOMIC_ACQUIRE)) {
                    if (__atomic_load_n(&pb->counts[HINT_SEQ], __ATOMIC_ACQUIRE) != seen) continue;
                    break;
                }
                usleep(20000);
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
    if (pb->counts) __atomic_store_n(&pb->counts[DONE], 1, __ATOMIC_RELEASE);
    if (kill_first)
        for (int j = 0; j < pb->n; j++) kill(pb->pids[j], SIGKILL);
    for (int j = 0; j < pb->n; j++) {
        int st;
        while (waitpid(pb->pids[j], &st, 0) < 0 && errno == EINTR) {}
    }
    if (pb->counts) munmap(pb->counts, NSHARED * sizeof(long long));
    free(pb);
}

void sp_prebuild_counts(const sp_prebuild *pb, long long *planned, long long *built, long long *failed)
{
    *planned = pb ? pb->planned : 0;
    *built = pb && pb->counts ? __atomic_load_n(&pb->counts[BUILT], __ATOMIC_RELAXED) : 0;
    *failed = pb && pb->counts ? __atomic_load_n(&pb->counts[FAILED], __ATOMIC_RELAXED) : 0;
}

void sp_prebuild_hint(sp_prebuild *pb, long long index)
{
    if (!pb || !pb->counts || index < 0 || index == pb->hinted) return;
    pb->hinted = index;
    __atomic_store_n(&pb->counts[HINT], index, __ATOMIC_RELAXED);
    __atomic_fetch_add(&pb->counts[HINT_SEQ], 1, __ATOMIC_RELEASE);
}

void sp_prebuild_wait(sp_prebuild *pb) { reap(pb, 0); }

void sp_prebuild_stop(sp_prebuild *pb) { reap(pb, 1); }
