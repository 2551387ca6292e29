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

sptune_status sp_out_struct(void *out, const void *full, size_t full_size, size_t min, const char *what)
{
    size_t want;
    memcpy(&want, out, sizeof want);
    if (want == 0) want = full_size;
    if (want < min)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the output's size field says %zu bytes, less than the %zu of its first "
                       "version (set it to sizeof the struct, or 0)", what, want, min);
    const size_t n = want < full_size ? want : full_size;
    memcpy(out, full, n);
    memcpy(out, &n, sizeof n);
    return SPTUNE_OK;
}
