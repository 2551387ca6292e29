/* NVML through dlopen: a handful of entry points with their documented C signatures, so that the
 * build needs no nvml.h and a machine without NVML (or a GPU that reports no energy) loses only the
 * energy column. */
#include "sp_nvml.h"
#include "sp_status.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef int nvml_ret;          /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef void *nvml_device;     /* nvmlDevice_t */

static struct {
    pthread_once_t once;
    void *lib;
    char why[256];
    nvml_ret (*init)(void);
    nvml_ret (*by_pci)(const char *bus_id, nvml_device *dev);
    nvml_ret (*energy)(nvml_device dev, unsigned long long *mj);
    const char *(*error)(nvml_ret r);
} nv = {PTHREAD_ONCE_INIT, NULL, "", NULL, NULL, NULL, NULL};

struct sp_nvml_dev {
    nvml_device dev;
};

static void load(void)
{
    nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nv.lib) {
        snprintf(nv.why, sizeof nv.why, "no NVML (libnvidia-ml.so.1: %s)", dlerror());
        return;
    }
    /* object pointers to function pointers, the way POSIX dlsym is meant to be used */
    *(void **)&nv.init = dlsym(nv.lib, "nvmlInit_v2");
    *(void **)&nv.by_pci = dlsym(nv.lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&nv.energy = dlsym(nv.lib, "nvmlDeviceGetTotalEnergyConsumption");
    *(void **)&nv.error = dlsym(nv.lib, "nvmlErrorString");
    if (!nv.init || !nv.by_pci || !nv.energy) {
        snprintf(nv.why, sizeof nv.why, "NVML lacks the energy entry points");
        nv.init = NULL;
        return;
    }
    nvml_ret r = nv.init();
    if (r != 0) {
        snprintf(nv.why, sizeof nv.why, "nvmlInit failed: %s", nv.error ? nv.error(r) : "error");
        nv.init = NULL;
    }
}

sptune_status sp_nvml_open(int pci_domain, int pci_bus, int pci_device, sp_nvml_dev **out)
{
    *out = NULL;
    pthread_once(&nv.once, load);
    if (!nv.init) return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s", nv.why);
    char bus[32];
    snprintf(bus, sizeof bus, "%08x:%02x:%02x.0", (unsigned)pci_domain, (unsigned)pci_bus, (unsigned)pci_device);
    nvml_device dev = NULL;
    nvml_ret r = nv.by_pci(bus, &dev);
    unsigned long long mj = 0;
    if (r == 0) r = nv.energy(dev, &mj);   /* NVML_ERROR_NOT_SUPPORTED before Volta */
    if (r != 0)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "NVML: no energy counter for the GPU at %s: %s", bus,
                       nv.error ? nv.error(r) : "error");
    sp_nvml_dev *d = malloc(sizeof *d);
    if (!d) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    d->dev = dev;
    *out = d;
    return SPTUNE_OK;
}

sptune_status sp_nvml_energy_mj(sp_nvml_dev *d, unsigned long long *mj)
{
    nvml_ret r = d ? nv.energy(d->dev, mj) : -1;
    return r == 0 ? SPTUNE_OK
                  : sp_fail(SPTUNE_ERR_UNSUPPORTED, "NVML: reading the energy counter failed: %s",
                            d && nv.error ? nv.error(r) : "no device");
}

void sp_nvml_close(sp_nvml_dev *d) { free(d); }
