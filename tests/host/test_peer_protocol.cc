// A model of the peer-memory AllReduce's synchronisation, run under many random schedules:
// the kernels of coll/device/peer_kernels.cuh reduced to the steps that order them (the epoch
// word, the flags, the arrival and finish counters, programmatic dependent launch, the kernel
// boundaries), to the scratch slots they write and read and the tile counters the fused phases
// claim from (as if every fused phase claimed: TACO_PEER_CLAIM_MIN_RANKS), with the arithmetic of
// coll/peer_launch.h itself. Each schedule runs a sequence of calls (fused two-shot and
// one-shot, one to three chunks each) on P ranks, either as one world on one GPU (a loopback
// launch drives every rank) or as a process per rank (a stream each), and checks what
// docs/design.md §5 argues: no slot is written while a rank still reads it, every read sees the
// bytes its writer stored in the same epoch, no phase claims tiles from counters that an earlier
// phase has not reset (nor resets them under another), and nothing deadlocks.
//
// The model is written by hand from the kernels: a change to their order of steps belongs here
// too. It runs one CTA per rank or two (the counters then decide who writes the flags and the
// epoch), every CTA of a started kernel resident, and any interleaving of their steps, the
// ranks at random relative speeds.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "coll/peer_launch.h"
#include "check.h"

namespace {

using taco::peerChunkEpoch;
using taco::peerNextEpoch;

enum class Algo { Fused, OneShot };
struct Call {
  Algo algo;
  int nChunks;
};

std::string callsName(const std::vector<Call>& calls) {
  std::string s;
  for (const Call& c : calls) {
    if (!s.empty()) s += ' ';
    s += (c.algo == Algo::Fused ? "fused" : "oneshot") + std::to_string(c.nChunks);
  }
  return s;
}

// A slot of a rank's scratch: owner's half (by epoch parity), slot index. `writer` is whose
// bytes a reader expects there (the epoch is the reader's own).
struct SlotRef {
  int owner, slot, writer;
};

enum OpKind {
  kGridDepWait,     // griddepcontrol.wait: the previous kernel in the stream has completed
  kLaunchDeps,      // griddepcontrol.launch_dependents
  kReadEpoch,       // rankEpoch(): the epoch word, then peerChunkEpoch
  kBeginWrite,      // stores into `slots` (their owner's half of this epoch's parity)
  kEndWrite,
  kBeginRead,       // loads from `slots`
  kEndRead,
  kArrive,          // ctaArrive: the last CTA of the rank sets flag `phase` of the rank at every rank
  kWaitFlags,       // ctaWaitRanks: flag `phase` of every rank has reached this epoch
  kFinish,          // ctaFinish: the last CTA of the rank writes peerNextEpoch to the epoch word
};

struct Op {
  OpKind kind;
  int phase;        // kArrive, kWaitFlags
  bool skipSelf;    // kArrive, kWaitFlags: not the rank's own flag
  int counter;      // kArrive's counter line (CounterLine; -1: by the epoch's parity)
  std::vector<SlotRef> slots;
  int claim = -1;   // the four slot steps: the fused phase (FusedPhase) whose tile counters the CTA
                    // claims from at this point (-1: none)
  int reset = -1;   // kArrive, kFinish: the fused phase whose tile counters the rank's last CTA resets
  uint32_t back;    // kWaitFlags: for the flags of the epoch that many before the CTA's own
  Op(OpKind k, int ph = 0, bool skip = false, int line = 0, std::vector<SlotRef> s = {}, uint32_t b = 0)
      : kind(k), phase(ph), skipSelf(skip), counter(line), slots(std::move(s)), back(b) {}
};

// The counter lines (coll/peer_plan.h): the arrivals of phase 0 in even epochs, of phase 0 in
// odd ones (the fused scatter's; the one-shot uses the even one always), of phase 1; the finish.
enum CounterLine { kArrive0 = 0, kArrive0Odd = 1, kArrive1 = 2, kFinishLine = 3, kCounterLines = 4 };

struct Cta {
  int rank = 0;
  int chunk = 0, nChunks = 0;
  std::vector<Op> ops;
  size_t pc = 0;
  uint32_t epoch = 0;
  bool haveEpoch = false;
  bool triggered = false;  // has run kLaunchDeps
  bool done() const { return pc == ops.size(); }
};

struct Kernel {
  bool early = false;  // may start once every CTA of the previous kernel triggered (or exited)
  std::vector<Cta> ctas;
  bool started = false;
  bool complete() const {
    for (const Cta& c : ctas)
      if (!c.done()) return false;
    return true;
  }
  bool released() const {  // the next early kernel may start
    for (const Cta& c : ctas)
      if (!c.done() && !c.triggered) return false;
    return true;
  }
};

struct Slot {
  int readers = 0, writers = 0;
  bool written = false;
  uint32_t epoch = 0;
  int writer = -1;
};

struct Rank {
  uint32_t word = 0;                    // the epoch word
  std::vector<std::vector<uint32_t>> flags;  // [phase][src], in this rank's scratch
  uint32_t counters[kCounterLines] = {};
  std::vector<Slot> slots;              // [parity * P + slot]
  // The fused two-shot's tile counters (coll/peer_plan.h, claimLine), [parity][phase]: the epoch of
  // the phase that claims from them, -1 once its last CTA has reset them.
  int64_t claimOwner[2][3] = {{-1, -1, -1}, {-1, -1, -1}};
};

struct Model {
  int P = 2, ctasPerRank = 1;
  bool loopback = false;
  // The fused phases launch early (programmatic dependent launch: sm_90, one process driving every
  // rank on its GPU); else each kernel starts after the previous one has ended (ranks of several
  // processes on one GPU, or TACO_PEER_EARLY_LAUNCH=0), and griddepcontrol does nothing.
  bool early = true;
  // The fused two-shot's interleaved launch order (coll/allreduce_peer.cu): A0 B0, then per chunk
  // k >= 1: A(k) C(k-1) B(k), and last C(n-1).
  bool interleave = false;
  // The steps that the protocol needs beyond flags and kernel ends; main() takes each out in turn
  // and checks that the model then finds a violation.
  bool scatterWaitsChunk0 = true;      // A of chunk 1 waits for every peer's flag 0 of chunk 0
  bool gatherEndsLast = true;          // C advances the epoch after its griddepcontrol.wait
  bool scatterWaitsReduces = true;     // interleaved: A(k >= 2) waits for every peer's flag 1 of k - 2
  bool arriveAfterPredecessor = true;  // interleaved: A(k >= 1) and B arrive after their predecessor's end
  std::vector<Rank> ranks;
  std::vector<std::vector<Kernel>> streams;  // loopback: one; else one per rank
  std::string failure;                       // the first violation, empty if none

  Slot& slot(int owner, uint32_t epoch, int s) { return ranks[owner].slots[(epoch & 1) * P + s]; }

  // A fused phase's arrival (skipping the rank's own flag) on counter `line`, resetting the
  // phase's tile counters.
  static Op arrive(int phase, int line, int claims) {
    Op a{kArrive, phase, true, line};
    a.reset = claims;
    return a;
  }

  // The steps of one rank's CTA for chunk c of a call, as coll/device/peer_kernels.cuh orders them.
  std::vector<Op> fusedScatter(int r, int c) const {
    std::vector<Op> ops;
    if (c == 0) ops.push_back({kGridDepWait});
    ops.push_back({kReadEpoch});
    const bool early = interleave && c >= 1;  // lets C(c - 1), which does not wait, launch at once
    if (early) ops.push_back({kLaunchDeps});
    if (c == 1 && scatterWaitsChunk0) ops.push_back({kWaitFlags, 0, true, 0, {}, 1});
    if (c >= 2 && interleave && scatterWaitsReduces) ops.push_back({kWaitFlags, 1, true, 0, {}, 2});
    Op w{kBeginWrite};
    for (int j = 0; j < P; ++j)
      if (j != r) w.slots.push_back({j, r, r});
    w.claim = 0;
    ops.push_back(w);
    Op we{kEndWrite, 0, false, 0, w.slots};
    we.claim = 0;
    ops.push_back(we);
    if (early) {  // A(c - 1) may still run: its flags must come first (flags only grow)
      if (arriveAfterPredecessor) ops.push_back({kGridDepWait});
      ops.push_back(arrive(0, -1, 0));  // the line by the epoch's parity
    } else {
      ops.push_back(arrive(0, -1, 0));
      ops.push_back({kGridDepWait});
      ops.push_back({kLaunchDeps});
    }
    return ops;
  }
  std::vector<Op> fusedReduce(int r) const {
    std::vector<Op> ops;
    ops.push_back({kLaunchDeps});
    ops.push_back({kReadEpoch});
    ops.push_back({kWaitFlags, 0, true});
    Op rd{kBeginRead};
    for (int j = 0; j < P; ++j)
      if (j != r) rd.slots.push_back({r, j, j});
    rd.claim = 1;
    ops.push_back(rd);
    Op w{kBeginWrite};
    w.slots.push_back({r, r, r});
    ops.push_back(w);
    ops.push_back({kEndWrite, 0, false, 0, w.slots});
    Op re{kEndRead, 0, false, 0, rd.slots};
    re.claim = 1;
    ops.push_back(re);
    if (interleave && arriveAfterPredecessor) {  // flag 1 then also says that C(c - 1) ended
      ops.push_back({kGridDepWait});
      ops.push_back(arrive(1, kArrive1, 1));
    } else {
      ops.push_back(arrive(1, kArrive1, 1));
      ops.push_back({kGridDepWait});
    }
    return ops;
  }
  std::vector<Op> fusedGather(int r) const {
    std::vector<Op> ops;
    ops.push_back({kLaunchDeps});
    ops.push_back({kReadEpoch});
    ops.push_back({kWaitFlags, 1, true});
    Op rd{kBeginRead};
    for (int j = 0; j < P; ++j)
      if (j != r) rd.slots.push_back({j, j, j});
    rd.claim = 2;
    ops.push_back(rd);
    Op re{kEndRead, 0, false, 0, rd.slots};
    re.claim = 2;
    ops.push_back(re);
    Op finish{kFinish};
    finish.reset = 2;
    if (gatherEndsLast) {
      ops.push_back({kGridDepWait});
      ops.push_back(finish);
    } else {
      ops.push_back(finish);
      ops.push_back({kGridDepWait});
    }
    return ops;
  }
  std::vector<Op> oneShot(int r) const {
    std::vector<Op> ops;
    ops.push_back({kReadEpoch});
    Op w{kBeginWrite};
    w.slots.push_back({r, 0, r});
    ops.push_back(w);
    ops.push_back({kEndWrite, 0, false, 0, w.slots});
    ops.push_back({kArrive, 0, false, kArrive0});
    ops.push_back({kWaitFlags, 0, false});
    Op rd{kBeginRead};
    for (int q = 0; q < P; ++q) rd.slots.push_back({q, 0, q});
    ops.push_back(rd);
    ops.push_back({kEndRead, 0, false, 0, rd.slots});
    ops.push_back({kFinish});
    return ops;
  }

  // Appends a kernel of `ops(r)` for the ranks of `stream` (loopback: all; else rank `stream`).
  template <class Ops>
  void addKernel(int stream, bool early, int c, int n, Ops ops) {
    Kernel k;
    k.early = early;
    for (int r = 0; r < P; ++r) {
      if (!loopback && r != stream) continue;
      for (int i = 0; i < ctasPerRank; ++i) {
        Cta cta;
        cta.rank = r;
        cta.chunk = c;
        cta.nChunks = n;
        cta.ops = ops(r);
        k.ctas.push_back(cta);
      }
    }
    streams[stream].push_back(k);
  }

  void build(const std::vector<Call>& calls) {
    ranks.assign(P, Rank{});
    for (Rank& rk : ranks) {
      rk.flags.assign(2, std::vector<uint32_t>(P, 0));
      rk.slots.assign(2 * P, Slot{});
    }
    streams.assign(loopback ? 1 : P, {});
    for (int s = 0; s < (int)streams.size(); ++s) {
      for (const Call& call : calls) {
        for (int c = 0; c < call.nChunks; ++c) {
          if (call.algo == Algo::Fused && interleave) {
            addKernel(s, early, c, call.nChunks, [&](int r) { return fusedScatter(r, c); });
            if (c >= 1) addKernel(s, early, c - 1, call.nChunks, [&](int r) { return fusedGather(r); });
            addKernel(s, early, c, call.nChunks, [&](int r) { return fusedReduce(r); });
            if (c == call.nChunks - 1) addKernel(s, early, c, call.nChunks, [&](int r) { return fusedGather(r); });
          } else if (call.algo == Algo::Fused) {  // a launch per phase, each launched early (sm_90)
            addKernel(s, early, c, call.nChunks, [&](int r) { return fusedScatter(r, c); });
            addKernel(s, early, c, call.nChunks, [&](int r) { return fusedReduce(r); });
            addKernel(s, early, c, call.nChunks, [&](int r) { return fusedGather(r); });
          } else {  // cooperative: after the previous kernel's end
            addKernel(s, false, c, call.nChunks, [&](int r) { return oneShot(r); });
          }
        }
      }
    }
  }

  void fail(const Cta& cta, const char* what, const SlotRef* s = nullptr) {
    if (!failure.empty()) return;
    char buf[256];
    if (s != nullptr)
      std::snprintf(buf, sizeof(buf), "rank %d chunk %d epoch %u: %s (slot %d of rank %d's half %u)", cta.rank,
                    cta.chunk, cta.epoch, what, s->slot, s->owner, cta.epoch & 1);
    else
      std::snprintf(buf, sizeof(buf), "rank %d chunk %d epoch %u: %s", cta.rank, cta.chunk, cta.epoch, what);
    failure = buf;
  }

  // The rank's last CTA of a fused phase resets the phase's tile counters (phase -1: none).
  void resetClaims(const Cta& cta, int phase) {
    if (phase < 0) return;
    int64_t& owner = ranks[cta.rank].claimOwner[cta.epoch & 1][phase];
    if (owner != (int64_t)cta.epoch) fail(cta, "resets tile counters that another phase claims from");
    owner = -1;
  }

  // Whether the CTA's next step can run now (a wait whose condition does not hold cannot).
  bool ready(const std::vector<Kernel>& stream, size_t k, const Cta& cta) const {
    const Op& op = cta.ops[cta.pc];
    if (op.kind == kGridDepWait) return k == 0 || stream[k - 1].complete();
    if (op.kind == kWaitFlags) {
      const Rank& me = ranks[cta.rank];
      for (int i = 0; i < P; ++i) {
        if (op.skipSelf && i == cta.rank) continue;
        if ((int32_t)(me.flags[op.phase][i] - (cta.epoch - op.back + 1)) < 0) return false;
      }
    }
    return true;
  }

  void step(Cta& cta) {
    const Op& op = cta.ops[cta.pc];
    Rank& me = ranks[cta.rank];
    if (op.claim >= 0) {
      int64_t& owner = me.claimOwner[cta.epoch & 1][op.claim];
      if (owner == -1) owner = cta.epoch;
      else if (owner != (int64_t)cta.epoch) fail(cta, "claims tiles from counters an earlier phase has not reset");
    }
    switch (op.kind) {
      case kGridDepWait:
      case kWaitFlags: break;
      case kLaunchDeps: cta.triggered = true; break;
      case kReadEpoch:
        cta.epoch = peerChunkEpoch(me.word, cta.chunk);
        cta.haveEpoch = true;
        break;
      case kBeginWrite:
        for (const SlotRef& s : op.slots) {
          Slot& sl = slot(s.owner, cta.epoch, s.slot);
          if (sl.readers > 0) fail(cta, "writes a slot that a rank still reads", &s);
          ++sl.writers;
          sl.written = true;
          sl.epoch = cta.epoch;
          sl.writer = cta.rank;
        }
        break;
      case kEndWrite:
        for (const SlotRef& s : op.slots) --slot(s.owner, cta.epoch, s.slot).writers;
        break;
      case kBeginRead:
        for (const SlotRef& s : op.slots) {
          Slot& sl = slot(s.owner, cta.epoch, s.slot);
          if (sl.writers > 0) fail(cta, "reads a slot that a rank is writing", &s);
          if (!sl.written || sl.epoch != cta.epoch || sl.writer != s.writer)
            fail(cta, "reads bytes not stored in its epoch by their rank", &s);
          ++sl.readers;
        }
        break;
      case kEndRead:
        for (const SlotRef& s : op.slots) --slot(s.owner, cta.epoch, s.slot).readers;
        break;
      case kArrive: {
        const int line = op.counter >= 0 ? op.counter : (cta.epoch & 1) ? kArrive0Odd : kArrive0;
        if (++me.counters[line] != (uint32_t)ctasPerRank) break;
        me.counters[line] = 0;
        resetClaims(cta, op.reset);
        for (int j = 0; j < P; ++j)
          if (!(op.skipSelf && j == cta.rank)) ranks[j].flags[op.phase][cta.rank] = cta.epoch + 1;
        break;
      }
      case kFinish:
        if (++me.counters[kFinishLine] != (uint32_t)ctasPerRank) break;
        me.counters[kFinishLine] = 0;
        resetClaims(cta, op.reset);
        me.word = peerNextEpoch(cta.epoch, cta.chunk, cta.nChunks);
        break;
    }
    ++cta.pc;
  }

  // Where every CTA stands (TACO_MODEL_TRACE=1, on a deadlock).
  void dump() const {
    for (size_t s = 0; s < streams.size(); ++s)
      for (size_t k = 0; k < streams[s].size(); ++k)
        for (const Cta& c : streams[s][k].ctas)
          std::fprintf(stderr, "stream %zu kernel %zu rank %d chunk %d: step %zu of %zu, epoch %u%s\n", s, k, c.rank,
                       c.chunk, c.pc, c.ops.size(), c.epoch, streams[s][k].started ? "" : " (not started)");
    for (int r = 0; r < P; ++r) {
      std::fprintf(stderr, "rank %d: epoch word %u, flags", r, ranks[r].word);
      for (int ph = 0; ph < 2; ++ph)
        for (int i = 0; i < P; ++i) std::fprintf(stderr, " %u", ranks[r].flags[ph][i]);
      std::fprintf(stderr, "\n");
    }
  }

  // Runs the calls under one random schedule; false on a violation or a deadlock (`failure`).
  bool run(const std::vector<Call>& calls, uint64_t seed) {
    build(calls);
    failure.clear();
    std::mt19937_64 rng(seed);
    // Each rank's speed: how likely its CTA is picked among the ready ones.
    std::vector<double> speed(P);
    for (double& s : speed) s = std::uniform_real_distribution<double>(0.02, 1.0)(rng);
    std::vector<std::pair<size_t, std::pair<size_t, size_t>>> readyCtas;  // (stream, (kernel, cta))
    std::vector<double> weights;
    for (;;) {
      // Start what may start: a stream's kernels in order, each once its predecessor allows.
      for (auto& st : streams) {
        for (size_t k = 0; k < st.size(); ++k) {
          if (st[k].started) continue;
          const bool may = k == 0 || (st[k].early ? st[k - 1].started && st[k - 1].released() : st[k - 1].complete());
          if (!may) break;
          st[k].started = true;
        }
      }
      readyCtas.clear();
      weights.clear();
      bool allDone = true;
      for (size_t s = 0; s < streams.size(); ++s) {
        for (size_t k = 0; k < streams[s].size(); ++k) {
          Kernel& kn = streams[s][k];
          if (!kn.started) {
            allDone = false;
            break;
          }
          for (size_t i = 0; i < kn.ctas.size(); ++i) {
            const Cta& cta = kn.ctas[i];
            if (cta.done()) continue;
            allDone = false;
            if (ready(streams[s], k, cta)) {
              readyCtas.push_back({s, {k, i}});
              weights.push_back(speed[cta.rank]);
            }
          }
        }
      }
      if (allDone) return failure.empty();
      if (readyCtas.empty()) {
        failure = "deadlock: every CTA left waits";
        if (std::getenv("TACO_MODEL_TRACE") != nullptr) dump();
        return false;
      }
      const size_t pick = std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng);
      const auto& at = readyCtas[pick];
      step(streams[at.first][at.second.first].ctas[at.second.second]);
      if (!failure.empty()) return false;
    }
  }
};

// Every sequence of `length` calls drawn from `menu`.
std::vector<std::vector<Call>> sequences(const std::vector<Call>& menu, int length) {
  std::vector<std::vector<Call>> out{{}};
  for (int i = 0; i < length; ++i) {
    std::vector<std::vector<Call>> next;
    for (const auto& s : out)
      for (const Call& c : menu) {
        auto t = s;
        t.push_back(c);
        next.push_back(t);
      }
    out = next;
  }
  return out;
}

bool hasOneShot(const std::vector<Call>& calls) {
  for (const Call& c : calls)
    if (c.algo == Algo::OneShot) return true;
  return false;
}

// Runs every sequence (with or without a one-shot, as `oneShots`) under `seeds` schedules;
// returns how many had a violation, and the first message of each in `why`.
int countFailing(Model m, const std::vector<std::vector<Call>>& seqs, int seeds, bool oneShots,
                 std::vector<std::string>* why) {
  int failing = 0;
  for (size_t q = 0; q < seqs.size(); ++q) {
    const auto& seq = seqs[q];
    if (hasOneShot(seq) != oneShots) continue;
    for (int s = 0; s < seeds; ++s) {
      if (!m.run(seq, 0x9e3779b97f4a7c15ull * (uint64_t)(s + 1) + 1000003ull * q)) {
        ++failing;
        if (why != nullptr)
          why->push_back(callsName(seq) + ", schedule " + std::to_string(s) + ": " + m.failure);
        break;
      }
    }
  }
  return failing;
}

}  // namespace

// Arguments (for a deeper run than ctest's): calls per sequence (3), schedules per sequence (60),
// the largest P (3).
int main(int argc, char** argv) {
  const int length = argc > 1 ? std::atoi(argv[1]) : 3;
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 60;
  const int maxP = argc > 3 ? std::atoi(argv[3]) : 3;
  if (length < 1 || seeds < 1 || maxP < 2) {
    std::fprintf(stderr, "usage: %s [calls >= 1] [schedules >= 1] [largest P >= 2]\n", argv[0]);
    return 2;
  }
  const std::vector<Call> menu = {{Algo::Fused, 1}, {Algo::Fused, 2}, {Algo::Fused, 3}, {Algo::OneShot, 1},
                                  {Algo::OneShot, 2}};
  const auto seqs = sequences(menu, length);
  for (int P = 2; P <= maxP; ++P) {
    for (int ctas : {1, 2}) {
      // TACO_PEER_EARLY_LAUNCH 0 (or ranks of several processes on one GPU), 1 and 2.
      for (int mode : {0, 1, 2}) {
        static const char* const kModes[] = {"launched after the previous kernel", "launched early",
                                             "interleaved"};
        for (bool loopback : {true, false}) {
          Model m;
          m.P = P;
          m.ctasPerRank = ctas;
          m.loopback = loopback;
          m.early = mode != 0;
          m.interleave = mode == 2;
          const char* world = loopback ? "loopback" : "processes";
          for (bool oneShots : {false, true}) {
            std::vector<std::string> why;
            const int bad = countFailing(m, seqs, seeds, oneShots, &why);
            TEST_ASSERT_MSG(bad == 0, "%s, %s, P=%d, %d CTAs a rank, %s: %d sequences fail, first: %s", world,
                            kModes[mode], P, ctas, oneShots ? "with one-shots" : "fused only", bad,
                            why.empty() ? "" : why[0].c_str());
          }
        }
      }
      // A checker that cannot see a race proves nothing: without any one of these steps the model
      // must fail.
      struct Mutant {
        const char* what;
        bool loopback, interleave, oneShots;
        bool Model::*step;
      };
      const Mutant mutants[] = {
          {"without chunk 1's wait (a one-shot, then a fused call of two chunks)", false, false, true,
           &Model::scatterWaitsChunk0},
          {"with the gather's epoch before its wait (a reduce reads the word late)", true, false, false,
           &Model::gatherEndsLast},
          {"interleaved, without the scatter's wait for the reduces of k - 2", false, true, false,
           &Model::scatterWaitsReduces},
          {"interleaved, with arrivals before the predecessor's end (flags out of order)", false, true, false,
           &Model::arriveAfterPredecessor},
      };
      for (const Mutant& mu : mutants) {
        Model m;
        m.P = P;
        m.ctasPerRank = ctas;
        m.loopback = mu.loopback;
        m.interleave = mu.interleave;
        m.*mu.step = false;
        std::vector<std::string> why;
        const int bad = countFailing(m, seqs, seeds, mu.oneShots, &why);
        TEST_ASSERT_MSG(bad > 0, "P=%d, %d CTAs a rank: %s, the model finds no violation", P, ctas, mu.what);
        if (!why.empty())
          std::printf("P=%d, %d CTAs a rank, %s: %d sequences fail, e.g. %s\n", P, ctas, mu.what, bad,
                      why[0].c_str());
      }
    }
  }
  return TEST_REPORT();
}
