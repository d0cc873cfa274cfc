#include "core/log.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/params.h"  // debugParam

namespace taco {

int logLevel() {
  static int level = [] {
    const char* v = debugParam();
    if (v == nullptr || *v == '\0') return (int)kLogNone;
    if (strcasecmp(v, "WARN") == 0) return (int)kLogWarn;
    if (strcasecmp(v, "INFO") == 0) return (int)kLogInfo;
    if (strcasecmp(v, "TRACE") == 0) return (int)kLogTrace;
    return (int)kLogWarn;
  }();
  return level;
}

void logPrint(int level, const char* file, int line, const char* fmt, ...) {
  static std::mutex mu;
  static const char* names[] = {"", "WARN", "INFO", "TRACE"};
  const char* base = strrchr(file, '/');
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(mu);
  fprintf(stderr, "TACO %s %s:%d %s\n", names[level], base ? base + 1 : file, line, msg);
}

}  // namespace taco
