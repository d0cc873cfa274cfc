// The tuner (coll/tune.h). One measurement, on every rank at once:
//
//   1. agree on the largest size (TACO_TUNE_MAX_BYTES, halved until the buffers fit in half of
//      the free device memory on every rank) and allocate: a send and a receive buffer per rank
//      driven here, filled with inputs that are a function of (rank, dtype) alone;
//   2. check every candidate but plain and staged (the references) at two sizes, a small odd
//      count and a larger one, bit for bit against its oracle: fused against the staged
//      two-shot, one-shot against the codec kernels (every input compressed, then decompressed
//      and summed in rank order), raw one-shot against the fp32 sum in rank order (the loopback
//      plain kernel); a mismatch, an error or a peer-memory timeout demotes it, and the ranks
//      agree on the demotions (a candidate demoted anywhere is demoted everywhere);
//   3. time every candidate left at every bucket: warm-up calls, then the median of five runs
//      of back-to-back calls between CUDA events (enough calls per run to fill ~0.3 ms);
//   4. combine the ranks' times by the max through the transport's plain AllReduce (each rank
//      writes its row, zeros elsewhere: a sum that is a gather, exact in fp32), derive the
//      table, and compare its hash across ranks the same way;
//   5. install it for the world, and write it to the cache from the lowest rank of each host
//      (tuneStoresCache; a loopback world: its process), unless it lacks something a
//      later job could measure: sizes cut for memory, or a candidate lost for a reason that may not
//      recur (tuneTableUncacheable).
// Steps that can fail on one rank end in an agreement, so no rank goes on alone. The ranks, inputs
// and agreement are coll/tune_world.h; the check of step 2, coll/tune_check.h.
#include "coll/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "coll/allreduce_peer.h"
#include "coll/allreduce_run.h"
#include "coll/group.h"
#include "coll/peer_plan.h"
#include "coll/peer_resize.h"
#include "coll/peer_timeline_buffer.h"
#include "coll/tune_cache.h"
#include "coll/tune_check.h"
#include "coll/tune_state.h"
#include "coll/tune_table.h"
#include "coll/tune_world.h"
#include "codec/codec.h"
#include "core/check.h"
#include "core/comm.h"
#include "core/dtype.h"
#include "core/params.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace taco {
namespace {

using namespace tuner;
using Clock = std::chrono::steady_clock;

constexpr size_t kCheckLargeBytes = (size_t)16 << 20;
constexpr int kWarmups = 2;
constexpr int kRuns = 5;
constexpr int kMaxCallsPerRun = 32;
constexpr double kRunTargetUs = 300;

bool isPeerAlgo(int algo) { return algo == tacoAlgoFused || algo == tacoAlgoOneShot || algo == tacoAlgoOneShotRaw; }


// Warm-up calls, then the time of one call of `algo` at `count`, in microseconds.
tacoResult_t probeIt(Ctx& x, int algo, size_t count, float* us) {
  for (int w = 0; w < kWarmups; ++w) TACO_CHECK(runOnce(x, algo, count));
  float ms = 0;
  TACO_CUDA_CHECK(cudaEventRecord(x.e0, x.s));
  TACO_CHECK(runOnce(x, algo, count));
  TACO_CUDA_CHECK(cudaEventRecord(x.e1, x.s));
  TACO_CUDA_CHECK(cudaEventSynchronize(x.e1));
  TACO_CUDA_CHECK(cudaEventElapsedTime(&ms, x.e0, x.e1));
  *us = ms * 1e3f;
  return tacoSuccess;
}

// The median over runs of back-to-back calls (enough per run to fill kRunTargetUs at `probeUs`
// a call) of the time of one call, in microseconds.
tacoResult_t timeIt(Ctx& x, int algo, size_t count, float probeUs, float* us) {
  const double once = std::max(1.0, (double)probeUs);
  const int calls = (int)std::min<double>(kMaxCallsPerRun, std::max(1.0, std::ceil(kRunTargetUs / once)));
  std::vector<float> runs;
  float ms = 0;
  for (int r = 0; r < kRuns; ++r) {
    TACO_CUDA_CHECK(cudaEventRecord(x.e0, x.s));
    for (int k = 0; k < calls; ++k) TACO_CHECK(runOnce(x, algo, count));
    TACO_CUDA_CHECK(cudaEventRecord(x.e1, x.s));
    TACO_CUDA_CHECK(cudaEventSynchronize(x.e1));
    TACO_CUDA_CHECK(cudaEventElapsedTime(&ms, x.e0, x.e1));
    runs.push_back(ms * 1e3f / (float)calls);
  }
  std::sort(runs.begin(), runs.end());
  *us = runs[runs.size() / 2];
  if (peerGaveUp(x))
    return setError(tacoRemoteError, "%s: a peer-memory kernel gave up waiting while %s was timed", x.op,
                    algoName(algo));
  return tacoSuccess;
}

// The fused two-shot with the larger scratch (kCandFusedLarge): a second peer memory, swapped in
// around its calls. `other` holds whichever scratch is not the communicators' own.
struct LargeScratch {
  Ctx& x;
  std::vector<PeerMemory*> other;
  bool in = false;  // the larger scratch is the communicators' own now
  explicit LargeScratch(Ctx& ctx) : x(ctx) {}
  bool ready() const { return !other.empty() && other[0] != nullptr; }
  // Swaps once every rank driven here is idle (a peer kernel must not lose its scratch mid-flight).
  tacoResult_t swap() {
    TACO_CUDA_CHECK(cudaStreamSynchronize(x.s));
    for (tacoComm* c : x.world)
      for (cudaStream_t st : c->streams) TACO_CUDA_CHECK(cudaStreamSynchronize(st));
    for (size_t i = 0; i < x.world.size(); ++i) other[i] = peerMemorySwap(x.world[i], other[i]);
    in = !in;
    return tacoSuccess;
  }
  // Frees whichever scratch is not in use, keeping the communicators' own.
  void release() {
    for (tacoComm* c : x.world)
      for (cudaStream_t st : c->streams) (void)cudaStreamSynchronize(st);
    (void)cudaGetLastError();
    for (PeerMemory*& pm : other) peerMemoryFree(pm), pm = nullptr;
    other.clear();
  }
  ~LargeScratch() {
    if (in) (void)swap();  // an error on the way: the communicators get their own scratch back
    release();
  }
};

// `algo` by `run` with the larger scratch swapped in for its duration.
template <class Run>
tacoResult_t withLarge(LargeScratch& large, Run run) {
  TACO_CHECK(large.swap());
  const tacoResult_t r = run();
  const tacoResult_t back = large.swap();
  return r != tacoSuccess ? r : back;
}

// The check of the fused two-shot with the larger scratch: the same bits as with the
// communicator's own (chunking never changes a bit), on a window at each end of a call of
// `count` elements (its first and last launch). Empty when it passes.
std::string checkLarge(Ctx& x, LargeScratch& large, size_t count) {
  const size_t w = std::min(count, kCheckLargeBytes / 4 / x.eb), eb = x.eb;
  char what[256];
  auto windows = [&](std::vector<std::vector<uint8_t>>* out) -> bool {
    out->assign(x.world.size(), std::vector<uint8_t>(2 * w * eb));
    for (size_t i = 0; i < x.world.size(); ++i) {
      const char* r = static_cast<const char*>(x.recv[i]);
      if (cudaMemcpy((*out)[i].data(), r, w * eb, cudaMemcpyDeviceToHost) != cudaSuccess ||
          cudaMemcpy((*out)[i].data() + w * eb, r + (count - w) * eb, w * eb, cudaMemcpyDeviceToHost) != cudaSuccess)
        return (void)cudaGetLastError(), false;
    }
    return true;
  };
  std::vector<std::vector<uint8_t>> want, got;
  tacoResult_t r = runOnce(x, tacoAlgoFused, count);
  if (r == tacoSuccess && cudaStreamSynchronize(x.s) == cudaSuccess && windows(&want)) {
    for (size_t i = 0; i < x.world.size(); ++i)
      if (cudaMemsetAsync(x.recv[i], 0xa5, count * eb, x.s) != cudaSuccess) (void)cudaGetLastError();
    r = withLarge(large, [&] {
      TACO_CHECK(runOnce(x, tacoAlgoFused, count));
      TACO_CUDA_CHECK(cudaStreamSynchronize(x.s));
      return tacoSuccess;
    });
  } else if (r == tacoSuccess) {
    r = setError(tacoUnhandledCudaError, "%s: reading the fused two-shot's output failed", x.op);
  }
  if (peerGaveUp(x))
    return snprintf(what, sizeof(what), "fused-large at %zu elements: a peer-memory kernel gave up waiting", count), what;
  if (r != tacoSuccess || !windows(&got)) {
    snprintf(what, sizeof(what), "fused-large at %zu elements: %s", count, r != tacoSuccess ? lastError() : "reading its output failed");
    return what;
  }
  for (size_t i = 0; i < x.world.size(); ++i)
    if (got[i] != want[i]) {
      snprintf(what, sizeof(what), "fused-large at %zu elements: rank %d's output differs from the fused two-shot's "
               "with the communicator's scratch", count, x.world[i]->rank);
      return what;
    }
  return "";
}

// After a peer-memory kernel gave up: the peer memory of every rank driven here is released
// (its epochs no longer agree across ranks); the staged path and plain remain.
void releasePeerMemory(Ctx& x) {
  for (tacoComm* c : x.world) {
    for (cudaStream_t st : c->streams) (void)cudaStreamSynchronize(st);
    (void)cudaGetLastError();
    if (c->peer == nullptr) continue;
    peerTimelineFree(c);
    c->workspaceBytes -= c->peer->bytes;
    peerMemoryFree(c->peer);
    c->peer = nullptr;
  }
}

bool streamCapturing(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // e.g. the legacy stream while another stream captures: do nothing that could break it
  }
  return st != cudaStreamCaptureStatusNone;
}

// The measurement proper (the caller has suspended the thread's group).
tacoResult_t measure(Ctx& x, TuneTable* table, std::string* notes) {
  const size_t asked = tuneBuckets(envParams().tuneMaxBytes).back();
  const size_t granule = planGranule(x.c0->codec);
  const size_t smallCount = 3 * (size_t)x.P * granule + 5;
  const AlgoInputs in = algoInputs(x.c0, 1, x.dtype);

  // 1. The largest size every rank can afford: the buffers within half of the free memory.
  size_t freeB = 0, totalB = 0;
  if (cudaMemGetInfo(&freeB, &totalB) != cudaSuccess) (void)cudaGetLastError(), freeB = 0;
  size_t maxBytes = asked;
  auto need = [&](size_t m) {
    const size_t check = std::min(m, kCheckLargeBytes) + 64 * x.eb;
    return x.world.size() * 2 * std::max(m, check) + ((size_t)x.P + 2) * 2 * check;
  };
  while (maxBytes > kTuneMinBytes && need(maxBytes) > freeB / 2) maxBytes /= 2;
  // Agreed: the sizes asked for (the least of the ranks' settings) and those measured.
  std::vector<std::vector<float>> rows;
  TACO_CHECK(gatherRows(x, {(float)std::log2((double)asked), (float)std::log2((double)maxBytes)}, &rows));
  size_t requested = asked;
  for (const auto& r : rows) {
    requested = std::min(requested, (size_t)1 << (int)r[0]);
    maxBytes = std::min(maxBytes, (size_t)1 << (int)r[1]);
  }
  const std::vector<size_t> buckets = tuneBuckets(maxBytes);
  if (maxBytes < requested)
    TACO_INFO("tune: sizes up to %zu bytes (TACO_TUNE_MAX_BYTES %zu; free device memory %zu bytes)", maxBytes,
              envParams().tuneMaxBytes, freeB);
  const size_t largeCount = std::max(smallCount, std::min(maxBytes, kCheckLargeBytes) / x.eb) + 7;
  const size_t bufBytes = std::max(maxBytes, largeCount * x.eb);

  DeviceBuffers bufs;
  int ok = 1;
  for (size_t i = 0; i < x.world.size() && ok; ++i) {
    x.send.push_back(bufs.alloc(bufBytes));
    x.recv.push_back(bufs.alloc(bufBytes));
    ok = x.send.back() != nullptr && x.recv.back() != nullptr;
    if (ok && fillInput(x.send[i], bufBytes, x.dtype, x.world[i]->rank, x.s) != cudaSuccess)
      (void)cudaGetLastError(), ok = 0;
  }
  TACO_CHECK(gatherRows(x, {(float)ok}, &rows));
  for (const auto& r : rows) ok &= r[0] != 0;
  if (!ok)
    return setError(tacoOutOfMemory, "%s: the tuner's buffers (2 x %zu bytes per rank) could not be allocated on "
                    "every rank", x.op, bufBytes);

  // 2. Check: a candidate is demoted when any rank sees it fail. The ranks agree after every
  // check, so that they all run the same calls (the fused check's oracle is collective).
  // A demotion is `transient` (the table is then not cached) unless every rank that failed saw a
  // bit mismatch that would recur: a timeout, an error or TACO_TUNE_FAULT may not.
  uint32_t demoted = 0, transient = 0;
  bool peerFailed = false;
  const int fault = tuneFaultAlgo();
  for (int c = 0; c < kNumCandidates; ++c) {
    const int algo = candidateAlgo(c);
    if (algo == tacoAlgoPlain || algo == tacoAlgoStaged || c == kCandFusedLarge || algoAutoExcluded(algo, in) != nullptr)
      continue;
    std::string why;
    for (size_t count : {smallCount, largeCount}) {
      bool gaveUp = false;
      if (!peerFailed) why = check(x, algo, count, &gaveUp);
      else why = std::string(algoName(algo)) + ": not run: a peer-memory kernel gave up waiting earlier";
      const bool mayPass = !why.empty() && (gaveUp || fault == algo || !tuneFailureRecurs(why));
      TACO_CHECK(gatherRows(x, {why.empty() ? 0.0f : 1.0f, gaveUp ? 1.0f : 0.0f, mayPass ? 1.0f : 0.0f}, &rows));
      const std::vector<float> agreed = combineMax(rows);
      peerFailed = peerFailed || agreed[1] != 0;
      if (agreed[0] == 0) continue;
      if (why.empty()) why = std::string(algoName(algo)) + " at " + std::to_string(count) +
                             " elements: failed its check on another rank";
      demoted |= 1u << c;
      if (agreed[2] != 0) transient |= 1u << c;
      TACO_WARN("tune: %s is demoted on this communicator: %s", algoName(algo), why.c_str());
      *notes += (notes->empty() ? "" : "; ") + why;
      break;
    }
  }
  if (peerFailed)  // every peer-memory algorithm, checked or not: their epochs no longer agree
    for (int c = 0; c < kNumCandidates; ++c)
      if (isPeerAlgo(candidateAlgo(c)) && algoAutoExcluded(candidateAlgo(c), in) == nullptr)
        demoted |= 1u << c, transient |= 1u << c;

  // 2b. The fused two-shot with a scratch kLargeChunkFactor times larger: where the communicator's
  // own takes several launches a call, if the route gives every rank the larger one. Everything
  // deciding this is agreed (the sizes, the configuration, the demotions, the route's verdict).
  LargeScratch large(x);
  std::vector<bool> largeAt(buckets.size(), false);
  const size_t largeChunk = kLargeChunkFactor * x.c0->config.chunkBytes;
  if (algoAutoExcluded(tacoAlgoFused, in) == nullptr && !(demoted >> kCandFused & 1u) &&
      peerScratchOf(x.c0) < peerScratchBytes(largeChunk, x.P, x.c0->codec)) {
    size_t last = 0;
    for (size_t b = 0; b < buckets.size(); ++b)
      if ((largeAt[b] = peerPlan(tacoAlgoFused, x.c0->codec, buckets[b] / x.eb, x.dtype, x.P, peerScratchOf(x.c0))
                            .nChunks > 1))
        last = b;
    // Only where every rank has room for it, in half of its free memory (agreed).
    size_t freeNow = 0, totalNow = 0;
    if (cudaMemGetInfo(&freeNow, &totalNow) != cudaSuccess) (void)cudaGetLastError(), freeNow = 0;
    const size_t largeBytes = peerScratchBytes(largeChunk, x.P, x.c0->codec) * x.world.size();
    TACO_CHECK(gatherRows(x, {largeBytes > freeNow / 2 ? 1.0f : 0.0f}, &rows));
    if (largeAt[last] && combineMax(rows)[0] != 0) {
      TACO_INFO("tune: fused-large is not measured: its scratch (%zu bytes here) does not fit in half of the free "
                "device memory on every rank", largeBytes);
      transient |= 1u << kCandFusedLarge;  // another job may have the memory
    } else if (largeAt[last]) {
      TACO_CHECK(peerMemoryCreateSized(x.world, largeChunk, &large.other));
      if (!large.ready()) transient |= 1u << kCandFusedLarge;  // the route refused it: mostly for memory
      if (large.ready()) {
        const std::string why = checkLarge(x, large, buckets[last] / x.eb);
        const bool mayPass = !why.empty() && !tuneFailureRecurs(why);
        TACO_CHECK(gatherRows(x, {why.empty() ? 0.0f : 1.0f, mayPass ? 1.0f : 0.0f}, &rows));
        const std::vector<float> agreed = combineMax(rows);
        if (agreed[0] != 0) {
          const std::string said = why.empty() ? "fused-large: failed its check on another rank" : why;
          TACO_WARN("tune: fused-large is demoted on this communicator: %s", said.c_str());
          *notes += (notes->empty() ? "" : "; ") + said;
          demoted |= 1u << kCandFusedLarge;
          if (agreed[1] != 0) transient |= 1u << kCandFusedLarge;
          large.release();
        }
      }
    }
  }
  if (!large.ready()) largeAt.assign(buckets.size(), false);

  // 3. Time every candidate left, at every bucket. The calls per run come from the slowest rank's
  // probe, so that every rank makes the same number of calls.
  std::vector<float> flat(tuneLayoutSize(buckets.size()), kNoTime);
  for (int c = 0; c < kNumCandidates; ++c)
    flat[buckets.size() * kNumCandidates + (size_t)c] = (demoted >> c & 1u) ? 1.0f : 0.0f;
  std::vector<int> timed;
  for (int c = 0; c < kNumCandidates; ++c)
    if (c != kCandFusedLarge && !(demoted >> c & 1u) && algoAutoExcluded(candidateAlgo(c), in) == nullptr)
      timed.push_back(c);
  for (size_t b = 0; b < buckets.size(); ++b) {
    const size_t count = buckets[b] / x.eb;
    std::vector<int> here = timed;
    if (largeAt[b]) here.push_back(kCandFusedLarge);
    std::vector<float> probe(here.size());
    for (size_t k = 0; k < here.size(); ++k) {
      const auto one = [&] { return probeIt(x, candidateAlgo(here[k]), count, &probe[k]); };
      TACO_CHECK(here[k] == kCandFusedLarge ? withLarge(large, one) : one());
    }
    TACO_CHECK(gatherRows(x, probe, &rows));
    probe = combineMax(rows);
    for (size_t k = 0; k < here.size(); ++k) {
      float* at = &flat[b * kNumCandidates + (size_t)here[k]];
      const auto one = [&] { return timeIt(x, candidateAlgo(here[k]), count, probe[k], at); };
      TACO_CHECK(here[k] == kCandFusedLarge ? withLarge(large, one) : one());
    }
  }

  // 4. Combine (max over ranks), derive, and agree on the hash.
  TACO_CHECK(gatherRows(x, flat, &rows));
  if (!tuneTableFrom(tuneKeyOf(x.c0, x.dtype), buckets, combineMax(rows), table))
    return setError(tacoInternalError, "%s: the tuner's rows do not make a table", x.op);
  table->requestedBytes = requested;
  table->transient = transient;
  table->hash = tuneHash(*table);
  // The ranks compare the hash of the numbers (their keys may differ: a node of mixed GPUs keys its
  // ranks' tables apart, and its ranks then find no common cached table and measure again).
  TuneTable numbers = *table;
  numbers.key.clear();
  const uint64_t h = tuneHash(numbers);
  std::vector<float> hashWords(4);
  for (int k = 0; k < 4; ++k) hashWords[(size_t)k] = (float)((h >> (16 * k)) & 0xffffu);  // exact in fp32
  TACO_CHECK(gatherRows(x, hashWords, &rows));
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] != hashWords)
      return setError(tacoRemoteError, "%s: rank %zu derived another AllReduce table than rank %d (the ranks' "
                      "libtaco or settings differ?)", x.op, r, x.c0->rank);
  if (peerFailed) releasePeerMemory(x);
  // Where the table takes the larger scratch at some size, the communicators keep it (every rank
  // derives the same choices); otherwise it is freed with `large`.
  if (large.ready()) {
    size_t faster = 0;
    for (size_t b = 0; b < table->bytes.size(); ++b)
      faster += tunedAutoCandidate(x.c0, table->us[b], table->bytes[b] / x.eb, x.dtype) == kCandFusedLarge;
    if (faster > 0) {
      const size_t before = peerScratchOf(x.c0);
      TACO_CHECK(large.swap());
      large.in = false;  // kept: the communicators' scratch from now on; `other` holds the old ones
      TACO_INFO("tune: the fused two-shot is faster with a %zu-byte scratch (chunk %zu) at %zu size(s): kept, "
                "%zu bytes more per rank", peerScratchOf(x.c0), largeChunk, faster, peerScratchOf(x.c0) - before);
    }
  }
  return tacoSuccess;
}

std::string choicesText(const tacoComm* c, const TuneTable& t, tacoDataType_t dtype) {
  std::string s;
  const size_t eb = dtypeBytes(dtype);
  for (size_t b = 0; b < t.bytes.size(); ++b) {
    char one[64];
    const size_t kb = t.bytes[b] >> 10;
    snprintf(one, sizeof(one), "%s%zu%s %s", b ? ", " : "", kb >= 1024 ? kb >> 10 : kb, kb >= 1024 ? "M" : "K",
             candidateName(tunedAutoCandidate(c, t.us[b], t.bytes[b] / eb, dtype)));
    s += one;
  }
  return s;
}

}  // namespace

tacoResult_t tuneMeasure(const std::vector<tacoComm*>& world, tacoDataType_t dtype, cudaStream_t stream,
                         const char* op) {
  if (world.empty()) return setError(tacoInternalError, "%s: no communicator to tune", op);
  Ctx x;
  x.world = world;
  x.c0 = world[0];
  x.P = x.c0->nranks;
  x.allLocal = (int)world.size() == x.P;
  x.dtype = dtype;
  x.eb = dtypeBytes(dtype);
  x.s = stream;
  x.op = op;
  const AlgoInputs in = algoInputs(x.c0, 1, dtype);
  int runnable = 0;
  for (int c = 0; c < kNumCandidates; ++c) runnable += algoAutoExcluded(candidateAlgo(c), in) == nullptr;
  if (x.P < 2 || runnable < 2) {
    TACO_INFO("tune: nothing to measure for %s (%d rank(s), %d algorithm(s) this communicator can run)",
              dtypeName(dtype), x.P, runnable);
    return tacoSuccess;
  }
  GroupSuspension outside;  // the tuner's calls run now, not in the caller's group
  const auto t0 = Clock::now();
  TACO_CUDA_CHECK(cudaEventCreate(&x.e0));
  TACO_CUDA_CHECK(cudaEventCreate(&x.e1));
  TuneTable table;
  std::string notes;
  const tacoResult_t r = measure(x, &table, &notes);
  (void)cudaStreamSynchronize(x.s);
  TACO_CHECK(r);
  TuneInstalled t;
  t.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  t.source = "measured";
  t.notes = notes;
  t.table = std::make_shared<const TuneTable>(table);
  tuneInstall(x.c0, dtype, t);
  TACO_INFO("tune: rank %d/%d %s, codec %s: %zu sizes up to %zu bytes in %.2f s; %s", x.c0->rank, x.P,
            dtypeName(dtype), x.c0->codecSpec.c_str(), table.bytes.size(), table.bytes.back(), t.seconds,
            choicesText(x.c0, table, dtype).c_str());
  if (tuneStoresCache(x.c0)) {
    const std::string path = tuneCachePath();
    std::string why;
    std::vector<int> choice;
    for (size_t b = 0; b < table.bytes.size(); ++b)
      choice.push_back(tunedAutoCandidate(x.c0, table.us[b], table.bytes[b] / x.eb, dtype));
    const std::string partial = tuneTableUncacheable(table);
    if (!partial.empty())
      TACO_WARN("tune: the %s table is used by this process but not written to the cache (a later job measures "
                "again): %s", dtypeName(dtype), partial.c_str());
    else if (!tuneCacheStore(path, table, notes, &why, &choice))
      tuneCacheWarn("tune: the table was not written to the cache: " + why);
    else TACO_INFO("tune: the table was written to %s", path.c_str());
  }
  return tacoSuccess;
}

tacoResult_t tuneOnFirstUse(tacoComm* c, tacoDataType_t dtype, cudaStream_t stream) {
  const int mode = envParams().tune;
  if (mode == kTuneOff || c->config.algo != tacoAlgoAuto || c->nranks < 2) return tacoSuccess;
  if (!tuneFirstUsePending(c, dtype) || streamCapturing(stream)) return tacoSuccess;
  if (!tuneClaimFirstUse(c, dtype)) return tacoSuccess;
  const TuneInstalled have = tuneInstalledOf(c, dtype);
  if (have.table != nullptr && (mode == kTuneAuto || have.source == "measured")) return tacoSuccess;
  const std::vector<tacoComm*> world = tuneWorldOf(c);
  if (world.empty()) return tacoSuccess;
  if (tuneMeasure(world, dtype, stream, "AllReduce") != tacoSuccess)
    TACO_WARN("tune: the AllReduce table for %s could not be measured (%s): the built-in model decides",
              dtypeName(dtype), lastError());
  return tacoSuccess;
}

namespace {
tacoResult_t checkMayMeasure(cudaStream_t stream, const char* op) {
  if (groupDepth() > 0)
    return setError(tacoInvalidUsage, "%s: called inside tacoGroupStart/tacoGroupEnd; measuring runs collectives "
                    "of its own: call it outside any group", op);
  if (streamCapturing(stream))
    return setError(tacoInvalidUsage, "%s: the stream is capturing a CUDA graph; measure before the capture "
                    "(the captured calls then use the table)", op);
  return tacoSuccess;
}
}  // namespace

tacoResult_t tuneCommunicator(tacoComm* c, tacoDataType_t dtype, cudaStream_t stream, const char* op) {
  if (loopbackWorldOf(c->transport) != nullptr && c->nranks > 1)
    return setError(tacoInvalidUsage, "%s: comm is rank %d of a loopback world of %d ranks, which are measured "
                    "together: call tacoCommTuneLoopback with every rank", op, c->rank, c->nranks);
  TACO_CHECK(checkMayMeasure(stream, op));
  return tuneMeasure({c}, dtype, stream, op);
}

tacoResult_t tuneLoopback(tacoComm* const* comms, int n, tacoDataType_t dtype, cudaStream_t stream, const char* op) {
  const void* world = loopbackWorldOf(comms[0]->transport);
  if (world == nullptr)
    return setError(tacoInvalidArgument, "%s: comms[0] is not a loopback communicator (use tacoCommTune)", op);
  if (n != comms[0]->nranks)
    return setError(tacoInvalidArgument, "%s: nranks %d is not the world's %d ranks: pass every rank", op, n,
                    comms[0]->nranks);
  for (int r = 0; r < n; ++r) {
    if (loopbackWorldOf(comms[r]->transport) != world)
      return setError(tacoInvalidArgument, "%s: comms[%d] belongs to another loopback world than comms[0]", op, r);
    if (comms[r]->rank != r)
      return setError(tacoInvalidArgument, "%s: comms[%d] is rank %d: pass the world's ranks in rank order", op, r,
                      comms[r]->rank);
  }
  TACO_CHECK(checkMayMeasure(stream, op));
  return tuneMeasure(std::vector<tacoComm*>(comms, comms + n), dtype, stream, op);
}

std::string tuneReport(const tacoComm* c, tacoDataType_t dtype) {
  const TuneInstalled t = tuneInstalledOf(c, dtype);
  if (t.table == nullptr) return "";
  const TuneTable& tb = *t.table;
  const size_t eb = dtypeBytes(dtype);
  std::string model = "[", choice = "[";
  for (size_t b = 0; b < tb.bytes.size(); ++b) {
    const int m = modelAllReduceAlgo(c, tb.bytes[b] / eb, dtype);
    int ch = tunedAutoCandidate(c, tb.us[b], tb.bytes[b] / eb, dtype);  // as allReduceAlgo takes it
    if (ch < 0) ch = candidateOf(m);
    model += std::string(b ? ", " : "") + "\"" + algoName(m) + "\"";
    choice += std::string(b ? ", " : "") + "\"" + candidateName(ch) + "\"";
  }
  // Integers only: no locale can put a comma in them.
  char head[256];
  snprintf(head, sizeof(head),
           "{\"dtype\": \"%s\", \"source\": \"%s\", \"ms\": %lld, \"ranks\": %d, \"scratch_bytes\": %zu, "
           "\"large_chunk_bytes\": %zu, ",
           dtypeName(dtype), t.source.c_str(), (long long)std::llround(t.seconds * 1e3), c->nranks,
           peerScratchOf(c), kLargeChunkFactor * c->config.chunkBytes);
  const std::string entry = tuneTableJson(tb, t.notes);  // "{...}"
  return head + entry.substr(1, entry.size() - 2) + ", \"model\": " + model + "], \"choice\": " + choice + "]}";
}

}  // namespace taco
