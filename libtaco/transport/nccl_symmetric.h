// What the nccl-symmetric peer-memory route (peer_memory_nccl.cc) needs from NCCL:
// the host functions, resolved with the rest of NCCL at run time (nccl.cc: libnccl is
// never linked), and the pieces that need NCCL's device headers (peer_memory_nccl.cu,
// compiled where CMake found nccl_device.h next to nccl.h: TACO_NCCL_DEVICE_API).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "taco.h"

namespace taco {

// NCCL's symmetric-memory host functions (NCCL >= 2.28). Communicators, windows and
// device communicators travel as void*: this header needs no nccl.h.
struct NcclSymmetricApi {
  int version = 0;               // ncclGetVersion of the loaded library
  const char* path = "";         // where it was loaded from
  const char* missing = nullptr; // the first function below the library lacks (older NCCL)
  int (*memAlloc)(void** ptr, size_t bytes) = nullptr;
  int (*memFree)(void* ptr) = nullptr;
  int (*windowRegister)(void* comm, void* buff, size_t bytes, void** window, int flags) = nullptr;
  int (*windowDeregister)(void* comm, void* window) = nullptr;
  int (*devCommCreate)(void* comm, const void* requirements, void* devComm) = nullptr;
  int (*devCommDestroy)(void* comm, const void* devComm) = nullptr;
  const char* (*errorString)(int result) = nullptr;
  const char* (*lastError)(void* comm) = nullptr;  // nullptr in NCCL < 2.13
};

// Loads NCCL if needed (nccl.cc) and gives its table; tacoNcclError where NCCL is absent.
tacoResult_t ncclSymmetricApi(const NcclSymmetricApi** out);

constexpr int kNcclWinCollSymmetric = 0x01;  // NCCL_WIN_COLL_SYMMETRIC (nccl.h, 2.28 onwards)

// NCCL_VERSION_CODE of the nccl_device.h compiled in (peer_memory_nccl.cu), 0 without one.
int ncclDeviceHeadersVersion();

#if TACO_NCCL_DEVICE_API
// An ncclDevComm as the compiled headers lay it out (peer_memory_nccl.cu).
struct NcclDevCommBox;

// ncclDevCommCreate (collective) with `lsaBarriers` LSA barriers. Returns NCCL's result;
// *out is set on success only.
int ncclDevCommOpen(const NcclSymmetricApi& api, void* comm, int lsaBarriers, NcclDevCommBox** out);
// ncclDevCommDestroy (local) and the box. Safe on nullptr.
void ncclDevCommClose(const NcclSymmetricApi& api, void* comm, NcclDevCommBox* box);
// The device communicator's LSA (load/store-accessible) team: our rank in it, its size.
void ncclDevCommLsaTeam(const NcclDevCommBox* box, int* lsaRank, int* lsaSize);
// Every LSA peer's address of offset 0 of `window`, from nccl_device.h's ncclGetLsaPointer
// in a one-CTA kernel (synchronous): out[q] for q < n (n <= 1024).
cudaError_t ncclLsaPointers(void* window, int n, char** out);
#endif

}  // namespace taco
