// Argument checks of the exported entry points, in one place (as NCCL's
// argcheck.cc). A bad user argument is tacoInvalidArgument, with a message that
// names the operation and the argument ("tacoAllReduce: sendbuff argument ...");
// only a failing CUDA runtime is tacoUnhandledCudaError.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/comm.h"
#include "taco.h"

namespace taco {

tacoResult_t checkNotNull(const void* p, const char* op, const char* arg);
// `p` is a multiple of `align` bytes.
tacoResult_t checkAligned(const void* p, size_t align, const char* op, const char* arg);
tacoResult_t checkDatatype(tacoDataType_t datatype, const char* op);
// The reduction is one libtaco implements (tacoSum).
tacoResult_t checkRedOp(tacoRedOp_t redOp, const char* op);
// count > 0 (every codec function, tacoCompressedSize included; a collective of count 0 is a
// no-op instead).
tacoResult_t checkCount(size_t count, const char* op);
// Not NULL, and a communicator that was created and not yet destroyed.
tacoResult_t checkComm(const tacoComm* comm, const char* op);

// Memory a kernel on `device` can access: device memory (of that device unless
// device is kAnyDevice), managed memory, or host memory mapped into the device's
// address space. Host memory that is not mapped is refused. Skipped when
// TACO_CHECK_POINTERS=0 (allocators cudaPointerGetAttributes does not know).
constexpr int kAnyDevice = -1;
tacoResult_t checkDevicePointer(const void* p, int device, const char* op, const char* arg);

// The one overlap rule of every call that reads some buffers and writes others
// (docs/api.md, "Overlap"): an output and an input share no byte, except in the one
// in-place arrangement the call allows, where the output begins exactly `inPlaceOffset`
// bytes after the input (0: the same buffer, as AllReduce's sendbuff == recvbuff or the
// codec calls' y == exact; rank*recvcount elements for ReduceScatter, minus
// rank*sendcount for AllGather). inPlace names that arrangement for the message, NULL
// when the call allows none. Empty or NULL ranges overlap nothing.
bool rangesOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes);
tacoResult_t checkOverlap(const char* op, const char* outArg, const void* out, size_t outBytes, const char* inArg,
                          const void* in, size_t inBytes, const char* inPlace = nullptr,
                          ptrdiff_t inPlaceOffset = 0);

// The arguments every collective shares: a live communicator, a datatype, a count (named
// countArg) whose largest buffer, `blocks` times count elements (1 for AllReduce; nranks for the
// others), has a byte size that fits a ptrdiff_t, and (count > 0) send and receive buffers on the
// communicator's device.
tacoResult_t checkCollArgs(const tacoComm* comm, const void* sendbuff, const void* recvbuff, size_t count,
                           const char* countArg, int blocks, tacoDataType_t datatype, const char* op);

}  // namespace taco
