/* The base layer's status helpers: every failing path sets the thread's message and returns a
 * status (sptune_last_error reads it back). */
#ifndef SP_STATUS_H
#define SP_STATUS_H

#include "sptune.h"

/* Sets the thread's last-error message (printf-style) and returns st. */
sptune_status sp_fail(sptune_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the current message with "context: " and returns st (for wrapping lower failures). */
sptune_status sp_wrap(sptune_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_clear_error(void);
/* A struct the library fills for its caller (both begin with `size_t size`): full, this version's, copied into out
 * as far as out's size says (0: this version's; else the sizeof the caller was compiled with, at least min, the
 * first version's that had the field), out's size then the bytes written. SPTUNE_ERR_INVALID naming `what` when out's
 * size is below min. */
sptune_status sp_out_struct(void *out, const void *full, size_t full_size, size_t min, const char *what);

#endif
