// Error recording and propagation. Every internal function returns tacoResult_t;
// these macros propagate failures and log one line per frame at INFO, so
// TACO_DEBUG=INFO prints a backtrace of a failed call.
#pragma once
#include <cuda_runtime_api.h>

#include "core/log.h"
#include "taco.h"

namespace taco {
// Records `fmt` as the calling thread's last error, logs it at WARN, returns `code`.
tacoResult_t setError(tacoResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// The calling thread's last detailed error ("" if none).
const char* lastError();
}  // namespace taco

#define TACO_CHECK(call)                                                     \
  do {                                                                       \
    tacoResult_t taco_r_ = (call);                                           \
    if (taco_r_ != tacoSuccess) {                                            \
      TACO_INFO("%s:%d -> %d", __FILE__, __LINE__, (int)taco_r_);           \
      return taco_r_;                                                        \
    }                                                                        \
  } while (0)

#define TACO_CUDA_CHECK(call)                                                                  \
  do {                                                                                         \
    cudaError_t taco_e_ = (call);                                                              \
    if (taco_e_ != cudaSuccess) {                                                              \
      return taco::setError(taco_e_ == cudaErrorMemoryAllocation ? tacoOutOfMemory             \
                                                                 : tacoUnhandledCudaError,     \
                            "%s:%d CUDA error %d '%s' in %s", __FILE__, __LINE__, (int)taco_e_, \
                            cudaGetErrorString(taco_e_), #call);                               \
    }                                                                                          \
  } while (0)

// Argument check: `TACO_ARG(cond, "tacoCompress: x argument is NULL")`.
#define TACO_ARG(cond, ...)                                                  \
  do {                                                                       \
    if (!(cond)) return taco::setError(tacoInvalidArgument, __VA_ARGS__);    \
  } while (0)
