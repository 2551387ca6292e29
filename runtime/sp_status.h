/* Internal status helpers: every failing path sets the thread's message and returns a status. */
#ifndef SP_STATUS_H
#define SP_STATUS_H

#include "sptune.h"
#include <stdarg.h>
#include <stddef.h>

/* Sets the thread's last-error message (printf-style) and returns st. */
sptune_status sp_fail(sptune_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the current message with "context: " and returns st (for wrapping lower failures). */
sptune_status sp_wrap(sptune_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_clear_error(void);

/* Allocation helpers: return NULL only on exhaustion (callers turn that into SPTUNE_ERR_NOMEM). */
char *sp_strdup(const char *s);
char *sp_strndup(const char *s, size_t n);
char *sp_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growable string buffer. */
typedef struct sp_buf {
    char *data;
    size_t len, cap;
    int oom; /* sticky: set when an append failed */
} sp_buf;
void sp_buf_append(sp_buf *b, const char *s, size_t n);
void sp_buf_puts(sp_buf *b, const char *s);
void sp_buf_printf(sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_buf_free(sp_buf *b);

/* Files. */
sptune_status sp_mkdir_p(const char *path);                      /* mode 0755, existing is fine */
sptune_status sp_read_file(const char *path, char **data, size_t *len); /* NUL-terminated */
/* Writes data to path atomically: a unique temp file in the same folder, fsync, rename. */
sptune_status sp_write_file_atomic(const char *path, const void *data, size_t len);

#endif
