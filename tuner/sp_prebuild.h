/* Compiling ahead: NVRTC builds of the configurations a search is about to measure, in parallel
 * child processes, into the kernel cache, while the measurement worker times the ones already
 * built. Compiling dominates a tuning run (about a second per variant against a few hundred
 * milliseconds of measuring); with the builds spread over the CPU cores the worker mostly finds
 * its kernels in the cache. Purely an acceleration: a configuration not built ahead is compiled
 * by the worker itself, and a build failure here is left for the worker to record. */
#ifndef SP_PREBUILD_H
#define SP_PREBUILD_H

#include "sp_cache.h"
#include "sp_search.h"
#include "sp_template.h"

typedef struct sp_prebuild sp_prebuild;

/* The number of builders for this machine: the online CPUs less one for the measuring side,
 * at least 1, at most 32. */
int sp_prebuild_default_jobs(void);

/* Starts `jobs` builders over the configurations `kind` (seeded with seed) proposes first in
 * space, at most `limit` of them (0: all). The builders are forked, so the caller must not hold
 * locks another thread could be in (the CLI is single-threaded). cache may not be NULL. */
sptune_status sp_prebuild_start(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                                const sp_configs *space, sp_search_kind kind, unsigned long long seed,
                                long long limit, sp_cache *cache, int jobs, sp_prebuild **out);
/* What the builders were given (planned) and have done so far: built (or found in the cache) and failed; all 0
 * for NULL. */
void sp_prebuild_counts(const sp_prebuild *pb, long long *planned, long long *built, long long *failed);
/* The tuner's best so far (an index into space): the builders build its one-parameter neighbours next, which a
 * descent proposes once it moves there (the predicted order assumed it would not). NULL pb or the same index: nothing. */
void sp_prebuild_hint(sp_prebuild *pb, long long index);
/* Waits for every builder to finish its share (then builders waiting for hints stop), then frees pb (NULL is fine). */
void sp_prebuild_wait(sp_prebuild *pb);
/* Stops the builders still running (a build cut short leaves nothing in the cache: its
 * writes are atomic) and frees pb (NULL is fine). */
void sp_prebuild_stop(sp_prebuild *pb);

#endif
