/* The public API of Slot-Filling weights: encode, read, write, describe, and what configuration of
 * slotfill-spmm reads an encoding. */
#include "sp_slotfill.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sp_template.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

struct sptune_slotfill {
    sp_slotfill m;
    char fixed[160];
};

static void describe(sptune_slotfill *s)
{
    const sp_sf_params *p = &s->m.params;
    snprintf(s->fixed, sizeof s->fixed, "window=%d,dbits=%d,fill=%d,decode=%s,dtype=%s", p->window, p->dbits, p->fill,
             sp_sf_layout_name(p->layout), s->m.dtype == SP_SF_F16 ? "f16" : "bf16");
}

/* Whether configuration text names parameter `key`. */
static int names(const char *config, const char *key)
{
    size_t n;
    return sp_kv_find(config, key, strlen(key), &n) != NULL;
}

/* The encoding parameters of a slotfill-spmm configuration (text), through the template. */
static sptune_status params_of(const char *config, sp_sf_params *p)
{
    sp_template *t = NULL;
    sptune_status st = sp_template_load("slotfill-spmm", &t);
    if (st != SPTUNE_OK) return st;
    sp_config c;
    if (config) st = sp_config_parse(t, config, &c);
    else sp_config_default(t, &c);
    if (st == SPTUNE_OK) {
        *p = (sp_sf_params){(int)sp_config_int(t, &c, "window"), (int)sp_config_int(t, &c, "dbits"),
                            (int)sp_config_int(t, &c, "fill"), sp_sf_layout_named(sp_config_text(t, &c, "decode"))};
        /* a layout named without its window or distance bits takes its own (decode=sp24: window 64, dbits 7), not the
           bitmap's defaults it cannot take */
        if (p->layout == SP_SF_SP24 && !names(config, "window")) p->window = 64;
        if ((p->layout == SP_SF_SP24 || p->layout == SP_SF_LIST) && !names(config, "dbits"))
            p->dbits = sp_sf_list_dbits(p->window);
    }
    sp_template_free(t);
    return st;
}

sptune_status sptune_slotfill_encode(const void *w, long long M, long long K, int fp16, const char *config,
                                     sptune_slotfill **out)
{
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_encode: no output");
    *out = NULL;
    sp_sf_params p;
    sptune_status st = params_of(config, &p);
    if (st != SPTUNE_OK) return st;
    /* no configuration named: weights pruned 2:4 get the layout the sparse tensor cores read directly */
    if (!config && w && M > 0 && K > 0 && sp_sf_two_four(w, M, K, K, NULL, NULL, NULL))
        p = (sp_sf_params){64, sp_sf_list_dbits(64), 0, SP_SF_SP24};
    sptune_slotfill *s = calloc(1, sizeof *s);
    if (!s) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if ((st = sp_sf_encode(w, M, K, K, fp16 ? SP_SF_F16 : SP_SF_BF16, &p, &s->m)) != SPTUNE_OK) {
        free(s);
        return st;
    }
    describe(s);
    *out = s;
    return SPTUNE_OK;
}

sptune_status sptune_slotfill_read(const char *path, sptune_slotfill **out)
{
    if (!out || !path) return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_read: no path or output");
    *out = NULL;
    sptune_slotfill *s = calloc(1, sizeof *s);
    if (!s) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    sptune_status st = sp_sf_read(path, &s->m);
    if (st != SPTUNE_OK) { free(s); return st; }
    describe(s);
    *out = s;
    return SPTUNE_OK;
}

sptune_status sptune_slotfill_write(const sptune_slotfill *m, const char *path)
{
    if (!m || !path) return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_write: no matrix or path");
    return sp_sf_write(&m->m, path);
}

const void *sptune_slotfill_image(const sptune_slotfill *m, size_t *bytes)
{
    if (bytes) *bytes = m ? m->m.size : 0;
    return m ? m->m.image : NULL;
}

const char *sptune_slotfill_fixed(const sptune_slotfill *m) { return m ? m->fixed : NULL; }

sptune_status sptune_slotfill_info_get(const sptune_slotfill *m, sptune_slotfill_info *info)
{
    if (!m || !info) return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_info_get: no matrix or output");
    const sp_sf_stats *s = &m->m.stats;
    const sptune_slotfill_info full = {sizeof full, m->m.M, m->m.K, m->m.dtype == SP_SF_F16, s->nonzeros, s->tc,
                                       s->filled, s->residual, s->bytes_tc, s->bytes_fill, s->bytes_residual,
                                       s->bytes_index, s->bytes_dense};
    /* 0.5's fields (the first version with a size) at least */
    return sp_out_struct(info, &full, sizeof full, offsetof(sptune_slotfill_info, bytes_dense) + sizeof full.bytes_dense,
                         "sptune_slotfill_info_get");
}

sptune_status sptune_slotfill_problem(const sptune_slotfill *m, long long tokens, char *buf, size_t len)
{
    if (buf && len) buf[0] = 0;
    if (!m || !buf) return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_problem: no matrix or buffer");
    if (tokens < 1 || tokens > 2147483647LL)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_problem: tokens = %lld (the largest batch the kernel is "
                       "got for: 1 to 2147483647)", tokens);
    sp_sf_profile p;
    sptune_status st = sp_sf_profile_get(&m->m, &p);
    if (st != SPTUNE_OK) return st;
    /* the percentage of zeros, rounded; 99 at most (the op's range) */
    long long sparsity = llround(100.0 * (1.0 - (double)p.nonzeros / ((double)m->m.M * (double)m->m.K)));
    if (sparsity > 99) sparsity = 99;
    int n = snprintf(buf, len, "M=%lld,K=%lld,N=%lld,sparsity=%lld,fp16=%d,dist=%d", m->m.M, m->m.K, tokens, sparsity,
                     m->m.dtype == SP_SF_F16,
                     m->m.params.layout == SP_SF_SP24 ? 3 : sp_sf_profile_dist(&p, m->m.K)); /* sp24: 2:4 by construction */
    if (n < 0 || (size_t)n >= len) {
        if (len) buf[0] = 0;
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_problem: the problem takes %d bytes, the buffer %zu", n + 1,
                       len);
    }
    return SPTUNE_OK;
}

sptune_status sptune_slotfill_decode(const sptune_slotfill *m, void *w)
{
    if (!m || !w) return sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_decode: no matrix or output");
    return sp_sf_decode(&m->m, w, m->m.K);
}

void sptune_slotfill_free(sptune_slotfill *m)
{
    if (!m) return;
    sp_sf_free(&m->m);
    free(m);
}
