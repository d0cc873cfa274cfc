// The summary of a peer-kernel timeline (coll/peer_timeline.h): pure host code, tested
// with synthetic rows in tests/host/test_peer_timeline.cc.
#include "coll/peer_timeline.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/params.h"  // algoName
#include "taco.h"

namespace taco {
namespace {

struct LaunchShape {
  int algo, rank, P, nLocal, ctasPerRank;
};

LaunchShape shapeOf(uint64_t w) {
  return LaunchShape{(int)(w & 0xff), (int)(w >> 8 & 0xff), (int)(w >> 16 & 0xff), (int)(w >> 24 & 0xff),
                     (int)(uint32_t)(w >> 32)};
}

// The launch word without its rank: equal for every row of one launch.
uint64_t launchOnly(uint64_t w) { return w & ~(uint64_t)0xff00; }

bool fused(int algo) { return algo == tacoAlgoFused; }

// Whether a launch of `algo` records `event`.
bool records(int algo, int event) {
  return fused(algo) || event == kTimelineStart || event == kTimelineEndA || event == kTimelineWait0 ||
         event == kTimelineEnd;
}

const char* eventName(int algo, int event) {
  static const char* const kFused[kTimelineEvents] = {"start", "end A", "end wait0", "end B", "end wait1", "end C"};
  static const char* const kOneShot[kTimelineEvents] = {"start", "end compress", "end wait", "", "", "end decode"};
  return (fused(algo) ? kFused : kOneShot)[event];
}

// The name of the phase that ends at event e (e >= 1).
const char* phaseName(int algo, int event) {
  static const char* const kFused[kTimelineEvents] = {"", "A", "wait0", "B", "wait1", "C"};
  static const char* const kOneShot[kTimelineEvents] = {"", "compress", "wait", "", "", "decode"};
  return (fused(algo) ? kFused : kOneShot)[event];
}

double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Nanoseconds to microseconds. Differences are taken on the integers: a double holds
// %globaltimer's absolute value only to a few hundred nanoseconds.
double us(uint64_t later, uint64_t earlier) { return (double)(int64_t)(later - earlier) / 1e3; }

void appendf(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& out, const char* fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  out += line;
}

// "?" for a rank none of whose CTAs ran (its rows never written).
std::string rankText(const TimelineRankStats& r) { return r.rank < 0 ? "?" : std::to_string(r.rank); }

}  // namespace

TimelineSummary summarizePeerTimeline(const uint64_t* rows, int nRows) {
  TimelineSummary s;
  auto row = [&](int i) { return rows + (size_t)i * kTimelineSlots; };
  // The last launch: the one whose CTA started last (%globaltimer never goes back).
  int last = -1;
  for (int i = 0; i < nRows; ++i)
    if (row(i)[kTimelineLaunchSlot] != 0 && (last < 0 || row(i)[kTimelineStart] > row(last)[kTimelineStart]))
      last = i;
  if (last < 0) return s;
  const uint64_t launch = launchOnly(row(last)[kTimelineLaunchSlot]);
  const LaunchShape shape = shapeOf(launch);
  s.found = true;
  s.algo = shape.algo;
  s.P = shape.P;
  s.nLocal = shape.nLocal;
  s.ctasPerRank = shape.ctasPerRank;
  const int nLaunch = std::min(nRows, shape.nLocal * shape.ctasPerRank);
  // Rows of the launch that ran: a CTA that returned at once never wrote its row.
  auto ran = [&](int i) { return launchOnly(row(i)[kTimelineLaunchSlot]) == launch; };
  auto reached = [&](int i, int e) { return row(i)[e] >= row(i)[kTimelineStart] && records(shape.algo, e); };
  uint64_t origin = row(last)[kTimelineStart], end = origin;
  for (int i = 0; i < nLaunch; ++i) {
    if (!ran(i)) continue;
    origin = std::min(origin, row(i)[kTimelineStart]);
    for (int e = 0; e < kTimelineEvents; ++e)
      if (reached(i, e)) end = std::max(end, row(i)[e]);
  }
  s.spanUs = us(end, origin);

  for (int g = 0; g * shape.ctasPerRank < nLaunch; ++g) {
    TimelineRankStats r;
    const int first = g * shape.ctasPerRank, stop = std::min(nLaunch, first + shape.ctasPerRank);
    r.ctas = stop - first;
    std::vector<double> v;
    for (int e = 0; e < kTimelineEvents; ++e) {
      v.clear();
      for (int i = first; i < stop; ++i)
        if (ran(i) && reached(i, e)) v.push_back(us(row(i)[e], origin));
      TimelineEventStats& st = r.event[e];
      st.reached = (int)v.size();
      if (v.empty()) continue;
      st.minUs = *std::min_element(v.begin(), v.end());
      st.maxUs = *std::max_element(v.begin(), v.end());
      st.medianUs = median(v);
    }
    for (int i = first; i < stop; ++i)
      if (ran(i)) {
        ++r.started;
        if (r.rank < 0) r.rank = shapeOf(row(i)[kTimelineLaunchSlot]).rank;
      }
    // Each phase from the previous recorded event; and the total.
    for (int e = 1; e < kTimelineEvents; ++e) {
      if (!records(shape.algo, e)) continue;
      int from = e - 1;
      while (!records(shape.algo, from)) --from;
      v.clear();
      for (int i = first; i < stop; ++i)
        if (ran(i) && reached(i, from) && reached(i, e)) v.push_back(us(row(i)[e], row(i)[from]));
      if (!v.empty()) r.phaseUs[e - 1] = median(v);
    }
    v.clear();
    for (int i = first; i < stop; ++i)
      if (ran(i) && reached(i, kTimelineEnd)) v.push_back(us(row(i)[kTimelineEnd], row(i)[kTimelineStart]));
    if (!v.empty()) r.totalUs = median(v);
    // The work: the total less the waits (wait0 from end A; fused, also wait1 from end B).
    v.clear();
    for (int i = first; i < stop; ++i) {
      if (!ran(i)) continue;
      bool all = true;
      for (int e = 0; e < kTimelineEvents; ++e) all = all && (!records(shape.algo, e) || reached(i, e));
      if (!all) continue;
      double work = us(row(i)[kTimelineEnd], row(i)[kTimelineStart]) -
                    us(row(i)[kTimelineWait0], row(i)[kTimelineEndA]);
      if (fused(shape.algo)) work -= us(row(i)[kTimelineWait1], row(i)[kTimelineEndB]);
      v.push_back(work);
    }
    if (!v.empty()) r.workUs = median(v);
    s.ranks.push_back(r);
  }
  return s;
}

std::string formatPeerTimeline(const TimelineSummary& s, const char* who) {
  std::string out;
  const char* const tag = "TACO TIMELINE";
  if (!s.found) {
    appendf(out, "%s %s: no peer-kernel launch recorded\n", tag, who);
    return out;
  }
  appendf(out, "%s %s: the last %s launch, P=%d, %d rank(s) in the launch, %d CTAs per rank; span %.2f us\n", tag,
          who, algoName(s.algo), s.P, s.nLocal, s.ctasPerRank, s.spanUs);
  appendf(out, "%s   us from the launch's first CTA start, over each rank's CTAs (thread 0's view of its CTA)\n",
          tag);
  appendf(out, "%s %5s  %-12s %9s %10s %10s %10s\n", tag, "rank", "event", "CTAs", "min", "median", "max");
  for (const TimelineRankStats& r : s.ranks) {
    if (r.started == 0) {
      appendf(out, "%s %5s  none of its %d CTAs ran\n", tag, rankText(r).c_str(), r.ctas);
      continue;
    }
    for (int e = 0; e < kTimelineEvents; ++e) {
      if (!records(s.algo, e)) continue;
      const TimelineEventStats& st = r.event[e];
      char ctas[32];
      snprintf(ctas, sizeof(ctas), "%d/%d", st.reached, r.ctas);
      if (st.reached > 0)
        appendf(out, "%s %5s  %-12s %9s %10.2f %10.2f %10.2f\n", tag, rankText(r).c_str(), eventName(s.algo, e), ctas,
                st.minUs, st.medianUs, st.maxUs);
      else
        appendf(out, "%s %5s  %-12s %9s %10s %10s %10s\n", tag, rankText(r).c_str(), eventName(s.algo, e), ctas, "-",
                "-", "-");
    }
  }
  appendf(out, "%s %5s ", tag, "rank");
  for (int e = 1; e < kTimelineEvents; ++e)
    if (records(s.algo, e)) appendf(out, " %9s", phaseName(s.algo, e));
  appendf(out, " %9s %9s   (phases: median over CTAs, us; work: total less the waits)\n", "total", "work");
  for (const TimelineRankStats& r : s.ranks) {
    appendf(out, "%s %5s ", tag, rankText(r).c_str());
    for (int e = 1; e < kTimelineEvents; ++e) {
      if (!records(s.algo, e)) continue;
      if (r.phaseUs[e - 1] >= 0) appendf(out, " %9.2f", r.phaseUs[e - 1]);
      else appendf(out, " %9s", "-");
    }
    for (const double t : {r.totalUs, r.workUs}) {
      if (t >= 0) appendf(out, " %9.2f", t);
      else appendf(out, " %9s", "-");
    }
    appendf(out, "\n");
  }
  return out;
}

}  // namespace taco
