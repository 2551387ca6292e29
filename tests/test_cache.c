/* Kernel cache: keys, miss/put/hit, damaged entries, concurrent writers. */
#include "sp_cache.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"
#include "sp_file.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *src =
    "extern \"C\" __global__ void add_one(float *x, int n) {\n"
    "    __shared__ float s[128];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    s[threadIdx.x & 127] = i < n ? x[i] : 0.f;\n"
    "    __syncthreads();\n"
    "    if (i < n) x[i] = s[(threadIdx.x + 1) & 127] + 1.f;\n"
    "}\n";

static char entry[2200], subdir[2048];

static void entry_paths(const char *dir, const char *key)
{
    snprintf(subdir, sizeof subdir, "%s/%.2s", dir, key);
    snprintf(entry, sizeof entry, "%s/%s.cubin", subdir, key);
}

static int same_cubin(const sp_cubin *a, const sp_cubin *b)
{
    return a->size == b->size && a->image && b->image && memcmp(a->image, b->image, a->size) == 0 &&
           memcmp(&a->res, &b->res, sizeof a->res) == 0 && a->log && b->log && strcmp(a->log, b->log) == 0;
}

/* Image and resources only: logs of separate compiles differ (ptxas prints its compile time). */
static int same_image(const sp_cubin *a, const sp_cubin *b)
{
    return a->size == b->size && a->image && b->image && memcmp(a->image, b->image, a->size) == 0 &&
           memcmp(&a->res, &b->res, sizeof a->res) == 0 && a->log && b->log;
}

/* Files in `dir` other than `keep` (temp files left behind). */
static int stray_files(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, keep)) continue;
        fprintf(stderr, "stray file: %s/%s\n", dir, e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

static void write_raw(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    if (n) CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

static void test_keys(void)
{
    char k0[65], k1[65];
    const char *o1[] = {"-DA=1"};
    const char *o2[] = {"-DA=2"};
    const char *o12[] = {"-DA=1", "-DB=2"};
    const char *o21[] = {"-DB=2", "-DA=1"};
    const char *ojoined[] = {"-DA=1-DB=2"};
    sp_cache_key(src, "sm_90a", o1, 1, k0);
    CHECK_EQ(strlen(k0), 64);
    sp_cache_key(src, "sm_90a", o1, 1, k1);
    CHECK_EQ(strcmp(k0, k1), 0);
    sp_cache_key("// other\n", "sm_90a", o1, 1, k1);
    CHECK(strcmp(k0, k1) != 0);
    sp_cache_key(src, "sm_120", o1, 1, k1);
    CHECK(strcmp(k0, k1) != 0);
    sp_cache_key(src, "sm_90a", o2, 1, k1);
    CHECK(strcmp(k0, k1) != 0);
    sp_cache_key(src, "sm_90a", NULL, 0, k1);
    CHECK(strcmp(k0, k1) != 0);
    sp_cache_key(src, "sm_90a", o12, 2, k0);
    sp_cache_key(src, "sm_90a", o21, 2, k1);
    CHECK(strcmp(k0, k1) != 0);
    sp_cache_key(src, "sm_90a", ojoined, 1, k1);
    CHECK(strcmp(k0, k1) != 0);
}

static void test_roundtrip(const char *dir)
{
    sp_cache *c = NULL;
    char cdir[1100];
    snprintf(cdir, sizeof cdir, "%s/cache-a/", dir); /* not there yet; trailing slash on purpose */
    CHECK_ST(sp_cache_open(cdir, &c), SPTUNE_OK);
    if (!c) return;
    snprintf(cdir, sizeof cdir, "%s/cache-a", dir);
    CHECK(strcmp(sp_cache_dir(c), cdir) == 0);

    const char *opts[] = {"-DX=1"};
    char key[65];
    sp_cache_key(src, "sm_80", opts, 1, key);
    sp_cubin got;
    int hit = 7;
    CHECK_ST(sp_cache_get(c, key, &got, &hit), SPTUNE_OK);
    CHECK_EQ(hit, 0);
    struct stat st;
    CHECK(stat(cdir, &st) != 0); /* a get creates nothing */

    sp_cubin built;
    CHECK_ST(sp_nvrtc_compile(src, "add_one.cu", "sm_80", opts, 1, &built), SPTUNE_OK);
    CHECK_ST(sp_cache_put(c, key, &built), SPTUNE_OK);
    CHECK_ST(sp_cache_get(c, key, &got, &hit), SPTUNE_OK);
    CHECK_EQ(hit, 1);
    CHECK(same_cubin(&built, &got));
    CHECK(got.res.smem_static == 512 && got.res.registers > 0);
    sp_cubin_free(&got);
    entry_paths(cdir, key);
    CHECK_EQ(stat(entry, &st), 0);
    CHECK(stray_files(subdir, strrchr(entry, '/') + 1) == 0);

    /* Truncated entry: a miss, removed, then replaced by the next put. */
    char *data = NULL;
    size_t len = 0;
    CHECK_ST(sp_read_file(entry, &data, &len), SPTUNE_OK);
    for (size_t cut = 0; data && cut < len; cut += len / 7 + 1) {
        write_raw(entry, data, cut);
        hit = 7;
        CHECK_ST(sp_cache_get(c, key, &got, &hit), SPTUNE_OK);
        CHECK_MSG(hit == 0, "truncated to %zu of %zu bytes: still a hit", cut, len);
        CHECK_MSG(stat(entry, &st) != 0, "truncated entry (%zu bytes) not removed", cut);
        sp_cubin_free(&got);
    }
    /* One flipped byte anywhere (header, log, image): a miss. */
    for (size_t at = 0; data && at < len; at += len / 11 + 1) {
        data[at] ^= 0x20;
        write_raw(entry, data, len);
        data[at] ^= 0x20;
        CHECK_ST(sp_cache_get(c, key, &got, &hit), SPTUNE_OK);
        CHECK_MSG(hit == 0, "byte %zu flipped: still a hit", at);
        sp_cubin_free(&got);
    }
    /* An entry moved under another key: a miss. */
    char other[65];
    sp_cache_key(src, "sm_86", opts, 1, other);
    char entry2[2200], sub2[2048];
    snprintf(sub2, sizeof sub2, "%s/%.2s", cdir, other);
    snprintf(entry2, sizeof entry2, "%s/%s.cubin", sub2, other);
    CHECK_ST(sp_mkdir_p(sub2), SPTUNE_OK);
    if (data) write_raw(entry2, data, len);
    CHECK_ST(sp_cache_get(c, other, &got, &hit), SPTUNE_OK);
    CHECK_EQ(hit, 0);
    sp_cubin_free(&got);
    /* Garbage: a miss, and a put replaces it. */
    const char garbage[] = "this is not a kernel cache entry at all, just some text";
    write_raw(entry, garbage, sizeof garbage);
    CHECK_ST(sp_cache_get(c, key, &got, &hit), SPTUNE_OK);
    CHECK_EQ(hit, 0);
    CHECK_ST(sp_cache_put(c, key, &built), SPTUNE_OK);
    CHECK_ST(sp_cache_get(c, key, &got, &hit), SPTUNE_OK);
    CHECK(hit == 1 && same_cubin(&built, &got));
    sp_cubin_free(&got);
    free(data);

    /* Bad arguments. */
    char badkey[65];
    memset(badkey, 'x', 64);
    badkey[64] = 0;
    CHECK_ST(sp_cache_get(c, badkey, &got, &hit), SPTUNE_ERR_INVALID);
    sp_cubin notelf = built;
    unsigned char junk[8] = "junkjun";
    notelf.image = junk;
    notelf.size = sizeof junk;
    CHECK_ST(sp_cache_put(c, key, &notelf), SPTUNE_ERR_INVALID);

    /* sp_kernel_build: first call compiles and stores, the second is served from the cache. */
    const char *bopts[] = {"-DX=2"};
    sp_cubin b1, b2;
    CHECK_ST(sp_kernel_build(c, src, "add_one.cu", "sm_90a", bopts, 1, &b1), SPTUNE_OK);
    CHECK_EQ(b1.from_cache, 0);
    CHECK_ST(sp_kernel_build(c, src, "add_one.cu", "sm_90a", bopts, 1, &b2), SPTUNE_OK);
    CHECK_EQ(b2.from_cache, 1);
    CHECK(same_cubin(&b1, &b2));
    sp_cubin_free(&b1);
    sp_cubin_free(&b2);
    /* Without a cache it just compiles. */
    CHECK_ST(sp_kernel_build(NULL, src, "add_one.cu", "sm_90a", bopts, 1, &b1), SPTUNE_OK);
    CHECK(b1.from_cache == 0 && b1.size > 0);
    sp_cubin_free(&b1);
    /* A compile error is not cached and comes back with its log. */
    CHECK_ST(sp_kernel_build(c, "this is not CUDA", "bad.cu", "sm_90a", NULL, 0, &b1), SPTUNE_ERR_COMPILE);
    CHECK(b1.log && strstr(b1.log, "error"));
    sp_cubin_free(&b1);
    CHECK_ST(sp_kernel_build(c, "this is not CUDA", "bad.cu", "sm_90a", NULL, 0, &b1), SPTUNE_ERR_COMPILE);
    sp_cubin_free(&b1);

    sp_cubin_free(&built);
    sp_cache_close(c);
}

/* A cache folder that cannot be created: the build still succeeds, with a warning in the log. */
static void test_unwritable(const char *dir)
{
    char file[1100], cdir[1200];
    snprintf(file, sizeof file, "%s/plain-file", dir);
    write_raw(file, "x", 1);
    snprintf(cdir, sizeof cdir, "%s/cache", file); /* under a file: cannot exist */
    sp_cache *c = NULL;
    CHECK_ST(sp_cache_open(cdir, &c), SPTUNE_OK);
    if (!c) return;
    sp_cubin b;
    CHECK_ST(sp_kernel_build(c, src, "add_one.cu", "sm_80", NULL, 0, &b), SPTUNE_OK);
    CHECK(b.size > 0 && b.from_cache == 0);
    CHECK(b.log && strstr(b.log, "warning: kernel cache"));
    if (b.log) printf("build log with cache warnings:\n%s", b.log);
    sp_cubin_free(&b);
    sp_cache_close(c);
}

/* Two processes writing the same key at the same time: the entry stays whole, no temp files stay. */
static void test_concurrent(const char *dir)
{
    char cdir[1100];
    snprintf(cdir, sizeof cdir, "%s/cache-shared", dir);
    const char *opts[] = {"-DRACE=1"};
    char key[65];
    sp_cache_key(src, "sm_120", opts, 1, key);
    entry_paths(cdir, key);

    fflush(NULL);
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        CHECK(kids[k] >= 0);
        if (kids[k] == 0) {
            int bad = 0;
            sp_cache *c = NULL;
            if (sp_cache_open(cdir, &c) != SPTUNE_OK) _exit(10);
            sp_cubin b;
            if (sp_kernel_build(c, src, "add_one.cu", "sm_120", opts, 1, &b) != SPTUNE_OK) _exit(11);
            for (int i = 0; i < 50; i++) {
                if (sp_cache_put(c, key, &b) != SPTUNE_OK) {
                    fprintf(stderr, "child %d: put: %s\n", k, sptune_last_error());
                    bad++;
                }
                sp_cubin g;
                int hit = 0;
                if (sp_cache_get(c, key, &g, &hit) != SPTUNE_OK || !hit || !same_image(&b, &g)) {
                    fprintf(stderr, "child %d: get %d: hit %d: %s\n", k, i, hit, sptune_last_error());
                    bad++;
                }
                sp_cubin_free(&g);
                sp_cubin b2;
                if (sp_kernel_build(c, src, "add_one.cu", "sm_120", opts, 1, &b2) != SPTUNE_OK ||
                    !same_image(&b, &b2)) {
                    fprintf(stderr, "child %d: build %d: %s\n", k, i, sptune_last_error());
                    bad++;
                }
                sp_cubin_free(&b2);
            }
            sp_cubin_free(&b);
            sp_cache_close(c);
            fflush(NULL);
            _exit(bad ? 12 : 0);
        }
    }
    for (int k = 0; k < 2; k++) {
        int status = 0;
        if (kids[k] <= 0) continue;
        CHECK_EQ(waitpid(kids[k], &status, 0), kids[k]);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status 0x%x", k, status);
    }
    sp_cache *c = NULL;
    CHECK_ST(sp_cache_open(cdir, &c), SPTUNE_OK);
    if (!c) return;
    sp_cubin g;
    int hit = 0;
    CHECK_ST(sp_cache_get(c, key, &g, &hit), SPTUNE_OK);
    CHECK(hit == 1 && g.size > 0 && g.res.smem_static == 512);
    sp_cubin_free(&g);
    CHECK(stray_files(subdir, strrchr(entry, '/') + 1) == 0);
    sp_cache_close(c);
}

static void test_default_dir(const char *dir)
{
    char cdir[1100];
    snprintf(cdir, sizeof cdir, "%s/from-env", dir);
    setenv("SPTUNE_CACHE_DIR", cdir, 1);
    sp_cache *c = NULL;
    CHECK_ST(sp_cache_open(NULL, &c), SPTUNE_OK);
    if (c) CHECK(strcmp(sp_cache_dir(c), cdir) == 0);
    sp_cache_close(c);
    unsetenv("SPTUNE_CACHE_DIR");
}

int main(void)
{
    const char *dir = sp_test_tmpdir("test_cache");
    test_keys();
    test_roundtrip(dir);
    test_unwritable(dir);
    test_concurrent(dir);
    test_default_dir(dir);
    sp_cache_close(NULL);
    return sp_test_done("test_cache");
}
