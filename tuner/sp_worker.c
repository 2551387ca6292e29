#include "sp_worker.h"
#include "sp_clock.h"
#include "sp_status.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct sp_worker {
    sp_worker_task task;
    double timeout_s;
    char **argv;        /* the task's argv, copied */
    pid_t pid;          /* 0: no child running */
    int to_child, from_child;
    long long restarts;
};

typedef struct reply {
    int status;         /* sptune_status of the evaluation itself */
    char message[1024]; /* its message when not OK */
    sp_eval eval;
} reply;

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads n bytes within deadline (CLOCK_MONOTONIC seconds; <= 0: none). 0 ok, -1 EOF/error, -2 timeout. */
static int read_all(int fd, void *buf, size_t n, double deadline)
{
    char *p = buf;
    while (n > 0) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - sp_now_s();
            if (left <= 0) return -2;
            wait_ms = (int)(left * 1000) + 1;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, wait_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return -2;
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

typedef struct request {
    int kind;           /* REQ_EVAL or REQ_BASELINE */
    sp_config config;
} request;
enum { REQ_EVAL = 1, REQ_BASELINE = 2 };

int sp_worker_serve(const sp_worker_task *task, int in, int out)
{
    int ready = 0;
    request q;
    reply *r = malloc(sizeof *r);
    if (!r) return 3;
    while (read_all(in, &q, sizeof q, 0) == 0) {
        memset(r, 0, sizeof *r);
        sptune_status st = SPTUNE_OK;
        if (!ready && task->init && (st = task->init(task->ud)) == SPTUNE_OK) ready = 1;
        if (!task->init) ready = 1;
        if (st == SPTUNE_OK) {
            if (q.kind == REQ_EVAL) st = task->evaluate(task->ud, &q.config, &r->eval);
            else if (q.kind == REQ_BASELINE && task->baseline) st = task->baseline(task->ud, &r->eval);
            else st = sp_fail(SPTUNE_ERR_INVALID, "worker: unknown request %d", q.kind);
        }
        r->status = (int)st;
        if (st != SPTUNE_OK) snprintf(r->message, sizeof r->message, "%s", sptune_last_error());
        if (r->eval.timing.method && r->eval.timing.method != r->eval.method)
            snprintf(r->eval.method, sizeof r->eval.method, "%s", r->eval.timing.method);
        r->eval.timing.method = NULL; /* a pointer means nothing in the parent */
        if (write_all(out, r, sizeof *r) != 0) break;
    }
    free(r);
    return 0;
}

/* In the forked child: pipe ends moved to the fixed descriptors, then the program executed. */
static void exec_child(char *const *argv, int in, int out)
{
    /* Above the fixed numbers first, so that moving one cannot close the other. */
    int a = fcntl(in, F_DUPFD, 10), b = fcntl(out, F_DUPFD, 10);
    if (a < 0 || b < 0 || dup2(a, SP_WORKER_FD_IN) < 0 || dup2(b, SP_WORKER_FD_OUT) < 0) _exit(126);
    close(a);
    close(b);
    if (in != SP_WORKER_FD_IN && in != SP_WORKER_FD_OUT) close(in);
    if (out != SP_WORKER_FD_IN && out != SP_WORKER_FD_OUT) close(out);
    execv(argv[0], argv);
    _exit(127);
}

/* Closes the pipes, kills the child if asked, reaps it: its wait status (0 without a child). */
static int stop_child(sp_worker *w, int kill_it)
{
    int st = 0;
    if (!w->pid) return st;
    close(w->to_child);
    close(w->from_child);
    if (kill_it) kill(w->pid, SIGKILL);
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {}
    w->pid = 0;
    return st;
}

static sptune_status start_child(sp_worker *w)
{
    int down[2], up[2];
    if (pipe(down) != 0) return sp_fail(SPTUNE_ERR_IO, "worker: pipe: %s", strerror(errno));
    if (pipe(up) != 0) {
        close(down[0]); close(down[1]);
        return sp_fail(SPTUNE_ERR_IO, "worker: pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(down[0]); close(down[1]); close(up[0]); close(up[1]);
        return sp_fail(SPTUNE_ERR_IO, "worker: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* A tuner killed with kill -9 must not leave its worker running on the GPU. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0); /* the parent died before prctl took effect */
        close(down[1]);
        close(up[0]);
        if (w->task.argv) exec_child(w->task.argv, down[0], up[1]);
        _exit(sp_worker_serve(&w->task, down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    w->pid = pid;
    w->to_child = down[1];
    w->from_child = up[0];
    return SPTUNE_OK;
}

sptune_status sp_worker_create(const sp_worker_task *task, double timeout_s, sp_worker **out)
{
    if (!task || !task->evaluate || !(timeout_s > 0)) return sp_fail(SPTUNE_ERR_INVALID, "worker: bad task or timeout");
    if (task->argv && (!task->argv[0] || access(task->argv[0], X_OK) != 0))
        return sp_fail(SPTUNE_ERR_NOT_FOUND, "worker: cannot execute '%s'", task->argv[0] ? task->argv[0] : "(null)");
    sp_worker *w = calloc(1, sizeof *w);
    if (!w) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    w->task = *task;
    w->timeout_s = timeout_s;
    if (task->argv) {
        int n = 0, ok = 1;
        while (task->argv[n]) n++;
        w->argv = calloc((size_t)n + 1, sizeof *w->argv);
        ok = w->argv != NULL;
        for (int i = 0; ok && i < n; i++) ok = (w->argv[i] = strdup(task->argv[i])) != NULL;
        w->task.argv = w->argv;
        if (!ok) {
            sp_worker_destroy(w); /* frees the copies made so far (the list is NULL-terminated) */
            return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        }
    }
    /* A child that died must not kill the parent through a write to its pipe. */
    signal(SIGPIPE, SIG_IGN);
    *out = w;
    return SPTUNE_OK;
}

/* Sends request q and waits for its reply. A reply is copied to out; a child that died or
 * hung is an outcome in out (*lost set) and the next request gets a fresh child. */
static sptune_status exchange(sp_worker *w, const request *q, sp_eval *out, int *lost)
{
    sptune_status st;
    *lost = 0;
    if (!w->pid && (st = start_child(w)) != SPTUNE_OK) return st;
    memset(out, 0, sizeof *out);
    out->timing.baseline_ms = -1;
    out->timing.rel_error = -1;
    double deadline = sp_now_s() + w->timeout_s;
    reply *r = malloc(sizeof *r);
    if (!r) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if (write_all(w->to_child, q, sizeof *q) != 0) {
        /* The child went away between two requests: not this one's fault; a fresh one. */
        stop_child(w, 1);
        w->restarts++;
        if ((st = start_child(w)) != SPTUNE_OK || write_all(w->to_child, q, sizeof *q) != 0) {
            free(r);
            return st != SPTUNE_OK ? st : sp_fail(SPTUNE_ERR_IO, "worker: cannot reach a fresh worker process");
        }
    }
    int rc = read_all(w->from_child, r, sizeof *r, deadline);
    if (rc == 0) {
        if (r->status != SPTUNE_OK) {
            st = sp_fail((sptune_status)r->status, "%s", r->message);
            stop_child(w, 1); /* whatever it holds is suspect now */
            w->restarts++;
            free(r);
            return st;
        }
        *out = r->eval;
        if (out->method[0]) out->timing.method = out->method;
        if (out->sticky) { /* the context is lost: a fresh child for the next one */
            stop_child(w, 1);
            w->restarts++;
        }
        free(r);
        return SPTUNE_OK;
    }
    free(r);
    *lost = 1;
    if (rc == -2) {
        stop_child(w, 1);
        out->outcome = SP_OUTCOME_TIMED_OUT;
        snprintf(out->detail, sizeof out->detail, "no result within %.1f s: the worker was killed", w->timeout_s);
    } else {
        /* EOF: the child died on this request. */
        int status = stop_child(w, 0);
        out->outcome = SP_OUTCOME_LAUNCH_FAILED;
        if (WIFSIGNALED(status))
            snprintf(out->detail, sizeof out->detail, "the worker died: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            snprintf(out->detail, sizeof out->detail, "the worker exited with status %d%s", WEXITSTATUS(status),
                     WEXITSTATUS(status) == 127 ? " (it could not be executed)" : "");
    }
    w->restarts++;
    return SPTUNE_OK;
}

sptune_status sp_worker_evaluate(sp_worker *w, const sp_config *c, sp_eval *out)
{
    request q;
    memset(&q, 0, sizeof q);
    q.kind = REQ_EVAL;
    q.config = *c;
    int lost;
    return exchange(w, &q, out, &lost);
}

sptune_status sp_worker_baseline(sp_worker *w, sp_eval *out)
{
    request q;
    memset(&q, 0, sizeof q);
    q.kind = REQ_BASELINE;
    int lost;
    sptune_status st = exchange(w, &q, out, &lost);
    if (st == SPTUNE_OK && lost) return sp_fail(SPTUNE_ERR_CUDA, "the baseline's worker failed: %s", out->detail);
    return st;
}

long long sp_worker_restarts(const sp_worker *w) { return w->restarts; }

void sp_worker_destroy(sp_worker *w)
{
    if (!w) return;
    stop_child(w, 0); /* closing its input ends its loop */
    for (int i = 0; w->argv && w->argv[i]; i++) free(w->argv[i]);
    free(w->argv);
    free(w);
}

static sptune_status backend_eval(void *ud, const sp_config *c, sp_eval *out)
{
    return sp_worker_evaluate(ud, c, out);
}

sp_tune_backend sp_worker_backend(sp_worker *w)
{
    sp_tune_backend be = {w, backend_eval};
    return be;
}
