// The TACO_* environment table (libtaco/core/params.cc): every default parses,
// unset and empty variables take the default, valid values are used, and
// malformed ones fall back to the default. The table is internal (hidden
// symbols), so its source is compiled in here.
#include <cstdlib>
#include <cstring>

#include "../../libtaco/core/log.cc"
#include "../../libtaco/core/params.cc"
#include "check.h"

// The table's row for `name` (names are unique: asserted in main), recorded as a failure if it
// is missing.
static const taco::EnvParam* rowOf(const taco::EnvParam* table, int n, const char* name) {
  for (int i = 0; i < n; ++i)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  TEST_ASSERT_MSG(false, "no row %s", name);
  return nullptr;
}

int main() {
  // Before the first read: the environment is read once.
  unsetenv("TACO_CODEC");
  unsetenv("TACO_CHECK_CONSISTENCY");
  unsetenv("TACO_NCCL_LIBRARY");
  unsetenv("TACO_PEER_TIMELINE");
  unsetenv("TACO_PEER_TIMELINE_CTAS");
  unsetenv("TACO_PEER_EARLY_LAUNCH");
  unsetenv("TACO_PEER_MEMORY");
  unsetenv("TACO_TUNE");
  unsetenv("TACO_TUNE_FILE");
  unsetenv("TACO_TUNE_MAX_BYTES");
  setenv("TACO_CHUNK_BYTES", "12Q", 1);         // malformed
  setenv("TACO_FALLBACK_BYTES", "2M", 1);       // valid, with a suffix
  setenv("TACO_PIPELINE_DEPTH", "3", 1);        // valid
  setenv("TACO_CHECK_POINTERS", "", 1);         // empty means unset
  setenv("TACO_ALGO", "bogus", 1);              // malformed
  setenv("TACO_WAIT_TIMEOUT_S", "-1", 1);       // malformed: not positive

  int n = 0;
  const taco::EnvParam* table = taco::envParamTable(&n);
  TEST_ASSERT(n >= 10);
  for (int i = 0; i < n; ++i) {
    taco::EnvParams scratch{};
    TEST_ASSERT_MSG(table[i].parse(table[i].defaultValue, &scratch), "%s: default '%s' does not parse",
                    table[i].name, table[i].defaultValue);
    TEST_ASSERT_MSG(strncmp(table[i].name, "TACO_", 5) == 0 && table[i].meaning[0] != '\0', "row %d", i);
    for (int j = 0; j < i; ++j) TEST_ASSERT_MSG(strcmp(table[i].name, table[j].name) != 0, "%s twice", table[i].name);
  }

  const taco::EnvParams& p = taco::envParams();
  TEST_ASSERT(strcmp(p.codec, "fp8-block") == 0);
  TEST_ASSERT_EQ_SIZE(p.chunkBytes, (size_t)64 << 20);
  TEST_ASSERT_EQ_SIZE(p.fallbackBytes, (size_t)2 << 20);
  TEST_ASSERT_EQ_INT(p.pipelineDepth, 3);
  TEST_ASSERT_EQ_INT(p.checkConsistency, 1);
  TEST_ASSERT_EQ_INT(p.checkPointers, 1);
  TEST_ASSERT(strcmp(p.ncclLibrary, "libnccl.so.2") == 0);
  TEST_ASSERT_EQ_INT(p.algo, tacoAlgoAuto);
  TEST_ASSERT(p.waitTimeoutS == 60.0);

  // The environment's text per row: set values as given, unset and empty as nullptr.
  for (int i = 0; i < n; ++i) {
    const char* v = taco::paramValue(i);
    if (strcmp(table[i].name, "TACO_PIPELINE_DEPTH") == 0) TEST_ASSERT(v != nullptr && strcmp(v, "3") == 0);
    if (strcmp(table[i].name, "TACO_CHECK_POINTERS") == 0) TEST_ASSERT(v == nullptr);
    if (strcmp(table[i].name, "TACO_CODEC") == 0) TEST_ASSERT(v == nullptr);
  }
  TEST_ASSERT(taco::paramValue(n) == nullptr);
  TEST_ASSERT(taco::paramValue(-1) == nullptr);

  // TACO_PEER_MEMORY's values, and a malformed one.
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_PEER_MEMORY")) {
    const struct {
      const char* text;
      int mode;
    } values[] = {{"0", taco::kPeerMemoryOff},   {"1", taco::kPeerMemoryOn},   {"loopback", taco::kPeerMemoryLoopback},
                  {"nccl", taco::kPeerMemoryNccl}, {"ipc", taco::kPeerMemoryIpc}};
    for (const auto& val : values) {
      taco::EnvParams q{};
      TEST_ASSERT_MSG(row->parse(val.text, &q) && q.peerMemory == val.mode, "TACO_PEER_MEMORY=%s", val.text);
    }
    taco::EnvParams q{};
    TEST_ASSERT(!row->parse("nvls", &q));
    TEST_ASSERT(row->parse(row->defaultValue, &q) && q.peerMemory == taco::kPeerMemoryOn);
  }
  TEST_ASSERT_EQ_INT(p.peerMemory, taco::kPeerMemoryOn);  // on by default

  // TACO_TUNE: auto by default; off and force; anything else malformed. TACO_TUNE_MAX_BYTES: a
  // size of at least 4K (the smallest bucket), 256M by default. TACO_TUNE_FILE: empty by default.
  TEST_ASSERT_EQ_INT(p.tune, taco::kTuneAuto);
  TEST_ASSERT_EQ_SIZE(p.tuneMaxBytes, (size_t)256 << 20);
  TEST_ASSERT(p.tuneFile != nullptr && *p.tuneFile == '\0');
  for (int i = 0; i < n; ++i) {
    taco::EnvParams q{};
    if (strcmp(table[i].name, "TACO_TUNE") == 0) {
      TEST_ASSERT(table[i].parse("off", &q) && q.tune == taco::kTuneOff);
      TEST_ASSERT(table[i].parse("force", &q) && q.tune == taco::kTuneForce);
      TEST_ASSERT(table[i].parse("auto", &q) && q.tune == taco::kTuneAuto);
      TEST_ASSERT(!table[i].parse("on", &q) && !table[i].parse("1", &q));
    }
    if (strcmp(table[i].name, "TACO_TUNE_MAX_BYTES") == 0) {
      TEST_ASSERT(table[i].parse("16M", &q) && q.tuneMaxBytes == ((size_t)16 << 20));
      TEST_ASSERT(table[i].parse("4K", &q) && q.tuneMaxBytes == 4096);
      TEST_ASSERT(!table[i].parse("2K", &q) && !table[i].parse("big", &q));
      TEST_ASSERT(q.tuneMaxBytes == 4096);  // a refused value leaves what was there
    }
    if (strcmp(table[i].name, "TACO_TUNE_FAULT") == 0) {
      TEST_ASSERT(table[i].parse("", &q) && table[i].parse("oneshot", &q) && table[i].parse("fused", &q));
      TEST_ASSERT(!table[i].parse("auto", &q) && !table[i].parse("twoshot", &q));
    }
  }
  unsetenv("TACO_TUNE_FAULT");
  TEST_ASSERT_EQ_INT(taco::tuneFaultAlgo(), -1);
  setenv("TACO_TUNE_FAULT", "oneshot", 1);  // read at each call, not cached
  TEST_ASSERT_EQ_INT(taco::tuneFaultAlgo(), tacoAlgoOneShot);
  setenv("TACO_TUNE_FAULT", "nonsense", 1);
  TEST_ASSERT_EQ_INT(taco::tuneFaultAlgo(), -1);
  unsetenv("TACO_TUNE_FAULT");

  // TACO_PEER_TIMELINE: off by default, a non-negative integer, anything else malformed.
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_PEER_TIMELINE")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse(row->defaultValue, &q) && q.peerTimeline == 0);
    TEST_ASSERT(row->parse("1", &q) && q.peerTimeline == 1);
    TEST_ASSERT(row->parse("50", &q) && q.peerTimeline == 50);
    TEST_ASSERT(!row->parse("-2", &q) && !row->parse("yes", &q) && !row->parse("3x", &q));
  }
  TEST_ASSERT_EQ_INT(p.peerTimeline, 0);

  // TACO_PEER_TIMELINE_CTAS: off by default, 0 or 1.
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_PEER_TIMELINE_CTAS")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse(row->defaultValue, &q) && q.peerTimelineCtas == 0);
    TEST_ASSERT(row->parse("1", &q) && q.peerTimelineCtas == 1);
    TEST_ASSERT(!row->parse("2", &q) && !row->parse("yes", &q));
  }
  TEST_ASSERT_EQ_INT(p.peerTimelineCtas, 0);

  // TACO_PEER_CLAIM_MIN_RANKS: 5 by default, a non-negative integer (0: never).
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_PEER_CLAIM_MIN_RANKS")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse(row->defaultValue, &q) && q.peerClaimMinRanks == 5);
    TEST_ASSERT(row->parse("0", &q) && q.peerClaimMinRanks == 0);
    TEST_ASSERT(row->parse("4", &q) && q.peerClaimMinRanks == 4);
    TEST_ASSERT(!row->parse("-1", &q) && !row->parse("many", &q));
  } else {
    TEST_ASSERT_MSG(false, "TACO_PEER_CLAIM_MIN_RANKS is not in the table");
  }
  TEST_ASSERT_EQ_INT(p.peerClaimMinRanks, 5);

  // TACO_PEER_EARLY_LAUNCH: interleaved (2) by default, 0, 1 or 2; a malformed value leaves what it parsed into alone.
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_PEER_EARLY_LAUNCH")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse(row->defaultValue, &q) && q.peerEarlyLaunch == 2);
    TEST_ASSERT(row->parse("1", &q) && q.peerEarlyLaunch == 1);
    TEST_ASSERT(row->parse("2", &q) && q.peerEarlyLaunch == 2);
    TEST_ASSERT(row->parse("0", &q) && q.peerEarlyLaunch == 0);
    for (const char* bad : {"3", "-1", "yes", "01", " 1"})
      TEST_ASSERT_MSG(!row->parse(bad, &q) && q.peerEarlyLaunch == 0, "'%s' parsed", bad);
  }
  TEST_ASSERT_EQ_INT(p.peerEarlyLaunch, 2);

  // Numbers never wrap, and nothing but digits (and a suffix) is a size: a value that would wrap
  // is malformed (the default then), not a different value.
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_FALLBACK_BYTES")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse("0", &q) && q.fallbackBytes == 0);
    TEST_ASSERT(row->parse("3G", &q) && q.fallbackBytes == ((size_t)3 << 30));
    TEST_ASSERT(row->parse("8589934591G", &q) && q.fallbackBytes == ((size_t)8589934591 << 30));
    for (const char* bad : {"8589934592G", "17179869184G", "99999999999G", "18446744073709551615",
                            "99999999999999999999", " -1", "-1", "+5", " 5", "5 ", "1.5M", "", "M"})
      TEST_ASSERT_MSG(!row->parse(bad, &q), "TACO_FALLBACK_BYTES='%s' parsed", bad);
  }
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_PIPELINE_DEPTH")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse("2", &q) && q.pipelineDepth == 2);
    TEST_ASSERT(row->parse("-3", &q) && q.pipelineDepth == -3);  // parsed; creation refuses it, naming it
    for (const char* bad : {"4294967298", "2147483648", "-2147483649", "99999999999999999999", " 2", "+2", "2x", "-"})
      TEST_ASSERT_MSG(!row->parse(bad, &q), "TACO_PIPELINE_DEPTH='%s' parsed", bad);
  }
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_CHECK_POINTERS")) {
    taco::EnvParams q{};
    q.checkPointers = 1;
    TEST_ASSERT_MSG(!row->parse("4294967296", &q) && q.checkPointers == 1, "wrapped to %d", q.checkPointers);
  }
  // TACO_WAIT_TIMEOUT_S: finite, 1 ms to 1e9 s (its nanoseconds fit 64 bits).
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_WAIT_TIMEOUT_S")) {
    taco::EnvParams q{};
    TEST_ASSERT(row->parse("2", &q) && q.waitTimeoutS == 2.0);
    TEST_ASSERT(row->parse("0.5", &q) && q.waitTimeoutS == 0.5);
    TEST_ASSERT(row->parse("1e9", &q) && q.waitTimeoutS == 1e9);
    for (const char* bad : {"0", "-1", "inf", "nan", "1e-12", "1e11", "1e400", " 2", "2s", "", "0x1p3", "+2"})
      TEST_ASSERT_MSG(!row->parse(bad, &q), "TACO_WAIT_TIMEOUT_S='%s' parsed", bad);
  }

  // Algorithm names round-trip, and TACO_ALGO takes exactly the names the library gives
  // (tacoAlgoName, from libtaco.so): no other spelling.
  for (int a = 0; a < tacoNumAlgos; ++a) TEST_ASSERT_EQ_INT(taco::algoFromName(taco::algoName(a)), a);
  TEST_ASSERT_EQ_INT(taco::algoFromName("bogus"), -1);
  if (const taco::EnvParam* row = rowOf(table, n, "TACO_ALGO")) {
    for (int a = 0; a < tacoNumAlgos; ++a) {
      taco::EnvParams q{};
      q.algo = -1;
      TEST_ASSERT_MSG(row->parse(tacoAlgoName((tacoAlgo_t)a), &q) && q.algo == a, "'%s'",
                      tacoAlgoName((tacoAlgo_t)a));
    }
    taco::EnvParams q{};
    for (const char* bad : {"twoshot", "Fused", "one-shot", "oneshot_raw", ""})
      TEST_ASSERT_MSG(!row->parse(bad, &q), "'%s' parsed", bad);
  }
  return TEST_REPORT();
}
