/* Text export/import and merge of tuning databases: a round trip keeps every field, a newer
 * measurement is never replaced by an older one, and hostile files (wrong header, wrong field
 * counts, bad escapes, impossible numbers, overlong lines) are refused whole with the line named. */
#include "sp_db.h"
#include "sp_db_text.h"
#include "sp_status.h"
#include "sp_test.h"

#include <stdlib.h>
#include <string.h>

static sp_env env = {"NVIDIA H200", "h200", 9, 0, 132, "13.0", "13.0", "0.1.0"};

static sptune_status put(sp_db *db, const char *config, sp_outcome o, double ms, long long when, const char *detail)
{
    sp_result r = {.env = &env, .template_name = "gemm", .template_hash = "abc", .problem_key = "M=1,N=8,K=8",
                   .config = config, .outcome = o, .detail = detail, .registers = 100, .smem_bytes = 4096,
                   .spill_bytes = 0, .recorded_at = when};
    r.timing.runs = o == SP_OUTCOME_OK ? 10 : 0;
    r.timing.median_ms = r.timing.min_ms = r.timing.max_ms = r.timing.p10_ms = r.timing.p90_ms = o == SP_OUTCOME_OK ? ms : 0;
    r.timing.baseline_ms = 0.5;
    r.timing.rel_error = 1e-3;
    r.timing.method = "events;\ttab and \\ backslash";
    return sp_db_record(db, &r);
}

static int reject_bm64(const sp_result *r, void *ud, char *why, size_t len)
{
    (void)ud;
    if (strstr(r->config, "bm=64")) { snprintf(why, len, "bm=64 refused by the test"); return 0; }
    return 1;
}

static sptune_status import_text(sp_db *db, const char *text, sp_db_import_stats *st)
{
    FILE *f = tmpfile();
    fputs(text, f);
    sptune_status s = sp_db_import_text(db, f, "x.tsv", NULL, NULL, st);
    fclose(f);
    return s;
}

int main(void)
{
    const char *dir = sp_test_tmpdir("test_db_text");
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(b, sizeof b, "%s/b.db", dir);
    sp_db *da = NULL, *db2 = NULL;
    CHECK_ST(sp_db_open(a, 1, &da), SPTUNE_OK);
    CHECK_ST(put(da, "bm=128", SP_OUTCOME_OK, 0.25, 1000, NULL), SPTUNE_OK);
    CHECK_ST(put(da, "bm=64", SP_OUTCOME_OK, 0.30, 1000, NULL), SPTUNE_OK);
    CHECK_ST(put(da, "bm=256", SP_OUTCOME_WRONG_RESULT, 0, 1000, "12 outputs wrong\nsecond line"), SPTUNE_OK);

    /* Round trip through text. */
    FILE *f = tmpfile();
    long long rows = 0;
    CHECK_ST(sp_db_export_text(da, f, &rows), SPTUNE_OK);
    CHECK_EQ(rows, 3);
    CHECK_ST(sp_db_open(b, 1, &db2), SPTUNE_OK);
    sp_db_import_stats st;
    CHECK_ST(sp_db_import_text(db2, f, "a.tsv", reject_bm64, NULL, &st), SPTUNE_OK);
    CHECK(st.read == 3 && st.recorded == 2 && st.rejected == 1);
    CHECK(strstr(st.first_rejection, "a.tsv:") && strstr(st.first_rejection, "bm=64 refused"));
    fclose(f);
    int found = 0;
    sp_outcome out;
    double ms = 0;
    CHECK_ST(sp_db_lookup(db2, &env, "gemm", "abc", "M=1,N=8,K=8", "bm=128", &found, &out, &ms), SPTUNE_OK);
    CHECK(found && out == SP_OUTCOME_OK && ms == 0.25);
    CHECK_ST(sp_db_lookup(db2, &env, "gemm", "abc", "M=1,N=8,K=8", "bm=256", &found, &out, &ms), SPTUNE_OK);
    CHECK(found && out == SP_OUTCOME_WRONG_RESULT);

    /* A newer measurement in b survives a merge of the older one from a. */
    CHECK_ST(put(db2, "bm=128", SP_OUTCOME_OK, 0.20, 2000, NULL), SPTUNE_OK);
    sp_db_close(da);
    CHECK_ST(sp_db_merge(db2, a, NULL, NULL, &st), SPTUNE_OK);
    CHECK(st.read == 3 && st.recorded == 3);
    CHECK_ST(sp_db_lookup(db2, &env, "gemm", "abc", "M=1,N=8,K=8", "bm=128", &found, &out, &ms), SPTUNE_OK);
    CHECK(found && ms == 0.20);
    long long n = 0;
    CHECK_ST(sp_db_count(db2, &n), SPTUNE_OK);
    CHECK_EQ(n, 3);

    /* Hostile files: refused whole, the line named, nothing recorded. */
    static const char *header = SP_DB_TEXT_MAGIC "\ncolumns\n";
    const char *good = "NVIDIA H200\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\tgemm\tabc\tM=1,N=8,K=8\tbm=32\tok\t10\t0.1\t0.1\t0.1\t0.1\t0.1\t0.5\t0.001\tm\t100\t4096\t0\t3000\t\n";
    const char *bad[] = {
        "NVIDIA H200\th200\t9\t0\t132\n",                                                             /* few fields */
        "NVIDIA H200\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\tgemm\tabc\tM=1\tbm=1\tok\t10\tNaN\t0.1\t0.1\t0.1\t0.1\t-\t-\tm\t1\t1\t0\t3\t\n",
        "NVIDIA H200\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\tgemm\tabc\tM=1\tbm=1\tok\t10\t0.5\t0.6\t0.1\t0.1\t0.1\t-\t-\tm\t1\t1\t0\t3\t\n",
        "NVIDIA H200\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\tgemm\tabc\tM=1\tbm=1\tmaybe\t10\t0.1\t0.1\t0.1\t0.1\t0.1\t-\t-\tm\t1\t1\t0\t3\t\n",
        "NVIDIA H200\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\tgemm\tabc\tM=1\tbm=1\\q\tok\t10\t0.1\t0.1\t0.1\t0.1\t0.1\t-\t-\tm\t1\t1\t0\t3\t\n",
        "\th200\t9\t0\t132\t13.0\t13.0\t0.1.0\tgemm\tabc\tM=1\tbm=1\tok\t10\t0.1\t0.1\t0.1\t0.1\t0.1\t-\t-\tm\t1\t1\t0\t3\t\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[4096];
        snprintf(text, sizeof text, "%s%s%s", header, good, bad[i]);
        sptune_status s = import_text(db2, text, &st);
        CHECK_MSG(s == SPTUNE_ERR_INVALID && strstr(sptune_last_error(), "x.tsv:4:") &&
                  strstr(sptune_last_error(), "nothing imported"), "case %zu: %s", i, sptune_last_error());
    }
    CHECK_ST(import_text(db2, "# some other file\n", &st), SPTUNE_ERR_INVALID);
    CHECK(strstr(sptune_last_error(), "not an sptune results file") != NULL);
    /* both headers read are named: v1 files (the shipped h200.tsv) are still accepted */
    CHECK_MSG(strstr(sptune_last_error(), "'" SP_DB_TEXT_MAGIC "' or '" SP_DB_TEXT_MAGIC_V1 "'") != NULL, "%s",
              sptune_last_error());
    CHECK_ST(import_text(db2, "", &st), SPTUNE_ERR_INVALID);
    char *huge = malloc(200000);
    memset(huge, 'x', 199999);
    huge[199999] = 0;
    char *text = malloc(210000);
    snprintf(text, 210000, "%s%s\n", header, huge);
    CHECK_ST(import_text(db2, text, &st), SPTUNE_ERR_INVALID);
    CHECK(strstr(sptune_last_error(), "longer than") != NULL);
    free(huge);
    free(text);
    CHECK_ST(sp_db_count(db2, &n), SPTUNE_OK);
    CHECK_MSG(n == 3, "%lld rows after the hostile files", n);
    /* The well-formed line alone imports. */
    char one[1024];
    snprintf(one, sizeof one, "%s%s", header, good);
    CHECK_ST(import_text(db2, one, &st), SPTUNE_OK);
    CHECK_EQ(st.recorded, 1);
    sp_db_close(db2);
    return sp_test_done("test_db_text");
}
