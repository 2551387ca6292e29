/* The tuning results shipped with sptune (db/data/<gpu>.tsv, embedded into the library): every
 * file is well formed, and every row names an op, a problem and a configuration that the current
 * templates accept for that GPU profile, measured with the current version of its template (a stale row is
 * served at an earlier kernel's speed where nothing current exists); a template change that makes them stale
 * fails here (db/data/README.md says how to measure them again or carry them over). */
#include "sp_db_text.h"
#include "sp_shipped.h"
#include "sp_gpu.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tally { const char *file; long long rows, ok, bad, stale; } tally;

static int check_row(const sp_result *r, void *ud)
{
    tally *x = ud;
    x->rows++;
    sp_template *t = NULL;
    sp_gpu_profile gpu;
    sp_problem p;
    sp_config c;
    int ok = 0;
    char *why = NULL;
    if (sp_template_load(r->template_name, &t) == SPTUNE_OK && sp_gpu_profile_named(r->env->gpu_profile, &gpu) == SPTUNE_OK &&
        sp_problem_parse(t, r->problem_key, &p) == SPTUNE_OK && sp_config_parse(t, r->config, &c) == SPTUNE_OK &&
        sp_template_check(t, &c, &gpu, &p, &ok, &why) == SPTUNE_OK && ok) {
        x->ok++;
        if (strcmp(r->template_hash, sp_template_hash(t)) != 0 && !x->stale++)
            fprintf(stderr, "%s: %s %s %s on %s: measured with an earlier version of the template (%.12s, now %.12s)\n",
                    x->file, r->template_name, r->problem_key, r->config, r->env->gpu_profile, r->template_hash,
                    sp_template_hash(t));
    } else {
        if (!x->bad++)
            fprintf(stderr, "%s: %s %s %s on %s: %s\n", x->file, r->template_name, r->problem_key, r->config,
                    r->env->gpu_profile, why ? why : sptune_last_error());
    }
    free(why);
    sp_template_free(t);
    return 0;
}

int main(void)
{
    CHECK(sp_shipped_data_count >= 1);
    for (int i = 0; i < sp_shipped_data_count; i++) {
        const sp_embedded_file *f = &sp_shipped_data[i];
        tally x = {f->path, 0, 0, 0, 0};
        FILE *in = fmemopen((void *)f->data, f->len, "r");
        CHECK(in != NULL);
        if (!in) continue;
        CHECK_ST(sp_db_text_foreach(in, f->path, check_row, &x), SPTUNE_OK);
        fclose(in);
        printf("  %s: %lld rows, %lld accepted by the current templates\n", f->path, x.rows, x.ok);
        CHECK(x.rows > 0);
        CHECK_MSG(x.bad == 0, "%s: %lld rows the current templates refuse", f->path, x.bad);
        CHECK_MSG(x.stale == 0, "%s: %lld rows of an earlier template version (scripts/maint/stale-shipped.py)", f->path,
                  x.stale);
    }
    return sp_test_done("test_shipped_data");
}
