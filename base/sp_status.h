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

#endif
