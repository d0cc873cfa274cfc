// The nccl-symmetric route's use of NCCL's device headers (transport/nccl_symmetric.h):
// the device communicator as nccl_device.h lays it out, and the peers' addresses of a
// window from ncclGetLsaPointer. The device functions are header-only (inline reads of
// the window struct): no device library, no -rdc. Without nccl_device.h (NCCL < 2.28
// headers) only the version query is built and the route reports itself closed.
#include "transport/nccl_symmetric.h"

#if TACO_NCCL_DEVICE_API
#include <nccl.h>
#include <nccl_device.h>

#include <cstring>
#include <new>

namespace taco {

struct NcclDevCommBox {
  ncclDevComm comm;
};

namespace {

__global__ void lsaPointersKernel(ncclWindow_t window, int n, char** out) {
  const int q = (int)threadIdx.x;
  if (q < n) out[q] = static_cast<char*>(ncclGetLsaPointer(window, 0, q));
}

}  // namespace

int ncclDeviceHeadersVersion() { return NCCL_VERSION_CODE; }

int ncclDevCommOpen(const NcclSymmetricApi& api, void* comm, int lsaBarriers, NcclDevCommBox** out) {
  *out = nullptr;
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER  // 2.29 onwards: size, magic and version first
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else  // 2.28: a plain struct, zeroed (NCCL's own 2.28 example does the same)
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof(reqs));
#endif
  reqs.lsaBarrierCount = lsaBarriers;
  NcclDevCommBox* box = new (std::nothrow) NcclDevCommBox();
  if (box == nullptr) return ncclSystemError;
  const int r = api.devCommCreate(comm, &reqs, &box->comm);
  if (r != ncclSuccess) {
    delete box;
    return r;
  }
  *out = box;
  return ncclSuccess;
}

void ncclDevCommClose(const NcclSymmetricApi& api, void* comm, NcclDevCommBox* box) {
  if (box == nullptr) return;
  api.devCommDestroy(comm, &box->comm);
  delete box;
}

void ncclDevCommLsaTeam(const NcclDevCommBox* box, int* lsaRank, int* lsaSize) {
  *lsaRank = box->comm.lsaRank;
  *lsaSize = box->comm.lsaSize;
}

cudaError_t ncclLsaPointers(void* window, int n, char** out) {
  if (n < 1 || n > 1024) return cudaErrorInvalidValue;
  char** dev = nullptr;
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(char*) * (size_t)n);
  if (e != cudaSuccess) return e;
  lsaPointersKernel<<<1, n>>>(static_cast<ncclWindow_t>(window), n, dev);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaMemcpy(out, dev, sizeof(char*) * (size_t)n, cudaMemcpyDeviceToHost);
  cudaFree(dev);
  return e;
}

}  // namespace taco

#else  // built without nccl_device.h

namespace taco {
int ncclDeviceHeadersVersion() { return 0; }
}  // namespace taco

#endif
