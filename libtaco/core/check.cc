#include "core/check.h"

#include <cstdarg>
#include <cstdio>

namespace taco {

static thread_local char tLastError[1024] = "";

tacoResult_t setError(tacoResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tLastError, sizeof(tLastError), fmt, ap);
  va_end(ap);
  TACO_WARN("%s (%s)", tLastError, tacoGetErrorString(code));
  return code;
}

const char* lastError() { return tLastError; }

}  // namespace taco
