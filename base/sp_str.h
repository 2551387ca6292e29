/* Strings: allocation helpers that return NULL only on exhaustion (callers turn that into
 * SPTUNE_ERR_NOMEM), a growable buffer, and NULL-terminated string lists. */
#ifndef SP_STR_H
#define SP_STR_H

#include <stddef.h>

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

/* Frees a NULL-terminated array of malloc'd strings (NULL is fine). */
void sp_strv_free(char **v);

/* The value of key (its first klen characters) in a "k=v,k=v" list (NULL allowed): a pointer into the list and its
 * length in *n, or NULL when the list does not name it. */
const char *sp_kv_find(const char *list, const char *key, size_t klen, size_t *n);

#endif
