// The AllReduce table: what the tuner measured (coll/tune.cc) and how a call picks from it
// (coll/allreduce.cc). Pure functions of plain data, the same on every rank, so that host
// tests check them (tests/host/test_tune_table.cc). docs/tuning.md, "The AllReduce table".
//
// A table holds, for power-of-two sizes (buckets) from 4 KiB up, the time of every candidate
// algorithm: each rank's median, combined across ranks by the max, so every rank holds the
// same numbers and derives the same choices. A candidate that cannot run on the communicator,
// or that failed its check on any rank (demoted), has no time (kNoTime) and is never chosen.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "taco.h"

namespace taco {

// The columns of a table, in a fixed order: ties go to the earlier one (plain first). The fused
// two-shot appears twice: with the scratch the communicator's chunk sizes (kCandFused), and with a
// scratch kLargeChunkFactor times larger (kCandFusedLarge: fewer launches for calls larger than a
// chunk, for more memory; coll/peer_resize.h). Every other candidate runs at the chunk it has.
enum TuneCandidate {
  kCandPlain,
  kCandOneShotRaw,
  kCandOneShot,
  kCandFused,
  kCandFusedLarge,
  kCandStaged,
  kNumCandidates
};
constexpr size_t kLargeChunkFactor = 4;

int candidateAlgo(int cand);               // its tacoAlgo_t (fused for both fused columns)
int candidateOf(int algo);                 // the candidate of tacoAlgo_t `algo` at its own chunk, or -1
const char* candidateName(int cand);       // "plain", "oneshot-raw", "oneshot", "fused", "fused-large", "staged"
int candidateByName(const char* name);     // or -1

constexpr size_t kTuneMinBytes = 4096;  // the smallest bucket
// A candidate replaces the model's choice only when it is at least this much faster.
constexpr double kTuneHysteresis = 0.03;
// The time of a candidate that has none (cannot run here, or demoted).
const float kNoTime = INFINITY;

using TuneRow = std::array<float, kNumCandidates>;  // microseconds per candidate

struct TuneTable {
  std::string key;           // the machine's fingerprint (coll/tune_cache.h)
  std::vector<size_t> bytes;  // bucket sizes (uncompressed bytes per rank), ascending powers of two
  std::vector<TuneRow> us;    // us[b][cand]: the max over ranks of each rank's median time, or kNoTime
  uint32_t demoted = 0;       // bit c: candidate c failed its check on some rank (agreed like the times)
  // The largest bucket asked for (TACO_TUNE_MAX_BYTES, the least of the ranks'); 0: not recorded
  // (an older cache entry). A table whose last bucket is below it was cut short for memory.
  size_t requestedBytes = 0;
  uint64_t hash = 0;          // tuneHash() of the above
  // Bit c: candidate c has no times for a reason that may not recur (a peer-memory timeout, an
  // error, TACO_TUNE_FAULT, no room for its scratch). Agreed; neither hashed nor cached.
  uint32_t transient = 0;
};

// The buckets for a largest size of `maxBytes`: 4 KiB, 8 KiB, ... up to the largest power of
// two not above it (at least the 4 KiB bucket).
std::vector<size_t> tuneBuckets(size_t maxBytes);

// Elementwise max of the ranks' rows (all the same length): how per-rank timings and demotion
// flags combine, so that every rank that sees all rows derives the same numbers.
std::vector<float> combineMax(const std::vector<std::vector<float>>& rows);

// A table from combined numbers laid out as tuneLayout says: for every bucket, one time per
// candidate, then one demotion flag (0 or 1) per candidate. False when `flat` has the wrong
// length. A demoted candidate loses its times. Sets the hash.
size_t tuneLayoutSize(size_t nBuckets);
bool tuneTableFrom(const std::string& key, const std::vector<size_t>& bytes, const std::vector<float>& flat,
                   TuneTable* out);

// FNV-1a over the key, the buckets, the times' bits, the demotion flags and requestedBytes (when
// recorded: the hashes of entries written without it stay valid).
uint64_t tuneHash(const TuneTable& t);

// Why `t` must not be cached ("" when it may): it was measured short of the sizes asked for, or
// some candidate lacks times for a reason that may not recur (`transient`). A later job would
// take such a table as complete and never measure what it lacks; this process still uses it.
std::string tuneTableUncacheable(const TuneTable& t);

// Whether a failed check's reason (coll/tune_check.h, and the fused-large check) is a bit
// mismatch that every later measurement would find too: the output differs from its oracle, not
// by TACO_TUNE_FAULT. Errors, timeouts and injected faults may not recur.
bool tuneFailureRecurs(const std::string& why);

// The bucket nearest to `bytes` on a log scale (a size exactly between two buckets goes to the
// larger); sizes below the table take its first bucket, sizes above it its last, except in a
// table cut short for memory (its last bucket below requestedBytes), where sizes nearer the
// bucket above its last one (from sqrt(2) times the last bucket on) get -1: the model decides
// those, rather than a row measured far below them. -1 for an empty table too.
int nearestBucket(const TuneTable& t, size_t bytes);

// The choice among candidates with a time in row `r` when the model picks `modelAlgo`: the
// model's candidate, unless the fastest candidate is at least kTuneHysteresis faster than it
// (or the model's has no time); the model's candidate when no candidate has a time (-1 for a
// model algorithm no candidate runs).
int tunedCandidate(const TuneRow& r, int modelAlgo);
// The same as a tacoAlgo_t (`modelAlgo` when nothing is measured).
int tunedChoice(const TuneRow& r, int modelAlgo);

}  // namespace taco
