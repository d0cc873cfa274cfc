// Exported queries that need no communicator: the version, what a result code means, the last
// error, the TACO_* parameters and the names of the AllReduce algorithms.
#include "core/check.h"
#include "core/comm.h"
#include "core/export.h"
#include "core/params.h"
#include "taco.h"

extern "C" {

TACO_API int tacoGetVersion(void) { return TACO_MAJOR * 10000 + TACO_MINOR * 100 + TACO_PATCH; }

TACO_API const char* tacoGetErrorString(tacoResult_t result) {
  switch (result) {
    case tacoSuccess:
      return "no error";
    case tacoUnhandledCudaError:
      return "unhandled CUDA error (a CUDA call failed, or no CUDA device is available); "
             "see tacoGetLastError for details";
    case tacoSystemError:
      return "system error (the OS failed a call: dlopen, out of host memory, ...); "
             "see tacoGetLastError for details";
    case tacoInternalError:
      return "internal error (a bug in libtaco: please report it); see tacoGetLastError for details";
    case tacoInvalidArgument:
      return "invalid argument; see tacoGetLastError for which one and why";
    case tacoInvalidUsage:
      return "invalid usage (a valid call at the wrong time, e.g. an unbalanced group); "
             "see tacoGetLastError for details";
    case tacoRemoteError:
      return "remote error (another rank failed or disagreed); see tacoGetLastError for details";
    case tacoNcclError:
      return "NCCL error (NCCL returned an error, or is not available); see tacoGetLastError for details";
    case tacoNotSupported:
      return "not supported by this build or codec; see tacoGetLastError for details";
    case tacoOutOfMemory:
      return "out of memory (device or pinned host allocation failed); see tacoGetLastError for details";
    case tacoNumResults:
      break;
  }
  return "unknown result code (not a tacoResult_t value)";
}

// The communicator's last error if one is given and an operation on it failed
// (core/comm.h; recorded by the collectives and group calls), else the calling
// thread's last detailed message.
TACO_API const char* tacoGetLastError(tacoComm_t comm) {
  const char* own = taco::commLastError(comm);
  return (own != nullptr && *own != '\0') ? own : taco::lastError();
}

TACO_API tacoResult_t tacoGetParamInfo(int index, const char** name, const char** defaultValue,
                                       const char** meaning, const char** value) {
  int n = 0;
  const taco::EnvParam* table = taco::envParamTable(&n);
  TACO_ARG(index >= 0 && index < n, "tacoGetParamInfo: index argument %d is not in [0, %d)", index, n);
  if (name != nullptr) *name = table[index].name;
  if (defaultValue != nullptr) *defaultValue = table[index].defaultValue;
  if (meaning != nullptr) *meaning = table[index].meaning;
  if (value != nullptr) *value = taco::paramValue(index);
  return tacoSuccess;
}

TACO_API const char* tacoAlgoName(tacoAlgo_t algo) { return taco::algoNameOrNull(algo); }

}  // extern "C"
