// Levelled logging to stderr, controlled by TACO_DEBUG=WARN|INFO|TRACE (default: quiet).
#pragma once

namespace taco {
enum LogLevel { kLogNone = 0, kLogWarn = 1, kLogInfo = 2, kLogTrace = 3 };
int logLevel();  // from TACO_DEBUG, read once
void logPrint(int level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
}  // namespace taco

#define TACO_LOG_AT(lvl, ...)                                                \
  do {                                                                       \
    if (taco::logLevel() >= (lvl)) taco::logPrint((lvl), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define TACO_WARN(...) TACO_LOG_AT(taco::kLogWarn, __VA_ARGS__)
#define TACO_INFO(...) TACO_LOG_AT(taco::kLogInfo, __VA_ARGS__)
#define TACO_TRACE(...) TACO_LOG_AT(taco::kLogTrace, __VA_ARGS__)
