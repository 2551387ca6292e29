/* Status and the thread's last-error message. */
#include "sp_status.h"
#include "sptune_version.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SP_MSG_MAX 4096
static _Thread_local char sp_msg[SP_MSG_MAX];

const char *sptune_last_error(void) { return sp_msg; }
void sp_clear_error(void) { sp_msg[0] = 0; }
const char *sptune_version(void) { return SPTUNE_VERSION_STRING; }

const char *sptune_status_name(sptune_status st)
{
    switch (st) {
    case SPTUNE_OK: return "ok";
    case SPTUNE_ERR_INVALID: return "invalid";
    case SPTUNE_ERR_NOMEM: return "nomem";
    case SPTUNE_ERR_IO: return "io";
    case SPTUNE_ERR_TEMPLATE: return "template";
    case SPTUNE_ERR_COMPILE: return "compile";
    case SPTUNE_ERR_NO_GPU: return "no_gpu";
    case SPTUNE_ERR_CUDA: return "cuda";
    case SPTUNE_ERR_DB: return "db";
    case SPTUNE_ERR_NOT_FOUND: return "not_found";
    case SPTUNE_ERR_UNSUPPORTED: return "unsupported";
    case SPTUNE_ERR_WRONG_RESULT: return "wrong_result";
    }
    return "unknown";
}

sptune_status sp_fail(sptune_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sp_msg, sizeof sp_msg, fmt, ap);
    va_end(ap);
    return st;
}

sptune_status sp_wrap(sptune_status st, const char *fmt, ...)
{
    char old[SP_MSG_MAX];
    va_list ap;
    memcpy(old, sp_msg, sizeof old);
    va_start(ap, fmt);
    int n = vsnprintf(sp_msg, sizeof sp_msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n + 2 < sizeof sp_msg) {
        /* "prefix: old", cut to fit */
        size_t room = sizeof sp_msg - (size_t)n - 2;
        size_t len = strnlen(old, room - 1);
        sp_msg[n] = ':';
        sp_msg[n + 1] = ' ';
        memcpy(sp_msg + n + 2, old, len);
        sp_msg[n + 2 + len] = 0;
    }
    return st;
}
