/* The CUDA driver API through dlopen: nothing of libcuda is linked, so a machine without a driver
 * builds and runs everything that needs no GPU, and learns why there is no GPU from the status. */
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_file.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Every entry point: its symbol, an older fallback symbol with the same signature (or NULL), where
 * it goes in sp_cuda_api, and whether sptune can do without it. */
typedef struct sp_cuda_sym {
    const char *name;
    const char *fallback;
    size_t offset;
    int optional;
} sp_cuda_sym;

#define SYM(field, name) {name, NULL, offsetof(sp_cuda_api, field), 0}
#define SYM_OR(field, name, older) {name, older, offsetof(sp_cuda_api, field), 0}
#define SYM_OPT(field, name) {name, NULL, offsetof(sp_cuda_api, field), 1}

static const sp_cuda_sym sp_cuda_syms[] = {
    SYM(Init, "cuInit"),
    SYM(DriverGetVersion, "cuDriverGetVersion"),
    SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGet, "cuDeviceGet"),
    SYM(DeviceGetName, "cuDeviceGetName"),
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(CtxGetDevice, "cuCtxGetDevice"),
    SYM(CtxSynchronize, "cuCtxSynchronize"),
    SYM(ModuleLoadData, "cuModuleLoadData"),
    SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"),
    SYM(FuncSetAttribute, "cuFuncSetAttribute"),
    SYM(FuncGetAttribute, "cuFuncGetAttribute"),
    SYM(LaunchKernel, "cuLaunchKernel"),
    SYM_OPT(LaunchKernelEx, "cuLaunchKernelEx"),
    SYM_OPT(TensorMapEncodeTiled, "cuTensorMapEncodeTiled"),
    SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"),
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    SYM(MemsetD8, "cuMemsetD8_v2"),
    SYM(MemsetD16, "cuMemsetD16_v2"),
    SYM(MemsetD16Async, "cuMemsetD16Async"),
    SYM(MemsetD32Async, "cuMemsetD32Async"),
    SYM(StreamCreate, "cuStreamCreate"),
    SYM(StreamDestroy, "cuStreamDestroy_v2"),
    SYM(StreamSynchronize, "cuStreamSynchronize"),
    SYM(EventCreate, "cuEventCreate"),
    SYM(EventDestroy, "cuEventDestroy_v2"),
    SYM(EventRecord, "cuEventRecord"),
    SYM(EventSynchronize, "cuEventSynchronize"),
    /* _v2 appeared in CUDA 12.8; the original has the same signature. */
    SYM_OR(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    SYM_OPT(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    SYM_OPT(StreamEndCapture, "cuStreamEndCapture"),
    SYM_OPT(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    SYM_OPT(GraphLaunch, "cuGraphLaunch"),
    SYM_OPT(GraphExecDestroy, "cuGraphExecDestroy"),
    SYM_OPT(GraphDestroy, "cuGraphDestroy"),
    SYM_OPT(CtxCreate, "cuCtxCreate_v4"),
    SYM_OPT(CtxDestroy, "cuCtxDestroy_v2"),
    SYM_OPT(CtxGetCurrent, "cuCtxGetCurrent"),
    SYM_OPT(StreamIsCapturing, "cuStreamIsCapturing"),
    SYM(GetErrorName, "cuGetErrorName"),
    SYM(GetErrorString, "cuGetErrorString"),
};

static const char *const sp_cuda_libs[] = {"libcuda.so.1", "libcuda.so"};

/* Outcome of the two stages, computed once and kept for the life of the process. */
static sp_cuda_api sp_api;
static const sp_cuda_api *sp_api_loaded; /* non-NULL once the library and symbols are in */
static sptune_status sp_lib_status = SPTUNE_ERR_NO_GPU;
static char sp_lib_msg[768];
static pthread_once_t sp_lib_once = PTHREAD_ONCE_INIT;

static sptune_status sp_init_status = SPTUNE_ERR_NO_GPU;
static char sp_init_msg[768];
static pthread_once_t sp_init_once = PTHREAD_ONCE_INIT;

static void sp_cuda_load_library(void)
{
    void *lib = NULL;
    char first_err[512] = "";
    for (size_t i = 0; i < sizeof sp_cuda_libs / sizeof sp_cuda_libs[0] && !lib; i++) {
        lib = dlopen(sp_cuda_libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && i == 0) {
            const char *e = dlerror();
            snprintf(first_err, sizeof first_err, "%s", e ? e : "cannot be opened");
        }
    }
    if (!lib) {
        /* dlerror usually starts with the file name already. */
        if (strncmp(first_err, sp_cuda_libs[0], strlen(sp_cuda_libs[0])) == 0)
            snprintf(sp_lib_msg, sizeof sp_lib_msg, "no NVIDIA driver found (%s)", first_err);
        else
            snprintf(sp_lib_msg, sizeof sp_lib_msg, "no NVIDIA driver found (%s: %s)", sp_cuda_libs[0],
                     first_err);
        sp_lib_status = SPTUNE_ERR_NO_GPU;
        return;
    }
    sp_cuda_api api;
    memset(&api, 0, sizeof api);
    for (size_t i = 0; i < sizeof sp_cuda_syms / sizeof sp_cuda_syms[0]; i++) {
        const sp_cuda_sym *s = &sp_cuda_syms[i];
        void *p = dlsym(lib, s->name);
        if (!p && s->fallback) p = dlsym(lib, s->fallback);
        if (!p && !s->optional) {
            snprintf(sp_lib_msg, sizeof sp_lib_msg,
                     "the NVIDIA driver is too old: libcuda has no %s (update the driver)", s->name);
            sp_lib_status = SPTUNE_ERR_NO_GPU;
            dlclose(lib);
            return;
        }
        /* Object pointer to function pointer, the way POSIX dlsym is meant to be used. */
        memcpy((char *)&api + s->offset, &p, sizeof p);
    }
    sp_api = api;
    sp_api_loaded = &sp_api;
    sp_lib_status = SPTUNE_OK;
    /* The library stays loaded for the life of the process. */
}

static void sp_cuda_error_text(CUresult r, const char **name, const char **desc)
{
    *name = NULL;
    *desc = NULL;
    if (sp_api_loaded) {
        if (sp_api.GetErrorName(r, name) != CUDA_SUCCESS) *name = NULL;
        if (sp_api.GetErrorString(r, desc) != CUDA_SUCCESS) *desc = NULL;
    }
}

static void sp_cuda_init_driver(void)
{
    pthread_once(&sp_lib_once, sp_cuda_load_library);
    if (sp_lib_status != SPTUNE_OK) {
        sp_init_status = sp_lib_status;
        snprintf(sp_init_msg, sizeof sp_init_msg, "%s", sp_lib_msg);
        return;
    }
    CUresult r = sp_api.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *name, *desc;
        sp_cuda_error_text(r, &name, &desc);
        const char *pre = "CUDA driver present but cuInit failed";
        if (name && desc)
            snprintf(sp_init_msg, sizeof sp_init_msg, "%s: %s (%s)", pre, name, desc);
        else if (name)
            snprintf(sp_init_msg, sizeof sp_init_msg, "%s: %s", pre, name);
        else
            snprintf(sp_init_msg, sizeof sp_init_msg, "%s: CUDA error %d", pre, (int)r);
#ifdef __SANITIZE_ADDRESS__
        /* AddressSanitizer's shadow gap collides with the driver's address reservations. */
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            size_t n = strlen(sp_init_msg);
            snprintf(sp_init_msg + n, sizeof sp_init_msg - n,
                     "; under AddressSanitizer, run with ASAN_OPTIONS=protect_shadow_gap=0");
        }
#endif
        sp_init_status = SPTUNE_ERR_NO_GPU;
        return;
    }
    int count = 0;
    r = sp_api.DeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
        (void)sp_cuda_check(r, "CUDA driver present but cuDeviceGetCount failed");
        snprintf(sp_init_msg, sizeof sp_init_msg, "%s", sptune_last_error());
        sp_init_status = SPTUNE_ERR_NO_GPU;
        return;
    }
    if (count <= 0) {
        snprintf(sp_init_msg, sizeof sp_init_msg, "no CUDA device (the NVIDIA driver reports none)");
        sp_init_status = SPTUNE_ERR_NO_GPU;
        return;
    }
    sp_init_status = SPTUNE_OK;
}

sptune_status sp_cuda_driver(const sp_cuda_api **api)
{
    pthread_once(&sp_lib_once, sp_cuda_load_library);
    if (sp_lib_status != SPTUNE_OK) {
        if (api) *api = NULL;
        return sp_fail(sp_lib_status, "%s", sp_lib_msg);
    }
    if (api) *api = &sp_api;
    return SPTUNE_OK;
}

sptune_status sp_cuda_load(const sp_cuda_api **api)
{
    pthread_once(&sp_init_once, sp_cuda_init_driver);
    if (sp_init_status != SPTUNE_OK) {
        if (api) *api = NULL;
        return sp_fail(sp_init_status, "%s", sp_init_msg);
    }
    if (api) *api = &sp_api;
    return SPTUNE_OK;
}

sptune_status sp_cuda_check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS) return SPTUNE_OK;
    const char *name, *desc;
    sp_cuda_error_text(r, &name, &desc);
    if (!what || !*what) what = "CUDA driver call";
    if (name && desc) return sp_fail(SPTUNE_ERR_CUDA, "%s: %s (%s)", what, name, desc);
    if (name) return sp_fail(SPTUNE_ERR_CUDA, "%s: %s", what, name);
    return sp_fail(SPTUNE_ERR_CUDA, "%s: CUDA error %d", what, (int)r);
}

/* Primary contexts, retained once per ordinal and kept until the process ends. */
#define SP_CUDA_MAX_DEVICES 64
static pthread_mutex_t sp_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext sp_ctx[SP_CUDA_MAX_DEVICES];

sptune_status sp_cuda_use_device(int ordinal, CUcontext *ctx)
{
    const sp_cuda_api *api;
    sptune_status st = sp_cuda_load(&api);
    if (st != SPTUNE_OK) return st;
    int count = 0;
    st = SP_CU(api->DeviceGetCount(&count));
    if (st != SPTUNE_OK) return st;
    if (ordinal < 0 || ordinal >= count)
        return sp_fail(SPTUNE_ERR_NOT_FOUND, "no GPU with ordinal %d (%d found)", ordinal, count);
    if (ordinal >= SP_CUDA_MAX_DEVICES)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "GPU ordinal %d is beyond the %d sptune handles", ordinal,
                       SP_CUDA_MAX_DEVICES);

    pthread_mutex_lock(&sp_ctx_lock);
    CUcontext c = sp_ctx[ordinal];
    if (!c) {
        CUdevice dev;
        st = SP_CU(api->DeviceGet(&dev, ordinal));
        if (st == SPTUNE_OK) st = SP_CU(api->DevicePrimaryCtxRetain(&c, dev));
        if (st == SPTUNE_OK) sp_ctx[ordinal] = c;
    }
    pthread_mutex_unlock(&sp_ctx_lock);
    if (st != SPTUNE_OK) return sp_wrap(st, "GPU %d", ordinal);

    st = SP_CU(api->CtxSetCurrent(c));
    if (st != SPTUNE_OK) return sp_wrap(st, "GPU %d", ordinal);
    if (ctx) *ctx = c;
    return SPTUNE_OK;
}

sptune_status sp_cuda_driver_version_text(char *buf, size_t len)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "driver version: no buffer");
    buf[0] = 0;
    /* Kept once known: a process forked after the driver was initialised (the CLI's per-GPU
     * coordinators) must not call into it again, and the answer cannot change. Any thread may ask. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char known[32];
    char text[32];
    pthread_mutex_lock(&lock);
    snprintf(text, sizeof text, "%s", known);
    pthread_mutex_unlock(&lock);
    if (text[0]) return sp_copy_out(buf, len, text, "driver version");
    const sp_cuda_api *api;
    sptune_status st = sp_cuda_driver(&api);
    if (st != SPTUNE_OK) return st;
    int v = 0;
    st = SP_CU(api->DriverGetVersion(&v));
    if (st != SPTUNE_OK) return st;
    snprintf(text, sizeof text, "%d.%d", v / 1000, (v % 1000) / 10);
    pthread_mutex_lock(&lock);
    memcpy(known, text, sizeof known);
    pthread_mutex_unlock(&lock);
    return sp_copy_out(buf, len, text, "driver version");
}
