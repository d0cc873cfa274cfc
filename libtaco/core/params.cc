#include "core/params.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "taco.h"

namespace taco {

static const ParamDoc kDocs[] = {
    {"TACO_CODEC", "fp8-block", "codec spec for communicators whose config leaves it unset (name[:block=N])"},
    {"TACO_CHUNK_BYTES", "67108864", "pipeline chunk, in uncompressed bytes per call (suffixes K, M, G)"},
    {"TACO_FALLBACK_BYTES", "1048576", "messages smaller than this use the uncompressed NCCL collective"},
    {"TACO_PIPELINE_DEPTH", "2", "chunks in flight in the collective pipeline, 1..16 (1: no overlap)"},
    {"TACO_CHECK_CONSISTENCY", "1", "ranks compare library version, codec and pipeline settings when a communicator is created"},
    {"TACO_CHECK_POINTERS", "1", "device calls verify that pointers are device-accessible"},
    {"TACO_NCCL_LIBRARY", "libnccl.so.2", "NCCL library to dlopen when no NCCL is loaded in the process"},
    {"TACO_DEBUG", "", "log level: WARN, INFO or TRACE"},
    {"TACO_ALGO", "auto", "AllReduce algorithm: auto, plain, staged, fused, oneshot or oneshot-raw"},
    {"TACO_WAIT_TIMEOUT_S", "60", "seconds a peer-memory kernel waits for a peer before it gives up"},
    {"TACO_FAULT_SKIP_RANK", "", "testing only: this rank's peer kernels skip every call, so its peers time out (read when a communicator is created)"},
    {"TACO_PEER_MEMORY", "loopback", "peer memory for the fused and one-shot AllReduce: 0 off, 1 on (CUDA IPC between processes), loopback (loopback worlds only, until the IPC route is measured across GPUs)"},
};

const ParamDoc* paramDocs(int* count) {
  *count = (int)(sizeof(kDocs) / sizeof(kDocs[0]));
  return kDocs;
}

const char* paramValue(int index) {
  int n = 0;
  const ParamDoc* docs = paramDocs(&n);
  if (index < 0 || index >= n) return nullptr;
  const char* v = getenv(docs[index].name);  // the table's own lookup: same names as envParams()
  return (v == nullptr || *v == '\0') ? nullptr : v;
}

// Parses "123", "64M", "1G" ...; returns false on malformed input.
static bool parseSize(const char* s, size_t* out) {
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno != 0 || s[0] == '-') return false;
  unsigned long long mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm') mul = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g') mul = 1ull << 30, ++end;
  if (*end != '\0') return false;
  *out = (size_t)(v * mul);
  return true;
}

static size_t sizeParam(const char* name, size_t dflt) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  size_t out;
  if (!parseSize(v, &out)) {
    TACO_WARN("%s='%s' is not a size; using %zu", name, v, dflt);
    return dflt;
  }
  return out;
}

static int intParam(const char* name, int dflt) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  if (end == v || *end != '\0') {
    TACO_WARN("%s='%s' is not an integer; using %d", name, v, dflt);
    return dflt;
  }
  return (int)x;
}

static const char* strParam(const char* name, const char* dflt) {
  const char* v = getenv(name);
  return (v == nullptr || *v == '\0') ? dflt : v;
}

const char* debugParam() { return strParam("TACO_DEBUG", ""); }

int faultSkipRank() {
  const char* v = getenv("TACO_FAULT_SKIP_RANK");
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long r = strtol(v, &end, 10);
  return (end != v && *end == '\0' && r >= 0) ? (int)r : -1;
}

static const char* const kAlgoNames[] = {"auto", "plain", "staged", "fused", "oneshot", "oneshot-raw"};

int algoFromName(const char* s) {
  for (int i = 0; i < (int)(sizeof(kAlgoNames) / sizeof(kAlgoNames[0])); ++i)
    if (strcmp(s, kAlgoNames[i]) == 0) return i;
  return -1;
}

const char* algoName(int algo) {
  return algo >= 0 && algo < (int)(sizeof(kAlgoNames) / sizeof(kAlgoNames[0])) ? kAlgoNames[algo] : "?";
}

static int algoParam(const char* name) {
  const char* v = strParam(name, "auto");
  const int a = algoFromName(v);
  if (a < 0) {
    TACO_WARN("%s='%s' is not an algorithm (auto, plain, staged, fused, oneshot, oneshot-raw); using auto", name, v);
    return tacoAlgoAuto;
  }
  return a;
}

static double secondsParam(const char* name, double dflt) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  const double x = strtod(v, &end);
  if (end == v || *end != '\0' || !(x > 0)) {
    TACO_WARN("%s='%s' is not a positive number of seconds; using %g", name, v, dflt);
    return dflt;
  }
  return x;
}

const EnvParams& envParams() {
  static const EnvParams params = [] {
    EnvParams p;
    p.debug = debugParam();
    p.codec = strParam("TACO_CODEC", "fp8-block");  // the default codec: docs/accuracy.md
    p.chunkBytes = sizeParam("TACO_CHUNK_BYTES", (size_t)64 << 20);
    p.fallbackBytes = sizeParam("TACO_FALLBACK_BYTES", (size_t)1 << 20);
    p.pipelineDepth = intParam("TACO_PIPELINE_DEPTH", 2);
    p.checkConsistency = intParam("TACO_CHECK_CONSISTENCY", 1);
    p.checkPointers = intParam("TACO_CHECK_POINTERS", 1);
    p.ncclLibrary = strParam("TACO_NCCL_LIBRARY", "libnccl.so.2");
    p.algo = algoParam("TACO_ALGO");
    p.waitTimeoutS = secondsParam("TACO_WAIT_TIMEOUT_S", 60.0);
    {
      const char* v = strParam("TACO_PEER_MEMORY", "loopback");
      p.peerMemory = strcmp(v, "0") == 0 ? 0 : strcmp(v, "1") == 0 ? 1 : 2;
      if (p.peerMemory == 2 && strcmp(v, "loopback") != 0)
        TACO_WARN("TACO_PEER_MEMORY='%s' is not 0, 1 or loopback; using loopback", v);
    }
    return p;
  }();
  return params;
}

}  // namespace taco
