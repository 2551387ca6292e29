/* The CUDA driver API, loaded with dlopen so that everything that needs no GPU runs on a machine
 * without a driver. Types come from the toolkit's cuda.h; no symbol of libcuda is linked. */
#ifndef SP_CUDA_H
#define SP_CUDA_H

#include "sptune.h"
#include <cuda.h>

typedef struct sp_cuda_api {
    __typeof__(cuInit) *Init;
    __typeof__(cuDriverGetVersion) *DriverGetVersion;
    __typeof__(cuDeviceGetCount) *DeviceGetCount;
    __typeof__(cuDeviceGet) *DeviceGet;
    __typeof__(cuDeviceGetName) *DeviceGetName;
    __typeof__(cuDeviceGetAttribute) *DeviceGetAttribute;
    __typeof__(cuDeviceTotalMem_v2) *DeviceTotalMem;
    __typeof__(cuDevicePrimaryCtxRetain) *DevicePrimaryCtxRetain;
    __typeof__(cuDevicePrimaryCtxRelease_v2) *DevicePrimaryCtxRelease;
    __typeof__(cuCtxSetCurrent) *CtxSetCurrent;
    __typeof__(cuCtxGetDevice) *CtxGetDevice;
    __typeof__(cuCtxSynchronize) *CtxSynchronize;
    __typeof__(cuModuleLoadData) *ModuleLoadData;
    __typeof__(cuModuleUnload) *ModuleUnload;
    __typeof__(cuModuleGetFunction) *ModuleGetFunction;
    __typeof__(cuFuncSetAttribute) *FuncSetAttribute;
    __typeof__(cuFuncGetAttribute) *FuncGetAttribute;
    __typeof__(cuLaunchKernel) *LaunchKernel;
    __typeof__(cuLaunchKernelEx) *LaunchKernelEx; /* may be NULL on old drivers */
    __typeof__(cuTensorMapEncodeTiled) *TensorMapEncodeTiled; /* may be NULL (drivers before CUDA 12) */
    __typeof__(cuMemAlloc_v2) *MemAlloc;
    __typeof__(cuMemFree_v2) *MemFree;
    __typeof__(cuMemcpyHtoD_v2) *MemcpyHtoD;
    __typeof__(cuMemcpyDtoH_v2) *MemcpyDtoH;
    __typeof__(cuMemcpyDtoD_v2) *MemcpyDtoD;
    __typeof__(cuMemsetD8_v2) *MemsetD8;
    __typeof__(cuMemsetD16_v2) *MemsetD16;
    __typeof__(cuMemsetD16Async) *MemsetD16Async;
    __typeof__(cuMemsetD32Async) *MemsetD32Async;
    __typeof__(cuStreamCreate) *StreamCreate;
    __typeof__(cuStreamDestroy_v2) *StreamDestroy;
    __typeof__(cuStreamSynchronize) *StreamSynchronize;
    __typeof__(cuEventCreate) *EventCreate;
    __typeof__(cuEventDestroy_v2) *EventDestroy;
    __typeof__(cuEventRecord) *EventRecord;
    __typeof__(cuEventSynchronize) *EventSynchronize;
    __typeof__(cuEventElapsedTime_v2) *EventElapsedTime;
    /* graphs and extra contexts: used by the tests of the API's contract; may be NULL */
    __typeof__(cuStreamBeginCapture_v2) *StreamBeginCapture;
    __typeof__(cuStreamEndCapture) *StreamEndCapture;
    __typeof__(cuGraphInstantiateWithFlags) *GraphInstantiate;
    __typeof__(cuGraphLaunch) *GraphLaunch;
    __typeof__(cuGraphExecDestroy) *GraphExecDestroy;
    __typeof__(cuGraphDestroy) *GraphDestroy;
    __typeof__(cuCtxCreate_v4) *CtxCreate;
    __typeof__(cuCtxDestroy_v2) *CtxDestroy;
    __typeof__(cuCtxGetCurrent) *CtxGetCurrent;
    __typeof__(cuStreamIsCapturing) *StreamIsCapturing;
    __typeof__(cuGetErrorName) *GetErrorName;
    __typeof__(cuGetErrorString) *GetErrorString;
} sp_cuda_api;

/* Loads libcuda.so.1 and calls cuInit(0) once (thread-safe). SPTUNE_ERR_NO_GPU with the reason
 * ("no NVIDIA driver (libcuda.so.1 not found)", "no CUDA device", ...) when that fails. */
sptune_status sp_cuda_load(const sp_cuda_api **api);
/* Loads libcuda.so.1 and its entry points only, without cuInit and without requiring a device
 * (enough for cuDriverGetVersion). SPTUNE_ERR_NO_GPU with the reason when that fails. */
sptune_status sp_cuda_driver(const sp_cuda_api **api);

/* The driver's CUDA version as "major.minor" (kept once known: a process forked after the driver
 * was initialised must not call into it again). SPTUNE_ERR_NO_GPU without a driver. */
sptune_status sp_cuda_driver_version_text(char *buf, size_t len);

/* Turns a failed driver call into a status with "what: CUDA_ERROR_NAME (description)". */
sptune_status sp_cuda_check(CUresult r, const char *what);
#define SP_CU(call) sp_cuda_check((call), #call)

/* Makes the primary context of `ordinal` current on this thread (retained once per process and
 * kept until it ends; ordinals 0..63). ctx may be NULL. */
sptune_status sp_cuda_use_device(int ordinal, CUcontext *ctx);

#endif
