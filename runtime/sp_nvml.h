/* Energy through NVML, loaded with dlopen as the driver is (no header or library needed to build):
 * the GPU's total energy counter, read around back-to-back runs (tuner/sp_bench.c). */
#ifndef SP_NVML_H
#define SP_NVML_H

#include "sptune.h"

typedef struct sp_nvml_dev sp_nvml_dev;

/* The NVML device of the CUDA device with this PCI domain, bus and device id, when NVML is there and
 * the GPU reports its energy (Volta and newer). SPTUNE_ERR_UNSUPPORTED with the reason otherwise;
 * *out stays NULL. */
sptune_status sp_nvml_open(int pci_domain, int pci_bus, int pci_device, sp_nvml_dev **out);
/* Millijoules consumed since the driver loaded. */
sptune_status sp_nvml_energy_mj(sp_nvml_dev *d, unsigned long long *mj);
void sp_nvml_close(sp_nvml_dev *d);

#endif
