/* A measurement worker process: candidates run in a child process, so that a kernel that
 * faults (illegal address, a sticky CUDA error, a crash of the driver or compiler) or hangs
 * costs one recorded outcome, not the tuning run. The child is forked before it touches the GPU
 * (the parent never initialises CUDA), runs task->init once, then evaluates configurations sent
 * over a pipe. A child that dies is recorded as launch_failed, one that outlives the timeout is
 * killed and recorded as timed_out, and a fresh child serves the next configuration. */
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
} sp_worker_task;

typedef struct sp_worker sp_worker;

/* timeout_s: the longest one evaluation may take (compile + verify + timing). */
sptune_status sp_worker_create(const sp_worker_task *task, double timeout_s, sp_worker **out);
/* A failing candidate is an outcome in out; an error means the child could not be initialised
 * or an evaluation itself failed (not the candidate), and is returned as such. */
sptune_status sp_worker_evaluate(sp_worker *w, const sp_config *c, sp_eval *out);
long long sp_worker_restarts(const sp_worker *w);
void sp_worker_destroy(sp_worker *w);

/* The tuning loop's backend evaluating through w. */
sp_tune_backend sp_worker_backend(sp_worker *w);

#endif
