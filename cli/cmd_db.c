/* sptune db: look at, export, import and merge tuning databases. Whatever comes from another
 * machine is checked against the local templates before it is recorded: an unknown op, a
 * problem or configuration the local template does not accept, or an unknown GPU profile is
 * rejected (and counted), never executed or compiled. */
#include "cli.h"
#include "sp_db.h"
#include "sp_db_text.h"
#include "sp_status.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct accept_ctx {
    sp_template *t[32];
    int n;
} accept_ctx;

static sp_template *template_for(accept_ctx *a, const char *name)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(sp_template_name(a->t[i]), name) == 0) return a->t[i];
    sp_template *t;
    if (a->n == 32 || sp_template_load(name, &t) != SPTUNE_OK) return NULL;
    return a->t[a->n++] = t;
}

static int accept_result(const sp_result *r, void *ud, char *why, size_t len)
{
    accept_ctx *a = ud;
    sp_template *t = template_for(a, r->template_name);
    if (!t) { snprintf(why, len, "no local template '%s'", r->template_name); return 0; }
    sp_gpu_profile gpu;
    if (sp_gpu_profile_named(r->env->gpu_profile, &gpu) != SPTUNE_OK) {
        snprintf(why, len, "unknown GPU profile '%s'", r->env->gpu_profile);
        return 0;
    }
    sp_problem p;
    sp_config c;
    if (sp_problem_parse(t, r->problem_key, &p) != SPTUNE_OK || sp_config_parse(t, r->config, &c) != SPTUNE_OK) {
        snprintf(why, len, "%s", sptune_last_error());
        return 0;
    }
    int ok = 0;
    char *reason = NULL;
    if (sp_template_check(t, &c, &gpu, &p, &ok, &reason) != SPTUNE_OK || !ok) {
        snprintf(why, len, "%s is not in the local %s space for %s: %s", r->config, r->template_name,
                 r->env->gpu_profile, reason ? reason : sptune_last_error());
        free(reason);
        return 0;
    }
    return 1;
}

static void accept_free(accept_ctx *a)
{
    for (int i = 0; i < a->n; i++) sp_template_free(a->t[i]);
}

static int report(const char *what, const sp_db_import_stats *s)
{
    printf("%s: %lld results read, %lld recorded, %lld rejected\n", what, s->read, s->recorded, s->rejected);
    if (s->rejected) printf("  first rejected: %s\n", s->first_rejection);
    return CLI_OK;
}

int cmd_db(cli_cmd *cmd, int npos, char **pos)
{
    const char *action = pos[0];
    char buf[4096];
    const char *path;
    sptune_status st;
    int rc = cli_db_path(cmd, buf, sizeof buf, &path);
    if (rc) return rc;
    int wants_arg = strcmp(action, "import") == 0 || strcmp(action, "merge") == 0;
    if (strcmp(action, "info") != 0 && strcmp(action, "export") != 0 && !wants_arg)
        return cli_usage_error(cmd->name, "unknown action '%s' (info, export, import, merge)", action);
    if (wants_arg && npos < 2) return cli_usage_error(cmd->name, "%s needs a file", action);
    if (!wants_arg && npos > 2) return cli_usage_error(cmd->name, "too many arguments");

    sp_db *db = NULL;
    if (!wants_arg) {
        if ((st = sp_db_open_readonly(path, &db)) != SPTUNE_OK) return cli_error(cmd->name, st);
        if (strcmp(action, "info") == 0) {
            long long n = 0;
            if ((st = sp_db_count(db, &n)) != SPTUNE_OK) rc = cli_error(cmd->name, st);
            else printf("%s: sptune database, schema %d, %lld results\n", path, sp_db_schema_version(db), n);
        } else {
            FILE *out = stdout;
            if (npos == 2 && strcmp(pos[1], "-") != 0 && !(out = fopen(pos[1], "w"))) {
                sp_db_close(db);
                fprintf(stderr, "sptune db: cannot write %s\n", pos[1]);
                return CLI_FAIL;
            }
            long long rows = 0;
            st = sp_db_export_text(db, out, &rows);
            if (out != stdout && fclose(out) != 0 && st == SPTUNE_OK) st = sp_fail(SPTUNE_ERR_IO, "cannot finish %s", pos[1]);
            if (st != SPTUNE_OK) rc = cli_error(cmd->name, st);
            else if (out != stdout) fprintf(stderr, "%lld results written to %s\n", rows, pos[1]);
        }
        sp_db_close(db);
        return rc;
    }
    char a[PATH_MAX], b[PATH_MAX];
    if (strcmp(action, "merge") == 0 && realpath(pos[1], a) && realpath(path, b) && strcmp(a, b) == 0)
        return cli_usage_error(cmd->name, "cannot merge %s into itself", pos[1]);
    if ((st = sp_db_open(path, 1, &db)) != SPTUNE_OK) return cli_error(cmd->name, st);
    accept_ctx acc = {{0}, 0};
    sp_db_import_stats stats;
    if (strcmp(action, "import") == 0) {
        FILE *in = strcmp(pos[1], "-") == 0 ? stdin : fopen(pos[1], "r");
        if (!in) {
            fprintf(stderr, "sptune db: cannot read %s\n", pos[1]);
            rc = CLI_FAIL;
        } else {
            st = sp_db_import_text(db, in, pos[1], accept_result, &acc, &stats);
            if (in != stdin) fclose(in);
            rc = st == SPTUNE_OK ? report(pos[1], &stats) : cli_error(cmd->name, st);
        }
    } else {
        st = sp_db_merge(db, pos[1], accept_result, &acc, &stats);
        rc = st == SPTUNE_OK ? report(pos[1], &stats) : cli_error(cmd->name, st);
    }
    accept_free(&acc);
    sp_db_close(db);
    return rc;
}
