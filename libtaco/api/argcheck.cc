#include "api/argcheck.h"

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/check.h"
#include "core/dtype.h"
#include "core/params.h"

namespace taco {

tacoResult_t checkNotNull(const void* p, const char* op, const char* arg) {
  TACO_ARG(p != nullptr, "%s: %s argument is NULL", op, arg);
  return tacoSuccess;
}

tacoResult_t checkAligned(const void* p, size_t align, const char* op, const char* arg) {
  TACO_ARG(((uintptr_t)p % align) == 0, "%s: %s argument %p is not aligned to %zu bytes", op, arg, p, align);
  return tacoSuccess;
}

tacoResult_t checkDatatype(tacoDataType_t datatype, const char* op) {
  TACO_ARG((int)datatype >= 0 && (int)datatype < tacoNumDataTypes,
           "%s: datatype argument %d is not a tacoDataType_t (0..%d)", op, (int)datatype, tacoNumDataTypes - 1);
  return tacoSuccess;
}

tacoResult_t checkRedOp(tacoRedOp_t redOp, const char* op) {
  TACO_ARG(redOp == tacoSum, "%s: op %d is not supported (only tacoSum)", op, (int)redOp);
  return tacoSuccess;
}

tacoResult_t checkCount(size_t count, const char* op) {
  TACO_ARG(count > 0, "%s: count argument is 0 (a compressed buffer holds at least one element)", op);
  return tacoSuccess;
}

tacoResult_t checkComm(const tacoComm* comm, const char* op) {
  TACO_ARG(comm != nullptr, "%s: comm argument is NULL", op);
  TACO_ARG(commIsLive(comm), "%s: comm argument %p is not a live communicator (destroyed, or not a tacoComm_t)",
           op, (const void*)comm);
  return tacoSuccess;
}

tacoResult_t checkDevicePointer(const void* p, int device, const char* op, const char* arg) {
  if (!envParams().checkPointers) return tacoSuccess;
  cudaPointerAttributes attr;
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so the next call does not see it
    if (e == cudaErrorInvalidValue)
      return setError(tacoInvalidArgument, "%s: %s argument %p is not a valid pointer (%s)", op, arg, p,
                      cudaGetErrorString(e));
    return setError(tacoUnhandledCudaError, "%s: cannot query %s argument %p: %s", op, arg, p,
                    cudaGetErrorString(e));
  }
  switch (attr.type) {
    case cudaMemoryTypeManaged:
      return tacoSuccess;
    case cudaMemoryTypeDevice:
      TACO_ARG(device == kAnyDevice || attr.device == device,
               "%s: %s argument %p is memory of device %d, but the communicator is on device %d", op, arg, p,
               attr.device, device);
      return tacoSuccess;
    case cudaMemoryTypeHost:
      if (attr.devicePointer != nullptr) return tacoSuccess;  // pinned and mapped
      [[fallthrough]];
    default:
      return setError(tacoInvalidArgument,
                      "%s: %s argument %p is a host pointer, not device memory (TACO_CHECK_POINTERS=0 skips "
                      "this check)",
                      op, arg, p);
  }
}

bool rangesOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  if (a == nullptr || b == nullptr || aBytes == 0 || bBytes == 0) return false;
  const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return pa < pb ? pb - pa < aBytes : pa - pb < bBytes;
}

tacoResult_t checkOverlap(const char* op, const char* outArg, const void* out, size_t outBytes, const char* inArg,
                          const void* in, size_t inBytes, const char* inPlace, ptrdiff_t inPlaceOffset) {
  if (!rangesOverlap(out, outBytes, in, inBytes)) return tacoSuccess;
  if (inPlace != nullptr && (uintptr_t)out - (uintptr_t)in == (uintptr_t)inPlaceOffset) return tacoSuccess;
  if (inPlace == nullptr)
    return setError(tacoInvalidArgument, "%s: %s argument [%p, +%zu bytes) overlaps %s argument [%p, +%zu bytes)",
                    op, outArg, out, outBytes, inArg, in, inBytes);
  return setError(tacoInvalidArgument,
                  "%s: %s argument [%p, +%zu bytes) overlaps %s argument [%p, +%zu bytes) but is not in place (%s)",
                  op, outArg, out, outBytes, inArg, in, inBytes, inPlace);
}

tacoResult_t checkCollArgs(const tacoComm* comm, const void* sendbuff, const void* recvbuff, size_t count,
                           const char* countArg, int blocks, tacoDataType_t datatype, const char* op) {
  TACO_CHECK(checkComm(comm, op));
  TACO_CHECK(checkDatatype(datatype, op));
  if (count == 0) return tacoSuccess;  // a no-op: the buffers may be NULL, as with NCCL
  // The byte counts below (and the overlap checks' offsets) must not wrap.
  if (count > (size_t)PTRDIFF_MAX / (dtypeBytes(datatype) * (size_t)blocks))
    return setError(tacoInvalidArgument, "%s: %s argument %zu is too large: %d block(s) of it in %zu-byte elements "
                    "exceed %zu bytes", op, countArg, count, blocks, dtypeBytes(datatype), (size_t)PTRDIFF_MAX);
  TACO_CHECK(checkNotNull(sendbuff, op, "sendbuff"));
  TACO_CHECK(checkNotNull(recvbuff, op, "recvbuff"));
  // Elements the kernels load whole: a misaligned one is a device fault, which ends the context.
  TACO_CHECK(checkAligned(sendbuff, dtypeBytes(datatype), op, "sendbuff"));
  TACO_CHECK(checkAligned(recvbuff, dtypeBytes(datatype), op, "recvbuff"));
  TACO_CHECK(checkDevicePointer(sendbuff, comm->device, op, "sendbuff"));
  if (recvbuff != sendbuff) TACO_CHECK(checkDevicePointer(recvbuff, comm->device, op, "recvbuff"));
  return tacoSuccess;
}

}  // namespace taco
