// The peer-kernel timeline's summary (libtaco/coll/peer_timeline.cc): synthetic rows, as
// the kernels write them, against statistics worked out by hand. Pure host code,
// compiled in (with the parameter table, for the algorithm names).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../libtaco/coll/peer_timeline.cc"
#include "../../libtaco/core/log.cc"
#include "../../libtaco/core/params.cc"
#include "check.h"

using namespace taco;

namespace {

// %globaltimer's order of magnitude: a double would lose the nanoseconds.
const uint64_t T0 = 1700000000123456789ull;
const int64_t kNotReached = -1000000000;  // an older launch's time: before this row's start

std::vector<uint64_t> emptyRows(int n) { return std::vector<uint64_t>((size_t)n * kTimelineSlots, 0); }

// Row i: the launch word and the events' times in ns after T0 (kNotReached: an older time).
void setRow(std::vector<uint64_t>& rows, int i, uint64_t launch, std::vector<int64_t> ns) {
  uint64_t* row = rows.data() + (size_t)i * kTimelineSlots;
  for (size_t e = 0; e < ns.size(); ++e) row[e] = T0 + (uint64_t)ns[e];
  row[kTimelineLaunchSlot] = launch;
}

bool near(double a, double b) { return std::fabs(a - b) < 1e-9; }

#define CHECK_EVENT(st, nReached, mn, med, mx)                                                               \
  TEST_ASSERT_MSG((st).reached == (nReached) && near((st).minUs, mn) && near((st).medianUs, med) &&           \
                      near((st).maxUs, mx),                                                                   \
                  "reached %d min %.4f median %.4f max %.4f", (st).reached, (st).minUs, (st).medianUs, (st).maxUs)

void testNothingRecorded() {
  const std::vector<uint64_t> rows = emptyRows(8);
  const TimelineSummary s = summarizePeerTimeline(rows.data(), 8);
  TEST_ASSERT(!s.found);
  TEST_ASSERT(s.ranks.empty());
  const std::string text = formatPeerTimeline(s, "rank 0/2");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE rank 0/2: no peer-kernel launch recorded\n");
}

// Fused, P = 2, both ranks in one launch (loopback), 3 CTAs each; rows 6..9 are left from
// an older, larger launch. One CTA of rank 1 gave up its second wait.
void testFused() {
  std::vector<uint64_t> rows = emptyRows(10);
  const uint64_t older = timelineLaunchWord(tacoAlgoFused, 0, 2, 2, 5);
  for (int i = 6; i < 10; ++i) setRow(rows, i, older, {-2000000, -1900000, -1800000, -1700000, -1600000, -1500000});
  const uint64_t r0 = timelineLaunchWord(tacoAlgoFused, 0, 2, 2, 3), r1 = timelineLaunchWord(tacoAlgoFused, 1, 2, 2, 3);
  //                 start  end A  wait0  end B  wait1   end
  setRow(rows, 0, r0, {0, 1000, 1500, 2500, 3000, 4000});
  setRow(rows, 1, r0, {200, 1400, 1600, 2600, 3100, 4300});
  setRow(rows, 2, r0, {100, 1100, 1700, 2900, 3200, 4100});
  setRow(rows, 3, r1, {50, 1050, 1550, 2550, 3050, 4050});
  setRow(rows, 4, r1, {300, 1300, 1800, 2800, 3300, 4500});
  setRow(rows, 5, r1, {150, 1150, 1650, 2650, kNotReached, 5000});

  const TimelineSummary s = summarizePeerTimeline(rows.data(), 10);
  TEST_ASSERT(s.found);
  TEST_ASSERT_EQ_INT(s.algo, tacoAlgoFused);
  TEST_ASSERT_EQ_INT(s.P, 2);
  TEST_ASSERT_EQ_INT(s.nLocal, 2);
  TEST_ASSERT_EQ_INT(s.ctasPerRank, 3);
  TEST_ASSERT(near(s.spanUs, 5.0));
  TEST_ASSERT_EQ_INT(s.ranks.size(), 2);
  if (s.ranks.size() != 2) return;

  const TimelineRankStats& a = s.ranks[0];
  TEST_ASSERT_EQ_INT(a.rank, 0);
  TEST_ASSERT_EQ_INT(a.ctas, 3);
  TEST_ASSERT_EQ_INT(a.started, 3);
  CHECK_EVENT(a.event[kTimelineStart], 3, 0.0, 0.1, 0.2);
  CHECK_EVENT(a.event[kTimelineEndA], 3, 1.0, 1.1, 1.4);
  CHECK_EVENT(a.event[kTimelineWait0], 3, 1.5, 1.6, 1.7);
  CHECK_EVENT(a.event[kTimelineEndB], 3, 2.5, 2.6, 2.9);
  CHECK_EVENT(a.event[kTimelineWait1], 3, 3.0, 3.1, 3.2);
  CHECK_EVENT(a.event[kTimelineEnd], 3, 4.0, 4.1, 4.3);
  // Each CTA's own durations: A 1000/1200/1000, wait0 500/200/600, B 1000/1000/1200,
  // wait1 500/500/300, C 1000/1200/900, total 4000/4100/4000 ns.
  const double phasesA[kTimelinePhases] = {1.0, 0.5, 1.0, 0.5, 1.0};
  for (int k = 0; k < kTimelinePhases; ++k)
    TEST_ASSERT_MSG(near(a.phaseUs[k], phasesA[k]), "rank 0 phase %d: %.4f", k, a.phaseUs[k]);
  TEST_ASSERT(near(a.totalUs, 4.0));
  TEST_ASSERT(near(a.workUs, 3.1));  // the totals less both waits: 3000/3400/3100 ns

  const TimelineRankStats& b = s.ranks[1];
  TEST_ASSERT_EQ_INT(b.rank, 1);
  TEST_ASSERT_EQ_INT(b.started, 3);
  CHECK_EVENT(b.event[kTimelineEndB], 3, 2.55, 2.65, 2.8);
  CHECK_EVENT(b.event[kTimelineWait1], 2, 3.05, 3.175, 3.3);  // two reached: the mean of both
  CHECK_EVENT(b.event[kTimelineEnd], 3, 4.05, 4.5, 5.0);
  // wait1 and C over the two CTAs that reached the wait's end; the total over all three.
  TEST_ASSERT(near(b.phaseUs[kTimelineWait1 - 1], 0.5));
  TEST_ASSERT(near(b.phaseUs[kTimelineEnd - 1], 1.1));
  TEST_ASSERT(near(b.totalUs, 4.2));
  TEST_ASSERT(near(b.workUs, 3.1));  // 3000/3200: the CTA without its second wait's end does not count

  const std::string text = formatPeerTimeline(s, "rank 0/2, at destroy");
  TEST_ASSERT_STR_CONTAINS(text.c_str(),
                           "TACO TIMELINE rank 0/2, at destroy: the last fused launch, P=2, 2 rank(s) in the launch, "
                           "3 CTAs per rank; span 5.00 us");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE     1  end wait1          2/3       3.05");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE     0  end C              3/3       4.00       4.10       4.30");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE  rank          A     wait0         B     wait1         C     total");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE  rank          A     wait0         B     wait1         C     total"
                                         "      work   (phases: median over CTAs, us; work: total less the waits)\n");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE     1       1.00      0.50      1.00      0.50      1.10      4.20"
                                         "      3.10\n");
  // Every line is prefixed.
  size_t lines = 0;
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1, ++lines)
    TEST_ASSERT_MSG(text.compare(at, 14, "TACO TIMELINE ") == 0, "line %zu: %s", lines, text.c_str() + at);
  TEST_ASSERT_EQ_INT(lines, 3 + 2 * kTimelineEvents + 1 + 2);

  // Every CTA's row of the same launch (the older rows 6..9 not among them): its rank and its
  // events since the launch's first start; the wait that gave up, '-'.
  const std::string ctas = formatPeerTimelineCtas(rows.data(), 10);
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE   every CTA of the last launch, us from its first CTA start");
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE   cta  rank      start      end A  end wait0      end B  end wait1"
                                         "      end C\n");
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE     1     0       0.20       1.40       1.60       2.60       3.10"
                                         "       4.30\n");
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE     5     1       0.15       1.15       1.65       2.65          -"
                                         "       5.00\n");
  TEST_ASSERT(ctas.find("TACO TIMELINE     6 ") == std::string::npos);
  size_t ctaLines = 0;
  for (size_t at = 0; at < ctas.size(); at = ctas.find('\n', at) + 1, ++ctaLines)
    TEST_ASSERT_MSG(ctas.compare(at, 14, "TACO TIMELINE ") == 0, "line %zu: %s", ctaLines, ctas.c_str() + at);
  TEST_ASSERT_EQ_INT(ctaLines, 2 + 6);
}

// One-shot, P = 3 in one launch, 2 CTAs per rank; rank 1's CTAs never ran (its rows are
// zero); the fused-only slots hold garbage that must not count.
void testOneShot() {
  std::vector<uint64_t> rows = emptyRows(8);
  const uint64_t r0 = timelineLaunchWord(tacoAlgoOneShot, 0, 3, 3, 2), r2 = timelineLaunchWord(tacoAlgoOneShot, 2, 3, 3, 2);
  const int64_t junk = 9000000000;
  setRow(rows, 0, r0, {0, 700, 900, junk, junk, 1500});
  setRow(rows, 1, r0, {100, 800, 1000, junk, junk, 1900});
  setRow(rows, 4, r2, {40, 600, 1300, junk, junk, 2000});
  setRow(rows, 5, r2, {60, 650, 1250, junk, junk, 2100});

  const TimelineSummary s = summarizePeerTimeline(rows.data(), 8);
  TEST_ASSERT(s.found && s.algo == tacoAlgoOneShot && s.P == 3 && s.nLocal == 3 && s.ctasPerRank == 2);
  TEST_ASSERT(near(s.spanUs, 2.1));
  TEST_ASSERT_EQ_INT(s.ranks.size(), 3);
  if (s.ranks.size() != 3) return;
  const TimelineRankStats& a = s.ranks[0];
  TEST_ASSERT_EQ_INT(a.rank, 0);
  CHECK_EVENT(a.event[kTimelineEndA], 2, 0.7, 0.75, 0.8);
  TEST_ASSERT_EQ_INT(a.event[kTimelineEndB].reached, 0);
  TEST_ASSERT_EQ_INT(a.event[kTimelineWait1].reached, 0);
  TEST_ASSERT(near(a.phaseUs[0], 0.7) && near(a.phaseUs[1], 0.2) && near(a.phaseUs[4], 0.75));
  TEST_ASSERT(a.phaseUs[2] == -1 && a.phaseUs[3] == -1);
  TEST_ASSERT(near(a.totalUs, 1.65));
  TEST_ASSERT(near(a.workUs, 1.45));  // 1300/1600: the totals less the wait

  const TimelineRankStats& skipped = s.ranks[1];
  TEST_ASSERT_EQ_INT(skipped.rank, -1);
  TEST_ASSERT_EQ_INT(skipped.ctas, 2);
  TEST_ASSERT_EQ_INT(skipped.started, 0);
  TEST_ASSERT_EQ_INT(skipped.event[kTimelineStart].reached, 0);
  TEST_ASSERT(skipped.phaseUs[0] == -1 && skipped.totalUs == -1 && skipped.workUs == -1);

  const TimelineRankStats& c = s.ranks[2];
  TEST_ASSERT_EQ_INT(c.rank, 2);
  TEST_ASSERT(near(c.phaseUs[0], 0.575) && near(c.phaseUs[1], 0.65) && near(c.phaseUs[4], 0.775));
  TEST_ASSERT(near(c.workUs, 1.35));  // 1260/1440

  const std::string text = formatPeerTimeline(s, "rank 0/3, launch 4");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "the last oneshot launch, P=3, 3 rank(s) in the launch, 2 CTAs per rank");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE     ?  none of its 2 CTAs ran\n");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE     ?          -         -         -         -         -\n");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "TACO TIMELINE  rank   compress      wait    decode     total");
  TEST_ASSERT(text.find("end B") == std::string::npos && text.find("wait1") == std::string::npos);

  // Every CTA: the one-shot's events only; rank 1's CTAs (rows 2 and 3) did not run.
  const std::string ctas = formatPeerTimelineCtas(rows.data(), 8);
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE   cta  rank      start end compress   end wait end decode\n");
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE     2     ?  did not run\n");
  TEST_ASSERT_STR_CONTAINS(ctas.c_str(), "TACO TIMELINE     4     2       0.04       0.60       1.30       2.00\n");
  TEST_ASSERT(formatPeerTimelineCtas(emptyRows(4).data(), 4).empty());
}

// The launch is the one whose CTA started last, wherever its rows are; a launch word
// round-trips every field, a raw one-shot is named as such.
void testLastLaunchAndWord() {
  std::vector<uint64_t> rows = emptyRows(4);
  setRow(rows, 0, timelineLaunchWord(tacoAlgoOneShotRaw, 15, 16, 1, 1), {5000, 5100, 5200, 0, 0, 5300});
  setRow(rows, 1, timelineLaunchWord(tacoAlgoFused, 3, 4, 1, 4), {0, 10, 20, 30, 40, 50});
  const TimelineSummary s = summarizePeerTimeline(rows.data(), 4);
  TEST_ASSERT(s.found && s.algo == tacoAlgoOneShotRaw && s.P == 16 && s.nLocal == 1 && s.ctasPerRank == 1);
  TEST_ASSERT_EQ_INT(s.ranks.size(), 1);
  if (s.ranks.size() == 1) TEST_ASSERT_EQ_INT(s.ranks[0].rank, 15);
  TEST_ASSERT(near(s.spanUs, 0.3));
  const std::string text = formatPeerTimeline(s, "rank 15/16");
  TEST_ASSERT_STR_CONTAINS(text.c_str(), "the last oneshot-raw launch, P=16");
  const uint64_t big = timelineLaunchWord(tacoAlgoFused, 7, 8, 8, 100000);
  TEST_ASSERT(big != 0 && (big >> 32) == 100000 && (big & 0xff) == tacoAlgoFused && (big >> 8 & 0xff) == 7);
}

}  // namespace

int main() {
  testNothingRecorded();
  testFused();
  testOneShot();
  testLastLaunchAndWord();
  return TEST_REPORT();
}
