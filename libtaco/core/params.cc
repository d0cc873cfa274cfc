#include "core/params.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "taco.h"

namespace taco {
namespace {

// Parses "123", "64M", "1G" ...: digits only (no sign or space, which strtoull would skip),
// and a value below 2^63 bytes (no wrap-around, and never SIZE_MAX, the config's "unset");
// returns false on anything else.
bool parseSize(const char* s, size_t* out) {
  if (s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return false;
  unsigned long long mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm') mul = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g') mul = 1ull << 30, ++end;
  if (*end != '\0' || v >= (1ull << 63) / mul) return false;
  *out = (size_t)(v * mul);
  return true;
}

// An int in decimal, optionally negative: no space, no '+', nothing outside int's range
// (4294967296 must not wrap to 0).
bool parseInt(const char* s, int* out) {
  const char* digits = s[0] == '-' ? s + 1 : s;
  if (digits[0] < '0' || digits[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const long long x = strtoll(s, &end, 10);
  if (*end != '\0' || errno != 0 || x < INT_MIN || x > INT_MAX) return false;
  *out = (int)x;
  return true;
}

// Seconds a wait may last: finite, from a millisecond (a waiter checks about once a
// millisecond) to 10^9 s, so that the nanoseconds fit the kernel's 64-bit clock arithmetic.
bool parseWaitSeconds(const char* s, double* out) {
  // decimal only: strtod also reads hex ("0x1p3"), "inf", "nan" and leading space
  if (s[0] == '\0' || s[strspn(s, "0123456789.eE+-")] != '\0' || s[0] == '+' || s[0] == '-') return false;
  char* end = nullptr;
  const double x = strtod(s, &end);
  if (*end != '\0' || !(x >= 1e-3 && x <= 1e9)) return false;
  *out = x;
  return true;
}

bool parseAlgo(const char* s, int* out) {
  const int a = algoFromName(s);
  if (a < 0) return false;
  *out = a;
  return true;
}

bool parsePeerMemory(const char* s, int* out) {
  if (strcmp(s, "0") == 0) *out = kPeerMemoryOff;
  else if (strcmp(s, "1") == 0) *out = kPeerMemoryOn;
  else if (strcmp(s, "loopback") == 0) *out = kPeerMemoryLoopback;
  else if (strcmp(s, "nccl") == 0) *out = kPeerMemoryNccl;
  else if (strcmp(s, "ipc") == 0) *out = kPeerMemoryIpc;
  else return false;
  return true;
}

bool parseTune(const char* s, int* out) {
  if (strcmp(s, "off") == 0) *out = kTuneOff;
  else if (strcmp(s, "auto") == 0) *out = kTuneAuto;
  else if (strcmp(s, "force") == 0) *out = kTuneForce;
  else return false;
  return true;
}

// An algorithm other than auto, or -1.
int parseFaultAlgo(const char* s) {
  const int a = algoFromName(s);
  return a > 0 ? a : -1;
}

bool parseNonNegative(const char* s, int* out) {
  int x = 0;
  if (!parseInt(s, &x) || x < 0) return false;
  *out = x;
  return true;
}

// "0", "1" or "2".
bool parseMode012(const char* s, int* out) {
  if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0 && strcmp(s, "2") != 0) return false;
  *out = s[0] - '0';
  return true;
}

// "0" or "1".
bool parseSwitch(const char* s, int* out) {
  if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0) return false;
  *out = s[0] - '0';
  return true;
}

// A rank number, or -1.
int parseRank(const char* s) {
  int r = -1;
  return parseInt(s, &r) && r >= 0 ? r : -1;
}

const EnvParam kParams[] = {
    {"TACO_CODEC", "fp8-block", "codec spec for communicators whose config leaves it unset (name[:block=N])",
     "a codec spec",  // checked when a communicator is created
     [](const char* v, EnvParams* p) { p->codec = v; return true; }},
    {"TACO_CHUNK_BYTES", "67108864", "pipeline chunk, in uncompressed bytes per call (suffixes K, M, G)", "a size",
     [](const char* v, EnvParams* p) { return parseSize(v, &p->chunkBytes); }},
    {"TACO_FALLBACK_BYTES", "1048576", "messages smaller than this use the uncompressed NCCL collective", "a size",
     [](const char* v, EnvParams* p) { return parseSize(v, &p->fallbackBytes); }},
    {"TACO_PIPELINE_DEPTH", "2", "chunks in flight in the collective pipeline, 1..16 (1: no overlap)",
     "an integer", [](const char* v, EnvParams* p) { return parseInt(v, &p->pipelineDepth); }},
    {"TACO_CHECK_CONSISTENCY", "1",
     "ranks compare library version, codec and pipeline settings when a communicator is created", "an integer",
     [](const char* v, EnvParams* p) { return parseInt(v, &p->checkConsistency); }},
    {"TACO_CHECK_POINTERS", "1", "device calls verify that pointers are device-accessible", "an integer",
     [](const char* v, EnvParams* p) { return parseInt(v, &p->checkPointers); }},
    {"TACO_NCCL_LIBRARY", "libnccl.so.2", "NCCL library to dlopen when no NCCL is loaded in the process",
     "a library", [](const char* v, EnvParams* p) { p->ncclLibrary = v; return true; }},
    {"TACO_DEBUG", "", "log level: WARN, INFO or TRACE", "a log level",
     [](const char* v, EnvParams* p) { p->debug = v; return true; }},
    {"TACO_ALGO", "auto", "AllReduce algorithm: auto, plain, staged, fused, oneshot or oneshot-raw",
     "an algorithm", [](const char* v, EnvParams* p) { return parseAlgo(v, &p->algo); }},
    {"TACO_WAIT_TIMEOUT_S", "60", "seconds a peer-memory kernel waits for a peer before it gives up",
     "a number of seconds from 0.001 to 1e9",
     [](const char* v, EnvParams* p) { return parseWaitSeconds(v, &p->waitTimeoutS); }},
    {"TACO_PEER_MEMORY", "1",
     "peer memory for the fused and one-shot AllReduce: 1 on (loopback worlds, and NCCL ranks on one host: NCCL "
     "symmetric memory, else CUDA IPC, each verified by a real write), 0 off, loopback (loopback worlds only), "
     "nccl or ipc (that route only, for testing; nccl is also tried at one rank)",
     "0, 1, loopback, nccl or ipc",
     [](const char* v, EnvParams* p) { return parsePeerMemory(v, &p->peerMemory); }},
    {"TACO_PEER_EARLY_LAUNCH", "2",
     "the fused AllReduce's phase kernels launch while the previous phase ends (programmatic dependent launch, "
     "sm_90 and later, where one process drives every rank on its GPU), a call's chunks interleaved (the scatter "
     "of chunk k, then the gather of chunk k - 1, then the reduce of chunk k); 1: early, chunk after chunk; 0: "
     "each launches after the previous kernel's end",
     "0, 1 or 2", [](const char* v, EnvParams* p) { return parseMode012(v, &p->peerEarlyLaunch); }},
    {"TACO_PEER_CLAIM_MIN_RANKS", "5",
     "the fused AllReduce's warps claim their tiles from a shared counter (so that a phase's CTAs end together) "
     "in communicators of at least this many ranks; 0: never (each warp's tiles fixed at launch). The bits are the "
     "same either way",
     "a non-negative integer",
     [](const char* v, EnvParams* p) { return parseNonNegative(v, &p->peerClaimMinRanks); }},
    {"TACO_PEER_TIMELINE", "0",
     "diagnostic: the peer-memory kernels record when each CTA reaches each phase; 1 prints the last launch's "
     "timeline to stderr when the communicator is destroyed, N > 1 also after every N-th launch (synchronizing "
     "its stream); 0 off",
     "a non-negative integer",
     [](const char* v, EnvParams* p) { return parseNonNegative(v, &p->peerTimeline); }},
    {"TACO_PEER_TIMELINE_CTAS", "0",
     "diagnostic, with TACO_PEER_TIMELINE: each printed timeline also lists every CTA's row (its rank and "
     "each event's time since the launch's first CTA start); 0: the summary only",
     "0 or 1", [](const char* v, EnvParams* p) { return parseSwitch(v, &p->peerTimelineCtas); }},
    {"TACO_TUNE", "auto",
     "when the AllReduce table is measured: auto (the cached table, else measure at the first eager AllReduce of "
     "a dtype), off (the built-in model; no cache), force (measure at the first eager AllReduce even with a cached "
     "table)",
     "auto, off or force", [](const char* v, EnvParams* p) { return parseTune(v, &p->tune); }},
    {"TACO_TUNE_FILE", "",
     "the AllReduce table cache, one JSON file (empty: $XDG_CACHE_HOME/taco/tune.json, else ~/.cache/taco/tune.json)",
     "a path", [](const char* v, EnvParams* p) { p->tuneFile = v; return true; }},
    {"TACO_TUNE_MAX_BYTES", "268435456",
     "the largest AllReduce size the tuner measures (suffixes K, M, G; also capped by free device memory)",
     "a size of at least 4K",
     [](const char* v, EnvParams* p) {
       size_t b = 0;  // assigned only when valid: a refused value leaves the default
       if (!parseSize(v, &b) || b < 4096) return false;
       p->tuneMaxBytes = b;
       return true;
     }},
    {"TACO_TUNE_FAULT", "",
     "testing only: the tuner's check sees this algorithm's output corrupted on rank 0, so the algorithm "
     "is demoted (read at each tuning)",
     "an algorithm", [](const char* v, EnvParams*) { return *v == '\0' || parseFaultAlgo(v) > 0; }},
    {"TACO_FAULT_SKIP_RANK", "",
     "testing only: this rank's peer kernels skip every call, so its peers time out (read when a communicator "
     "is created)",
     "a rank", [](const char* v, EnvParams*) { return *v == '\0' || parseRank(v) >= 0; }},
    {"TACO_FAULT_PEER_LAUNCH", "",
     "testing only: the peer-kernel launch with this index (0: the first, counted per communicator) fails "
     "as one the driver refuses (read when a communicator is created)",
     "a launch index", [](const char* v, EnvParams*) { return *v == '\0' || parseRank(v) >= 0; }},
};
constexpr int kNumParams = (int)(sizeof(kParams) / sizeof(kParams[0]));

// The environment's text, or nullptr when unset or empty (empty means unset).
const char* envText(const EnvParam& row) {
  const char* v = getenv(row.name);
  return (v == nullptr || *v == '\0') ? nullptr : v;
}

// Indexed by tacoAlgo_t: the names TACO_ALGO takes and tacoAlgoName gives.
const char* const kAlgoNames[] = {"auto", "plain", "staged", "fused", "oneshot", "oneshot-raw"};
constexpr int kNumAlgoNames = (int)(sizeof(kAlgoNames) / sizeof(kAlgoNames[0]));
static_assert(kNumAlgoNames == tacoNumAlgos, "one name per tacoAlgo_t");

}  // namespace

const EnvParam* envParamTable(int* count) {
  *count = kNumParams;
  return kParams;
}

const char* paramValue(int index) { return index >= 0 && index < kNumParams ? envText(kParams[index]) : nullptr; }

const char* debugParam() {
  for (const EnvParam& r : kParams) {
    if (strcmp(r.name, "TACO_DEBUG") != 0) continue;
    const char* v = envText(r);
    return v != nullptr ? v : r.defaultValue;
  }
  return "";  // not reached: TACO_DEBUG is in the table
}

int faultSkipRank() {
  const char* v = getenv("TACO_FAULT_SKIP_RANK");  // read at each creation, not cached: a testing knob
  return (v == nullptr || *v == '\0') ? -1 : parseRank(v);
}

int faultPeerLaunch() {
  const char* v = getenv("TACO_FAULT_PEER_LAUNCH");  // read at each creation, not cached: a testing knob
  return (v == nullptr || *v == '\0') ? -1 : parseRank(v);
}

std::string defaultTuneFile() {
  // Not TACO_* variables, but read here too: nothing else calls getenv.
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/taco/tune.json";
  const char* home = getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.cache/taco/tune.json";
  return "";
}

int tuneFaultAlgo() {
  const char* v = getenv("TACO_TUNE_FAULT");  // read at each tuning, not cached: a testing knob
  return (v == nullptr || *v == '\0') ? -1 : parseFaultAlgo(v);
}

int algoFromName(const char* s) {
  for (int i = 0; i < kNumAlgoNames; ++i)
    if (strcmp(s, kAlgoNames[i]) == 0) return i;
  return -1;
}

const char* algoNameOrNull(int algo) { return algo >= 0 && algo < kNumAlgoNames ? kAlgoNames[algo] : nullptr; }

const char* algoName(int algo) {
  const char* name = algoNameOrNull(algo);
  return name != nullptr ? name : "?";
}

const EnvParams& envParams() {
  static const EnvParams params = [] {
    EnvParams p{};
    for (const EnvParam& r : kParams) {
      if (!r.parse(r.defaultValue, &p))
        TACO_WARN("internal error: the default %s='%s' does not parse", r.name, r.defaultValue);
      const char* v = envText(r);
      if (v != nullptr && !r.parse(v, &p))
        TACO_WARN("%s='%s' is not %s (%s); using the default '%s'", r.name, v, r.expected, r.meaning,
                  r.defaultValue);
    }
    return p;
  }();
  return params;
}

}  // namespace taco
