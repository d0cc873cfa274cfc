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

// The last launch in `rows`: the launch of the row that started last (%globaltimer never goes
// back), its rows 0 .. nLaunch - 1, and its earliest start and latest event over the rows that
// ran.
struct LastLaunch {
  bool found = false;
  uint64_t launch = 0;  // its launch word without the rank
  LaunchShape shape{};
  int nLaunch = 0;
  uint64_t origin = 0, end = 0;
};

const uint64_t* rowOf(const uint64_t* rows, int i) { return rows + (size_t)i * kTimelineSlots; }

// Row i was written by the launch (a CTA that returned at once never wrote its row).
bool ran(const uint64_t* rows, int i, uint64_t launch) { return launchOnly(rowOf(rows, i)[kTimelineLaunchSlot]) == launch; }

// Row i's CTA reached event e in the launch: an older time is from an earlier launch.
bool reached(const uint64_t* rows, int i, int e, int algo) {
  return rowOf(rows, i)[e] >= rowOf(rows, i)[kTimelineStart] && records(algo, e);
}

LastLaunch lastLaunch(const uint64_t* rows, int nRows) {
  LastLaunch l;
  int last = -1;
  for (int i = 0; i < nRows; ++i)
    if (rowOf(rows, i)[kTimelineLaunchSlot] != 0 &&
        (last < 0 || rowOf(rows, i)[kTimelineStart] > rowOf(rows, last)[kTimelineStart]))
      last = i;
  if (last < 0) return l;
  l.found = true;
  l.launch = launchOnly(rowOf(rows, last)[kTimelineLaunchSlot]);
  l.shape = shapeOf(l.launch);
  l.nLaunch = std::min(nRows, l.shape.nLocal * l.shape.ctasPerRank);
  l.origin = l.end = rowOf(rows, last)[kTimelineStart];
  for (int i = 0; i < l.nLaunch; ++i) {
    if (!ran(rows, i, l.launch)) continue;
    l.origin = std::min(l.origin, rowOf(rows, i)[kTimelineStart]);
    for (int e = 0; e < kTimelineEvents; ++e)
      if (reached(rows, i, e, l.shape.algo)) l.end = std::max(l.end, rowOf(rows, i)[e]);
  }
  return l;
}

}  // namespace

TimelineSummary summarizePeerTimeline(const uint64_t* rows, int nRows) {
  TimelineSummary s;
  auto row = [&](int i) { return rowOf(rows, i); };
  const LastLaunch l = lastLaunch(rows, nRows);
  if (!l.found) return s;
  const uint64_t launch = l.launch;
  const LaunchShape shape = l.shape;
  s.found = true;
  s.algo = shape.algo;
  s.P = shape.P;
  s.nLocal = shape.nLocal;
  s.ctasPerRank = shape.ctasPerRank;
  const int nLaunch = l.nLaunch;
  auto ran = [&](int i) { return taco::ran(rows, i, launch); };
  auto reached = [&](int i, int e) { return taco::reached(rows, i, e, shape.algo); };
  const uint64_t origin = l.origin, end = l.end;
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

std::string formatPeerTimelineCtas(const uint64_t* rows, int nRows) {
  std::string out;
  const LastLaunch l = lastLaunch(rows, nRows);
  if (!l.found) return out;
  const char* const tag = "TACO TIMELINE";
  const int algo = l.shape.algo;
  appendf(out, "%s   every CTA of the last launch, us from its first CTA start ('-': not reached)\n", tag);
  appendf(out, "%s %5s %5s", tag, "cta", "rank");
  for (int e = 0; e < kTimelineEvents; ++e)
    if (records(algo, e)) appendf(out, " %10s", eventName(algo, e));
  appendf(out, "\n");
  for (int i = 0; i < l.nLaunch; ++i) {
    if (!ran(rows, i, l.launch)) {
      appendf(out, "%s %5d %5s  did not run\n", tag, i, "?");
      continue;
    }
    appendf(out, "%s %5d %5d", tag, i, shapeOf(rowOf(rows, i)[kTimelineLaunchSlot]).rank);
    for (int e = 0; e < kTimelineEvents; ++e) {
      if (!records(algo, e)) continue;
      if (reached(rows, i, e, algo)) appendf(out, " %10.2f", us(rowOf(rows, i)[e], l.origin));
      else appendf(out, " %10s", "-");
    }
    appendf(out, "\n");
  }
  return out;
}

}  // namespace taco
