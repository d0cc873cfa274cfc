// The AllReduce table (libtaco/coll/tune_table.cc): per-rank timings that differ combine into
// the same table on every rank, ties, demotion, the nearest bucket (none above the measured
// range), the 3 % hysteresis, and which tables may be cached. Pure functions, compiled in.
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../libtaco/coll/tune_table.cc"
#include "check.h"

using namespace taco;

namespace {

const size_t K = 1024, M = K * K;

// A table of these buckets from one row of times per bucket and no demotion.
TuneTable tableOf(const std::vector<size_t>& bytes, const std::vector<TuneRow>& rows, uint32_t demoted = 0) {
  std::vector<float> flat;
  for (const TuneRow& r : rows)
    for (float v : r) flat.push_back(v);
  for (int c = 0; c < kNumCandidates; ++c) flat.push_back((demoted >> c & 1u) ? 1.0f : 0.0f);
  TuneTable t;
  TEST_ASSERT(tuneTableFrom("k", bytes, flat, &t));
  return t;
}

TuneRow row(float plain, float raw, float one, float fused, float staged, float large = kNoTime) {
  return TuneRow{plain, raw, one, fused, large, staged};
}

}  // namespace

int main() {
  const float X = kNoTime;
  // ---- candidates and buckets
  for (int c = 0; c < kNumCandidates; ++c) {
    TEST_ASSERT_EQ_INT(candidateOf(candidateAlgo(c)), c == kCandFusedLarge ? kCandFused : c);
    TEST_ASSERT_EQ_INT(candidateByName(candidateName(c)), c);
  }
  TEST_ASSERT_EQ_INT(candidateOf(tacoAlgoAuto), -1);
  TEST_ASSERT_EQ_INT(candidateByName("auto"), -1);
  TEST_ASSERT_EQ_INT(candidateAlgo(kCandPlain), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(candidateAlgo(kCandFusedLarge), tacoAlgoFused);
  const std::vector<size_t> b256 = tuneBuckets(256 * M);
  TEST_ASSERT_EQ_SIZE(b256.size(), (size_t)17);  // 4 KiB .. 256 MiB
  TEST_ASSERT_EQ_SIZE(b256.front(), (size_t)4096);
  TEST_ASSERT_EQ_SIZE(b256.back(), 256 * M);
  TEST_ASSERT_EQ_SIZE(tuneBuckets(300 * M).back(), 256 * M);  // the largest power of two not above
  TEST_ASSERT_EQ_SIZE(tuneBuckets(4096).size(), (size_t)1);
  TEST_ASSERT_EQ_SIZE(tuneBuckets(100).size(), (size_t)1);  // never empty

  // ---- per-rank timings that differ: every rank combines the same gathered rows into the same
  // table (and hash), while each rank's own numbers would have chosen differently.
  const std::vector<size_t> buckets = tuneBuckets(64 * K);  // 4K .. 64K: 5 buckets
  const int P = 4;
  std::vector<std::vector<float>> perRank(P);
  for (int r = 0; r < P; ++r) {
    for (size_t b = 0; b < buckets.size(); ++b) {
      // rank r finds candidate (b + r) % 5 fastest: no two ranks agree on their own
      for (int c = 0; c < kNumCandidates; ++c)
        perRank[r].push_back(c == (int)((b + r) % kNumCandidates) ? 10.0f : 20.0f + (float)(r * 7 + c));
    }
    for (int c = 0; c < kNumCandidates; ++c) perRank[r].push_back(0.0f);
  }
  std::vector<TuneTable> derived(P), own(P);
  for (int r = 0; r < P; ++r) {
    // Every rank gathers the rows in rank order (the gather), combines, derives.
    TEST_ASSERT(tuneTableFrom("key", buckets, combineMax(perRank), &derived[r]));
    TEST_ASSERT(tuneTableFrom("key", buckets, perRank[r], &own[r]));
  }
  for (int r = 1; r < P; ++r) {
    TEST_ASSERT(derived[r].hash == derived[0].hash);
    TEST_ASSERT(own[r].hash != own[0].hash);  // what a rank alone would have derived differs
    for (size_t b = 0; b < buckets.size(); ++b)
      TEST_ASSERT_EQ_INT(tunedChoice(derived[r].us[b], tacoAlgoStaged), tunedChoice(derived[0].us[b], tacoAlgoStaged));
  }
  // The combined time is the slowest rank's: rank r's fast candidate is slow on the others.
  for (size_t b = 0; b < buckets.size(); ++b)
    for (int c = 0; c < kNumCandidates; ++c) {
      float want = 0;
      for (int r = 0; r < P; ++r) want = std::fmax(want, perRank[r][b * kNumCandidates + c]);
      TEST_ASSERT(derived[0].us[b][c] == want);
    }
  // Order of gathering does not matter to the max.
  std::vector<std::vector<float>> reversed(perRank.rbegin(), perRank.rend());
  TuneTable rev;
  TEST_ASSERT(tuneTableFrom("key", buckets, combineMax(reversed), &rev));
  TEST_ASSERT(rev.hash == derived[0].hash);
  // A NaN from a rank is no time; a rank's inf (cannot run) wins the max.
  TEST_ASSERT(std::isinf(combineMax({{1.0f, NAN}, {2.0f, 3.0f}})[1]));
  TEST_ASSERT(std::isinf(combineMax({{1.0f, 5.0f}, {2.0f, X}})[1]));
  TEST_ASSERT(combineMax({{1.0f, 5.0f}, {2.0f, 3.0f}})[0] == 2.0f);
  // The key enters the hash; a wrong-length layout is refused.
  TuneTable other;
  TEST_ASSERT(tuneTableFrom("other key", buckets, combineMax(perRank), &other));
  TEST_ASSERT(other.hash != derived[0].hash);
  TEST_ASSERT(!tuneTableFrom("key", buckets, std::vector<float>(3, 1.0f), &other));

  // ---- the choice: the fastest, unless the model's is within 3 %
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, 50, 60, 70), tacoAlgoStaged), tacoAlgoOneShot);
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, 97.5f, 60, 98), tacoAlgoFused), tacoAlgoFused);  // model is best
  // hysteresis: the model's 100 against a best of 97.5 (2.5 % faster): kept
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, 97.5f, 101, 120), tacoAlgoPlain), tacoAlgoPlain);
  // exactly 3 % faster: replaced
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, 97, 101, 120), tacoAlgoPlain), tacoAlgoOneShot);
  // 3.1 % faster: replaced; 2.9 % faster: kept
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, 96.9f, 101, 120), tacoAlgoPlain), tacoAlgoOneShot);
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, 97.1f, 101, 120), tacoAlgoPlain), tacoAlgoPlain);
  // the model's algorithm has no time (cannot run, or demoted): the fastest
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, X, 99.5f, 120), tacoAlgoOneShot), tacoAlgoFused);
  // nothing measured: the model
  TEST_ASSERT_EQ_INT(tunedChoice(row(X, X, X, X, X), tacoAlgoStaged), tacoAlgoStaged);
  // ties: the earlier candidate (plain first), whatever the model (when the model is not in the tie)
  TEST_ASSERT_EQ_INT(tunedChoice(row(50, 50, 50, 50, 50), tacoAlgoAuto), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(tunedChoice(row(80, 50, 50, 80, 100), tacoAlgoStaged), tacoAlgoOneShotRaw);
  // a tie that includes the model's choice keeps the model's
  TEST_ASSERT_EQ_INT(tunedChoice(row(50, 50, 50, 50, 50), tacoAlgoFused), tacoAlgoFused);

  // the fused two-shot with a larger scratch: a candidate of its own, running the fused algorithm;
  // it must beat the model's fused at its own chunk by 3 % too, and ties go to the smaller scratch
  TEST_ASSERT_EQ_INT(tunedCandidate(row(100, X, X, 80, 120, 70), tacoAlgoFused), kCandFusedLarge);
  TEST_ASSERT_EQ_INT(tunedChoice(row(100, X, X, 80, 120, 70), tacoAlgoFused), tacoAlgoFused);
  TEST_ASSERT_EQ_INT(tunedCandidate(row(100, X, X, 80, 120, 78), tacoAlgoFused), kCandFused);    // 2.5 %
  TEST_ASSERT_EQ_INT(tunedCandidate(row(100, X, X, 80, 120, 80), tacoAlgoStaged), kCandFused);   // a tie
  TEST_ASSERT_EQ_INT(tunedCandidate(row(100, X, X, X, 120, 60), tacoAlgoStaged), kCandFusedLarge);
  TEST_ASSERT_EQ_INT(tunedCandidate(row(X, X, X, X, X), tacoAlgoOneShot), kCandOneShot);  // nothing measured
  TEST_ASSERT_EQ_INT(tunedCandidate(row(X, X, X, X, X), tacoAlgoAuto), -1);

  // ---- demotion: a demoted candidate loses its times and is never chosen, on every row
  const uint32_t demoteOneShot = 1u << kCandOneShot;
  TuneTable d = tableOf({4096, 8192}, {row(100, X, 10, 60, 70), row(100, X, 10, 60, 70)}, demoteOneShot);
  TEST_ASSERT_EQ_INT((int)d.demoted, (int)demoteOneShot);
  for (size_t b = 0; b < d.bytes.size(); ++b) {
    TEST_ASSERT(std::isinf(d.us[b][kCandOneShot]));
    TEST_ASSERT_EQ_INT(tunedChoice(d.us[b], tacoAlgoOneShot), tacoAlgoFused);  // even where the model says one-shot
    TEST_ASSERT_EQ_INT(tunedChoice(d.us[b], tacoAlgoStaged), tacoAlgoFused);
  }
  // A demotion flag from any one rank demotes everywhere (combined by max like the times).
  {
    std::vector<float> a(tuneLayoutSize(1), 5.0f), b(tuneLayoutSize(1), 5.0f);
    for (int c = 0; c < kNumCandidates; ++c) a[kNumCandidates + c] = b[kNumCandidates + c] = 0.0f;
    b[kNumCandidates + kCandFused] = 1.0f;  // rank 1 saw fused fail its check
    TuneTable t0, t1;
    TEST_ASSERT(tuneTableFrom("k", {4096}, combineMax({a, b}), &t0));
    TEST_ASSERT(tuneTableFrom("k", {4096}, combineMax({b, a}), &t1));
    TEST_ASSERT(t0.hash == t1.hash && (t0.demoted >> kCandFused & 1u) && std::isinf(t0.us[0][kCandFused]));
    TEST_ASSERT(!std::isinf(t0.us[0][kCandOneShot]));
  }
  // Non-positive times are no time.
  TuneTable z = tableOf({4096}, {row(0, -1, 5, 6, 7)});
  TEST_ASSERT(std::isinf(z.us[0][kCandPlain]) && std::isinf(z.us[0][kCandOneShotRaw]));

  // ---- nearest bucket on a log scale
  TuneTable n = tableOf(tuneBuckets(1 * M), std::vector<TuneRow>(tuneBuckets(1 * M).size(), row(1, 2, 3, 4, 5)));
  TEST_ASSERT_EQ_INT(nearestBucket(n, 1), 0);
  TEST_ASSERT_EQ_INT(nearestBucket(n, 4096), 0);
  TEST_ASSERT_EQ_INT(nearestBucket(n, 8192), 1);
  // between 4K and 8K the boundary is 4K * sqrt(2) = 5792.6
  TEST_ASSERT_EQ_INT(nearestBucket(n, 5792), 0);
  TEST_ASSERT_EQ_INT(nearestBucket(n, 5793), 1);
  TEST_ASSERT_EQ_INT(nearestBucket(n, 6000), 1);  // closer to 8K on a log scale (linearly too)
  // between 32K and 64K the boundary is 32K * sqrt(2) = 46340.95
  TEST_ASSERT_EQ_INT(nearestBucket(n, 46340), 3);
  TEST_ASSERT_EQ_INT(nearestBucket(n, 46342), 4);
  // 700K: linearly nearer 512K (188K away) than 1M (324K), and on a log scale too (ratio 1.37 vs 1.50)
  TEST_ASSERT_EQ_INT(nearestBucket(n, 700 * K), 7);
  // 760K: log-nearer 1M (ratio 1.35) than 512K (1.48), though linearly nearer 512K (248K vs 264K)
  TEST_ASSERT_EQ_INT(nearestBucket(n, 760 * K), 8);
  TEST_ASSERT_EQ_INT(nearestBucket(n, 1 * M), 8);
  // Above the last bucket of a complete table: its last row (larger calls run as chunks of the
  // sizes measured), with the sizes asked for recorded or not.
  TEST_ASSERT_EQ_INT(nearestBucket(n, 64 * M), 8);
  TEST_ASSERT_EQ_INT(nearestBucket(n, (size_t)-1), 8);
  n.requestedBytes = 1 * M;
  TEST_ASSERT_EQ_INT(nearestBucket(n, 64 * M), 8);
  n.requestedBytes = 0;
  // A table cut short for memory (measured to 64K of 1M asked for): its last row up to
  // 64K * sqrt(2) = 92681.9, then none (128K was asked for and not measured: the model decides).
  TuneTable cut = tableOf(tuneBuckets(64 * K), std::vector<TuneRow>(tuneBuckets(64 * K).size(), row(1, 2, 3, 4, 5)));
  cut.requestedBytes = 1 * M;
  TEST_ASSERT_EQ_INT(nearestBucket(cut, 64 * K), 4);
  TEST_ASSERT_EQ_INT(nearestBucket(cut, 92681), 4);
  TEST_ASSERT_EQ_INT(nearestBucket(cut, 92682), -1);
  TEST_ASSERT_EQ_INT(nearestBucket(cut, 1 * M), -1);
  TEST_ASSERT_EQ_INT(nearestBucket(cut, (size_t)-1), -1);
  TuneTable empty;
  TEST_ASSERT_EQ_INT(nearestBucket(empty, 4096), -1);
  // Huge buckets: the log comparison does not overflow.
  TuneTable huge = tableOf({(size_t)1 << 40, (size_t)1 << 41}, {row(1, 2, 3, 4, 5), row(1, 2, 3, 4, 5)});
  TEST_ASSERT_EQ_INT(nearestBucket(huge, ((size_t)1 << 40) + ((size_t)1 << 38)), 0);  // 1.25 < sqrt(2)
  TEST_ASSERT_EQ_INT(nearestBucket(huge, ((size_t)1 << 40) + ((size_t)1 << 39)), 1);  // 1.5 > sqrt(2)
  huge.requestedBytes = (size_t)1 << 42;  // cut short: above the last bucket compared on a log scale too
  TEST_ASSERT_EQ_INT(nearestBucket(huge, ((size_t)1 << 41) + ((size_t)1 << 39)), 1);  // 1.25 < sqrt(2)
  TEST_ASSERT_EQ_INT(nearestBucket(huge, ((size_t)1 << 41) + ((size_t)1 << 40)), -1);  // 1.5: above
  TuneTable top = tableOf({(size_t)1 << 63}, {row(1, 2, 3, 4, 5)});  // the bucket above is no size_t
  top.requestedBytes = ~(size_t)0;
  TEST_ASSERT_EQ_INT(nearestBucket(top, ((size_t)1 << 63) + ((size_t)1 << 61)), 0);
  TEST_ASSERT_EQ_INT(nearestBucket(top, (size_t)-1), -1);

  // ---- the hash covers times and demotions
  TuneTable h1 = tableOf({4096}, {row(1, 2, 3, 4, 5)});
  TuneTable h2 = tableOf({4096}, {row(1, 2, 3, 4, 5.0000005f)});
  TuneTable h3 = tableOf({4096}, {row(1, 2, 3, 4, 5)}, 1u << kCandStaged);
  TEST_ASSERT(h1.hash != h2.hash && h1.hash != h3.hash && h1.hash == tuneHash(h1));
  // The sizes asked for enter the hash once recorded (unrecorded, the hash is what it always was:
  // older cache entries stay valid); the transient flags do not (they are never written).
  TuneTable h4 = h1;
  h4.requestedBytes = 4096;
  TEST_ASSERT(tuneHash(h4) != h1.hash);
  h4.requestedBytes = 0;
  h4.transient = 1u << kCandFused;
  TEST_ASSERT(tuneHash(h4) == h1.hash);

  // ---- which tables may be cached
  TuneTable whole = tableOf(tuneBuckets(1 * M), std::vector<TuneRow>(tuneBuckets(1 * M).size(), row(1, 2, 3, 4, 5)));
  TEST_ASSERT(tuneTableUncacheable(whole).empty());  // nothing recorded (a table read from an older entry)
  whole.requestedBytes = 1 * M;
  TEST_ASSERT(tuneTableUncacheable(whole).empty());  // measured as far as asked
  // Cut short for memory: used here, never cached (a later job with the memory measures it all).
  const std::string shortWhy = tuneTableUncacheable(cut);
  TEST_ASSERT_MSG(shortWhy.find("65536") != std::string::npos && shortWhy.find("1048576") != std::string::npos,
                  "%s", shortWhy.c_str());
  // A candidate lost for a reason that may not recur: named.
  TuneTable lost = whole;
  lost.transient = (1u << kCandOneShot) | (1u << kCandFusedLarge);
  const std::string lostWhy = tuneTableUncacheable(lost);
  TEST_ASSERT_MSG(lostWhy.find("oneshot, fused-large") != std::string::npos, "%s", lostWhy.c_str());
  // A deterministic demotion alone does not stop it.
  TuneTable kept = tableOf({4096}, {row(1, 2, 3, 4, 5)}, 1u << kCandOneShot);
  kept.requestedBytes = 4096;
  TEST_ASSERT(tuneTableUncacheable(kept).empty());

  // ---- which failed checks recur: a bit mismatch does; an injected one, an error, a timeout may not
  TEST_ASSERT(tuneFailureRecurs("oneshot at 4101 elements: rank 2's output differs from the oracle at element 7 "
                                "(3c00, expected 3c01)"));
  TEST_ASSERT(tuneFailureRecurs("fused-large at 65536 elements: rank 1's output differs from the fused two-shot's "
                                "with the communicator's scratch"));
  TEST_ASSERT(!tuneFailureRecurs("oneshot at 4101 elements: rank 0's output differs from the oracle at element 0 "
                                 "(3c01, expected 3c00) [TACO_TUNE_FAULT]"));
  TEST_ASSERT(!tuneFailureRecurs("fused at 4101 elements: a peer-memory kernel gave up waiting (TACO_WAIT_TIMEOUT_S)"));
  TEST_ASSERT(!tuneFailureRecurs("fused at 4101 elements: its oracle failed: out of memory"));
  TEST_ASSERT(!tuneFailureRecurs("fused: not run: a peer-memory kernel gave up waiting earlier"));
  TEST_ASSERT(!tuneFailureRecurs(""));
  return TEST_REPORT();
}
