/* Strings: copies, formatting into fresh memory, a growable buffer, NULL-terminated lists. */
#include "sp_str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sp_strdup(const char *s) { return s ? sp_strndup(s, strlen(s)) : NULL; }

char *sp_strndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *sp_asprintf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

void sp_buf_append(sp_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) { b->oom = 1; return; }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void sp_buf_puts(sp_buf *b, const char *s) { sp_buf_append(b, s, strlen(s)); }

void sp_buf_printf(sp_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = 1; va_end(ap2); return; }
    char *tmp = malloc((size_t)n + 1);
    if (!tmp) { b->oom = 1; va_end(ap2); return; }
    vsnprintf(tmp, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    sp_buf_append(b, tmp, (size_t)n);
    free(tmp);
}

void sp_buf_free(sp_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void sp_strv_free(char **v)
{
    if (!v) return;
    for (char **p = v; *p; p++) free(*p);
    free(v);
}

const char *sp_kv_find(const char *list, const char *key, size_t klen, size_t *n)
{
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            *n = strcspn(p + klen + 1, ",");
            return p + klen + 1;
        }
    return NULL;
}
