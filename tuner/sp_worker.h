/* A measurement worker process: candidates run in a child process, so that a kernel that
 * faults (illegal address, a sticky CUDA error, a crash of the driver or compiler) or hangs
 * costs one recorded outcome, not the tuning run. The child runs task->init once, then evaluates
 * configurations sent over a pipe. A child that dies is recorded as launch_failed, one that
 * outlives the timeout is killed and recorded as timed_out, and a fresh child serves the next
 * configuration.
 *
 * Two ways to start the child: forked (the task's functions run in the copy of this process;
 * only when this process has not initialised CUDA, which a forked child cannot use), or executed
 * (task.argv: a fresh program, which calls sp_worker_serve(task, SP_WORKER_FD_IN,
 * SP_WORKER_FD_OUT) with its own task; this is what the CLI does, since it queries the GPUs). */
#ifndef SP_WORKER_H
#define SP_WORKER_H

#include "sp_eval.h"
#include "sp_tune.h"

typedef struct sp_worker_task {
    void *ud;
    /* In the child, once, before its first evaluation (GPU context, inputs, reference). */
    sptune_status (*init)(void *ud);
    /* In the child, for each configuration. */
    sptune_status (*evaluate)(void *ud, const sp_config *c, sp_eval *out);
    /* Optional, in the child: the baseline's timing for this problem (in out->timing). */
    sptune_status (*baseline)(void *ud, sp_eval *out);
    /* When set, the child executes this program (argv[0] a path, NULL-terminated) instead of
     * running the functions above in a fork (the worker keeps a copy). */
    char *const *argv;
} sp_worker_task;

/* The pipe ends an executed worker finds open. */
enum { SP_WORKER_FD_IN = 3, SP_WORKER_FD_OUT = 4 };

/* The child's side: serves requests from fd `in` until it closes; returns an exit status. */
int sp_worker_serve(const sp_worker_task *task, int in, int out);

typedef struct sp_worker sp_worker;

/* timeout_s: the longest one evaluation may take (compile + verify + timing). */
sptune_status sp_worker_create(const sp_worker_task *task, double timeout_s, sp_worker **out);
/* A failing candidate is an outcome in out; an error means the child could not be initialised
 * or an evaluation itself failed (not the candidate), and is returned as such. */
sptune_status sp_worker_evaluate(sp_worker *w, const sp_config *c, sp_eval *out);
/* The baseline timed in the worker (task.baseline); a worker that dies or hangs here is an error. */
sptune_status sp_worker_baseline(sp_worker *w, sp_eval *out);
long long sp_worker_restarts(const sp_worker *w);
void sp_worker_destroy(sp_worker *w);

/* The tuning loop's backend evaluating through w. */
sp_tune_backend sp_worker_backend(sp_worker *w);

#endif
