// taco_perf: libtaco's collectives measured side by side with the plain
// (uncompressed) collective and a do-it-yourself FP8 baseline, in the style of
// nccl-tests. This file is the shared driver (nccl-tests' common.cu); each
// collective is a CollDesc in its own file. docs/perf-tool.md describes the
// layout and the columns.
//
//   mpirun -np 8 taco_perf -b 1K -e 1G -f 2 -o all -d bfloat16 -C taco,fp8-block
//   taco_perf --loopback 4 -b 1K -e 256M -o allreduce -C taco -G 10 -J out.json
//
// Driver, per (collective, datatype, size):
//   1. plain : the same libtaco call on a codec "none" communicator forced to
//              the plain algorithm (plain NCCL over NCCL; the loopback's
//              uncompressed kernels on one GPU).
//   2. DIY   : the collective's do-it-yourself baseline, where it has one.
//   3. codec : each -C codec, on its own communicator (--algo applies here);
//              skipped, with the library's reason, where the communicator
//              cannot run the forced algorithm.
// Each is warmed up, timed over -n iterations (or a CUDA graph of them, -G),
// then checked (-c 1) against a host fp64 reference computed from the known
// inputs, and, where every rank must end with the same bits, compared bitwise
// across ranks.
//
// Process model: with --loopback N this process drives N communicators on its
// GPU, one stream each, every call inside tacoGroupStart/End. Otherwise each
// process is one rank on one GPU (local rank modulo the visible GPUs); MPI (when
// built with it) or --id-file only hands the NCCL unique ids around: timings,
// errors and checksums are combined across ranks with a plain tacoAllGather.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "common.h"
#include "kernels.h"

namespace perf {

// ------------------------------------------------------------- collectives
const CollDesc& collDesc(Coll c) {
  switch (c) {
    case kAllReduce: return kAllReduceDesc;
    case kReduceScatter: return kReduceScatterDesc;
    case kAllGather: return kAllGatherDesc;
    case kAlltoAll: return kAlltoAllDesc;
    default: fatal("internal: collective %d", (int)c);
  }
}

double oneHopBusFactor(int P) { return P > 1 ? (double)(P - 1) / P : 0.0; }

// Mirrors libtaco's usePlain() and the accumulate-kernel limit of commSetup().
tacoResult_t blockwiseAlgo(const Ctx& c, int k, const Shape& sh, tacoDataType_t dt, int* algo) {
  const bool uncompressed = c.codecs[k].id == tacoCodecNone || c.P - 1 > TACO_MAX_ACCUM_INPUTS ||
                            sh.total * dtypeBytes(dt) < c.codecConfigs[k].fallbackBytes;
  *algo = uncompressed ? tacoAlgoPlain : tacoAlgoStaged;
  return tacoSuccess;
}

// ------------------------------------------------------------------- wire
bool runsUncompressed(tacoCodec_t codec, int algo) {
  return codec.id == tacoCodecNone || algo == tacoAlgoPlain || algo == tacoAlgoOneShotRaw;
}

// The `wire` column, the one definition (docs/perf-tool.md; the Python benchmark
// computes the same):
//   1.0                                            when the call runs uncompressed:
//                                                  codec none, or algorithm plain
//                                                  or oneshot-raw (the collectives
//                                                  other than AllReduce report
//                                                  plain below fallbackBytes);
//   pieceElems x dtype bytes / tacoCompressedSize(pieceElems)   otherwise,
// where a piece is what one rank compresses as a unit: an AllReduce shard on
// codec-block boundaries, one rank's block for the other collectives. Headers
// are counted; the per-chunk headers of calls above chunkBytes are not.
double wireRatio(tacoCodec_t codec, int algo, size_t pieceElems, tacoDataType_t dt) {
  if (runsUncompressed(codec, algo)) return 1.0;
  size_t compressed = 0;
  TACOCHECK(tacoCompressedSize(codec, pieceElems, dt, &compressed), nullptr);
  return (double)(pieceElems * dtypeBytes(dt)) / (double)compressed;
}

// ------------------------------------------------------------------ state
void Stats::merge(const Stats& o) {
  maxErr = std::max(maxErr, o.maxErr);
  maxRef = std::max(maxRef, o.maxRef);
  sumSqErr += o.sumSqErr;
  sumSqRef += o.sumSqRef;
  nonfinite += o.nonfinite;
}

double Stats::maxRel() const {
  if (nonfinite > 0) return INFINITY;
  return maxRef > 0 ? maxErr / maxRef : maxErr;
}

double Stats::rmsRel() const {
  if (nonfinite > 0) return INFINITY;
  return sumSqRef > 0 ? std::sqrt(sumSqErr / sumSqRef) : std::sqrt(sumSqErr);
}

bool isRoot(const Ctx& c) { return c.boot.rank == 0; }

namespace {

void syncAll(Ctx& c) {
  for (Local& L : c.ranks) CUDACHECK(cudaStreamSynchronize(L.stream));
}

// Every process's `n` doubles, in rank order. A loopback world is one process that measured every
// rank at once, so its own values are all there are: padding them to P entries would average
// zeros into them (it divided every loopback time by P).
std::vector<double> gatherDoubles(Ctx& c, const double* mine, int n) {
  if (c.loopback || c.P == 1) return std::vector<double>(mine, mine + n);
  std::vector<double> all((size_t)c.P * n);
  if (n > Ctx::kStatsMax) fatal("internal: gather of %d doubles", n);
  Local& L = c.ranks[0];
  CUDACHECK(cudaMemcpyAsync(c.dStatsSend, mine, n * sizeof(double), cudaMemcpyHostToDevice, L.stream));
  // Raw bytes through the plain all-gather (bit-preserving copies).
  TACOCHECK(tacoAllGather(c.dStatsSend, c.dStatsRecv, (size_t)n * 2, tacoFloat32, L.plain, L.stream), L.plain);
  CUDACHECK(cudaMemcpyAsync(all.data(), c.dStatsRecv, all.size() * sizeof(double), cudaMemcpyDeviceToHost,
                            L.stream));
  CUDACHECK(cudaStreamSynchronize(L.stream));
  return all;
}

void barrier(Ctx& c) {
  syncAll(c);
  if (!c.loopback && c.P > 1) {
    double z = 0;
    (void)gatherDoubles(c, &z, 1);
  }
}

// Element counts of the sizes -b..-e for this collective: multiples of P where
// the call takes count/P (as nccl-tests), duplicates after rounding removed.
std::vector<size_t> sizeList(const Options& o, const CollDesc& d, tacoDataType_t dt, int P) {
  const size_t eb = dtypeBytes(dt);
  const size_t unit = d.perRankBlocks ? (size_t)P : 1;
  std::vector<size_t> out;
  for (size_t s = o.minBytes; s <= o.maxBytes;) {
    size_t total = s / eb / unit * unit;
    if (total < unit) total = unit;
    if (out.empty() || out.back() != total) out.push_back(total);
    size_t next = o.stepBytes > 0 ? s + o.stepBytes : s * (size_t)o.stepFactor;
    if (next <= s) break;  // overflow
    s = next;
  }
  return out;
}

// ------------------------------------------------------------------ calls
// One iteration of the libtaco collective on every local rank; k < 0: plain.
void iterColl(Ctx& c, const CollDesc& d, const Shape& sh, tacoDataType_t dt, int k) {
  TACOCHECK(tacoGroupStart(), nullptr);
  for (Local& L : c.ranks) {
    tacoComm_t comm = k < 0 ? L.plain : L.comms[k];
    const tacoResult_t r = d.run(L.send, L.recv, sh, dt, comm, L.stream);
    if (r != tacoSuccess)
      fatal("%s %s count %zu on rank %d (%s): %s: %s", collName(d.coll), dtypeName(dt), sh.callCount, L.rank,
            k < 0 ? "plain" : c.o.codecs[k].c_str(), tacoGetErrorString(r), tacoGetLastError(comm));
  }
  TACOCHECK(tacoGroupEnd(), nullptr);
}

// Mean seconds per iteration of `iter` (every local rank), averaged over the processes (a loopback
// world is one). At least one untimed call first, as nccl-tests makes even with -w 0: the first
// call pays NCCL's lazy connection set-up, which is no part of a collective's time.
double timeIt(Ctx& c, const std::function<void()>& iter) {
  for (int w = 0; w < std::max(1, c.o.warmup); ++w) iter();
  barrier(c);
  double sec = 0;
  if (c.o.graphIters == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < c.o.iters; ++i) iter();
    syncAll(c);
    sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / c.o.iters;
  } else {
    // Capture the -n iterations of every local rank into one graph: the other
    // ranks' streams fork from and join into rank 0's capturing stream.
    cudaStream_t s0 = c.ranks[0].stream;
    CUDACHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed));
    CUDACHECK(cudaEventRecord(c.forkEvent, s0));
    for (size_t r = 1; r < c.ranks.size(); ++r) CUDACHECK(cudaStreamWaitEvent(c.ranks[r].stream, c.forkEvent, 0));
    for (int i = 0; i < c.o.iters; ++i) iter();
    for (size_t r = 1; r < c.ranks.size(); ++r) {
      CUDACHECK(cudaEventRecord(c.ranks[r].joinEvent, c.ranks[r].stream));
      CUDACHECK(cudaStreamWaitEvent(s0, c.ranks[r].joinEvent, 0));
    }
    cudaGraph_t graph = nullptr;
    CUDACHECK(cudaStreamEndCapture(s0, &graph));
    cudaGraphExec_t exec = nullptr;
    CUDACHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDACHECK(cudaGraphLaunch(exec, s0));  // first launch uploads the graph
    CUDACHECK(cudaStreamSynchronize(s0));
    barrier(c);
    const auto t0 = std::chrono::steady_clock::now();
    for (int g = 0; g < c.o.graphIters; ++g) CUDACHECK(cudaGraphLaunch(exec, s0));
    CUDACHECK(cudaStreamSynchronize(s0));
    sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
          ((double)c.o.graphIters * c.o.iters);
    CUDACHECK(cudaGraphExecDestroy(exec));
    CUDACHECK(cudaGraphDestroy(graph));
  }
  std::vector<double> all = gatherDoubles(c, &sec, 1);
  double sum = 0;
  for (double v : all) sum += v;
  return sum / all.size();
}

// ------------------------------------------------------------------ check
// Fills every local rank's send buffer, and (for -c 1) copies every rank's
// input prefix to the host: element i of rank q depends only on (seed, q, i), so
// each process regenerates the others' inputs instead of receiving them.
void prepareInputs(Ctx& c, tacoDataType_t dt) {
  const size_t eb = dtypeBytes(dt);
  for (Local& L : c.ranks) CUDACHECK(launchFill(L.send, c.allocBytes / eb, dt, c.o.seed, L.rank, L.stream));
  c.hostIn.clear();
  c.hostInElems = 0;
  if (!c.o.check) return syncAll(c);
  c.hostInElems = std::min(c.allocBytes, c.o.checkMaxBytes) / eb;
  c.hostIn.assign(c.P, std::vector<float>(c.hostInElems));
  Local& L = c.ranks[0];
  for (int q = 0; q < c.P; ++q) {
    CUDACHECK(launchFill(L.recv, c.hostInElems, dt, c.o.seed, q, L.stream));
    CUDACHECK(launchToFloat(L.recv, c.dScratch, c.hostInElems, dt, L.stream));
    CUDACHECK(cudaMemcpyAsync(c.hostIn[q].data(), c.dScratch, c.hostInElems * sizeof(float),
                              cudaMemcpyDeviceToHost, L.stream));
  }
  syncAll(c);
}

// Checks the outputs of every rank (after a measurement): error statistics vs
// the fp64 reference when the size is within --check-max, and bitwise
// agreement across ranks where the collective promises it.
void checkOutputs(Ctx& c, const CollDesc& d, const Shape& sh, tacoDataType_t dt, Measure* m, bool wantDiff) {
  if (!c.o.check) return;
  const size_t eb = dtypeBytes(dt);
  const size_t recvBytes = sh.recvElems * eb;
  // ---- bitwise agreement with rank 0
  if (wantDiff && d.sameOnEveryRank) {
    int diff = 0;
    if (c.loopback) {
      for (size_t r = 1; r < c.ranks.size(); ++r) {
        Local& L = c.ranks[r];
        CUDACHECK(cudaMemsetAsync(L.counter, 0, sizeof(unsigned long long), L.stream));
        CUDACHECK(launchCompare(c.ranks[0].recv, L.recv, recvBytes, L.counter, L.stream));
        unsigned long long n = 0;
        CUDACHECK(cudaMemcpyAsync(&n, L.counter, sizeof(n), cudaMemcpyDeviceToHost, L.stream));
        CUDACHECK(cudaStreamSynchronize(L.stream));
        diff += n != 0;
      }
    } else {
      Local& L = c.ranks[0];
      CUDACHECK(cudaMemsetAsync(L.counter, 0, sizeof(unsigned long long), L.stream));
      CUDACHECK(launchHash(L.recv, recvBytes, L.counter, L.stream));
      unsigned long long h = 0;
      CUDACHECK(cudaMemcpyAsync(&h, L.counter, sizeof(h), cudaMemcpyDeviceToHost, L.stream));
      CUDACHECK(cudaStreamSynchronize(L.stream));
      double hd;
      memcpy(&hd, &h, sizeof(hd));
      std::vector<double> all = gatherDoubles(c, &hd, 1);
      for (int q = 1; q < c.P; ++q) diff += memcmp(&all[q], &all[0], sizeof(double)) != 0;
    }
    m->diff = diff;
  }
  // ---- error vs the exact result
  if (sh.total * eb > c.o.checkMaxBytes || sh.total > c.hostInElems) return;
  Stats mine;
  c.hostOut.resize(sh.recvElems);
  for (Local& L : c.ranks) {
    CUDACHECK(launchToFloat(L.recv, c.dScratch, sh.recvElems, dt, L.stream));
    CUDACHECK(cudaMemcpyAsync(c.hostOut.data(), c.dScratch, sh.recvElems * sizeof(float), cudaMemcpyDeviceToHost,
                              L.stream));
    CUDACHECK(cudaStreamSynchronize(L.stream));
    Stats s;
    for (size_t i = 0; i < sh.recvElems; ++i) {
      const double e = d.expected(c.hostIn, c.P, L.rank, i, sh.total);
      const double y = c.hostOut[i];
      s.maxRef = std::max(s.maxRef, std::fabs(e));
      s.sumSqRef += e * e;
      if (!std::isfinite(y)) {
        s.nonfinite += 1;
        continue;
      }
      const double diff = std::fabs(y - e);
      s.maxErr = std::max(s.maxErr, diff);
      s.sumSqErr += diff * diff;
    }
    mine.merge(s);
  }
  const double v[5] = {mine.maxErr, mine.maxRef, mine.sumSqErr, mine.sumSqRef, mine.nonfinite};
  std::vector<double> all = gatherDoubles(c, v, 5);
  Stats tot;
  for (size_t q = 0; q < all.size() / 5; ++q) {
    Stats s;
    s.maxErr = all[q * 5];
    s.maxRef = all[q * 5 + 1];
    s.sumSqErr = all[q * 5 + 2];
    s.sumSqRef = all[q * 5 + 3];
    s.nonfinite = all[q * 5 + 4];
    tot.merge(s);
  }
  m->st = tot;
  m->checked = true;
}

// Poisons every rank's output (0xFF bytes: NaN in every dtype), so a call that
// wrote nothing cannot pass the check on an earlier variant's result.
void poisonOutputs(Ctx& c, size_t bytes) {
  for (Local& L : c.ranks) CUDACHECK(cudaMemsetAsync(L.recv, 0xFF, bytes, L.stream));
}

// The largest rmserr a compressed row may show (-c 1): a few times the lossiest codec's
// (int4-block's AllReduce, ~0.15 on the tool's inputs).
constexpr double kMaxCodecRmsErr = 0.3;

// Unit roundoff of the element type (the plain path's sanity bound).
double unitRoundoff(tacoDataType_t dt) {
  switch (dt) {
    case tacoFloat32: return std::ldexp(1.0, -24);
    case tacoFloat16: return std::ldexp(1.0, -11);
    default: return std::ldexp(1.0, -8);
  }
}

// ------------------------------------------------------------------ setup
tacoConfig_t makeConfig(const Options& o, const char* spec, int algo) {
  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;
  cfg.codec = spec;
  if (o.fallbackBytes >= 0) cfg.fallbackBytes = (size_t)o.fallbackBytes;
  if (o.chunkBytes > 0) cfg.chunkBytes = (size_t)o.chunkBytes;
  if (o.pipelineDepth > 0) cfg.pipelineDepth = o.pipelineDepth;
  if (algo >= 0) cfg.algo = algo;
  return cfg;
}

void createComms(Ctx& c) {
  const int nk = (int)c.o.codecs.size();
  c.ranks.resize(c.loopback ? c.P : 1);
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    c.ranks[r].rank = c.loopback ? (int)r : c.boot.rank;
    c.ranks[r].comms.assign(nk, nullptr);
  }
  std::vector<tacoComm_t> tmp(c.P);
  std::vector<tacoUniqueId> ids;
  if (!c.loopback) ids = shareUniqueIds(c.boot, c.o, nk + 1);
  for (int k = -1; k < nk; ++k) {
    // k = -1: the plain baseline, codec none and always the plain algorithm
    // (whatever TACO_ALGO says): the transport's own uncompressed collective.
    const char* spec = k < 0 ? "none" : c.o.codecs[k].c_str();
    tacoConfig_t cfg = makeConfig(c.o, spec, k < 0 ? (int)tacoAlgoPlain : c.o.algo);
    if (c.loopback) {
      TACOCHECK(tacoCommInitLoopback(tmp.data(), c.P, &cfg), nullptr);
      for (int r = 0; r < c.P; ++r) (k < 0 ? c.ranks[r].plain : c.ranks[r].comms[k]) = tmp[r];
    } else {
      tacoComm_t comm = nullptr;
      TACOCHECK(tacoCommInitRank(&comm, c.P, ids[k + 1], c.boot.rank, &cfg), nullptr);
      (k < 0 ? c.ranks[0].plain : c.ranks[0].comms[k]) = comm;
    }
  }
  c.codecs.resize(nk);
  c.codecConfigs.resize(nk);
  for (int k = 0; k < nk; ++k) {
    TACOCHECK(tacoCodecFind(c.o.codecs[k].c_str(), &c.codecs[k]), nullptr);
    TACOCHECK(tacoCommGetConfig(c.ranks[0].comms[k], &c.codecConfigs[k]), c.ranks[0].comms[k]);
  }
}

void allocate(Ctx& c) {
  size_t minEb = 4;
  for (tacoDataType_t dt : c.o.dtypes) minEb = std::min(minEb, dtypeBytes(dt));
  // Room for the largest size, and for the smallest rounded up to one element per rank.
  c.allocBytes = std::max(c.o.maxBytes, (size_t)c.P * 4);
  c.allocBytes = (c.allocBytes + 255) / 256 * 256;
  bool diy = false;
  for (Coll coll : c.o.colls) diy |= c.o.diy && collDesc(coll).iterDiy != nullptr;
  c.diyPacketCap = diy ? diyPacketBytes(c.allocBytes / minEb) : 0;
  for (Local& L : c.ranks) {
    CUDACHECK(cudaStreamCreateWithFlags(&L.stream, cudaStreamNonBlocking));
    CUDACHECK(cudaEventCreateWithFlags(&L.joinEvent, cudaEventDisableTiming));
    CUDACHECK(cudaMalloc(&L.send, c.allocBytes));
    CUDACHECK(cudaMalloc(&L.recv, c.allocBytes));
    CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&L.counter), sizeof(unsigned long long)));
    if (diy) {
      CUDACHECK(cudaMalloc(&L.diyPacket, c.diyPacketCap));
      CUDACHECK(cudaMalloc(&L.diyGathered, c.diyPacketCap * c.P));
    }
  }
  CUDACHECK(cudaEventCreateWithFlags(&c.forkEvent, cudaEventDisableTiming));
  c.scratchElems = c.o.check ? std::min(c.allocBytes, c.o.checkMaxBytes) / minEb : 0;
  if (c.scratchElems > 0) CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&c.dScratch), c.scratchElems * sizeof(float)));
  CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&c.dStatsSend), Ctx::kStatsMax * sizeof(double)));
  CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&c.dStatsRecv), (size_t)Ctx::kStatsMax * c.P * sizeof(double)));
}

void teardown(Ctx& c) {
  // Every rank's last call has ended before any rank frees its peer scratch (between processes
  // a peer's kernels may still read it: docs/api.md, tacoCommDestroy).
  barrier(c);
  for (Local& L : c.ranks) {
    for (tacoComm_t k : L.comms) TACOCHECK(tacoCommDestroy(k), nullptr);
    TACOCHECK(tacoCommDestroy(L.plain), nullptr);
    cudaFree(L.send);
    cudaFree(L.recv);
    cudaFree(L.counter);
    if (L.diyPacket) cudaFree(L.diyPacket);
    if (L.diyGathered) cudaFree(L.diyGathered);
    cudaEventDestroy(L.joinEvent);
    cudaStreamDestroy(L.stream);
  }
  if (c.dScratch) cudaFree(c.dScratch);
  cudaFree(c.dStatsSend);
  cudaFree(c.dStatsRecv);
  cudaEventDestroy(c.forkEvent);
}

// ------------------------------------------------------------------- run
struct Outcome {
  std::vector<Row> rows;
  std::vector<std::string> failures;
  std::vector<std::string> skipped;
};

void addFailure(Outcome* out, const Row& r, const char* variant, const char* what) {
  char b[512];
  snprintf(b, sizeof(b), "%s %s %zu B codec %s, %s: %s", collName(r.coll), dtypeName(r.dt), r.bytes,
           r.codec.c_str(), variant, what);
  out->failures.push_back(b);
}

// Every variant of one collective at one size: plain, DIY, then each codec.
void measureSize(Ctx& c, const CollDesc& d, tacoDataType_t dt, size_t total, Outcome* out) {
  const Shape sh = d.getCounts(total, c.P);
  const size_t bytes = total * dtypeBytes(dt);
  const size_t recvBytes = sh.recvElems * dtypeBytes(dt);
  const int nk = (int)c.codecs.size();

  // The algorithm of each codec's call; a communicator that cannot run the
  // forced one (--algo) skips its row, with the library's reason.
  std::vector<int> algo(nk, -1);
  std::vector<std::string> why(nk);
  bool any = false;
  for (int k = 0; k < nk; ++k) {
    if (d.algo(c, k, sh, dt, &algo[k]) != tacoSuccess) {
      algo[k] = -1;
      why[k] = tacoGetLastError(nullptr);
    }
    any |= algo[k] >= 0;
  }

  Row base{};
  base.coll = d.coll;
  base.dt = dt;
  base.bytes = bytes;
  base.count = total;
  if (any) {  // the baselines only where some codec row is measured
    poisonOutputs(c, recvBytes);
    base.plain.us = 1e6 * timeIt(c, [&] { iterColl(c, d, sh, dt, -1); });
    base.plain.ran = true;
    checkOutputs(c, d, sh, dt, &base.plain, true);
    if (d.iterDiy != nullptr && c.o.diy) {
      poisonOutputs(c, recvBytes);
      base.diy.us = 1e6 * timeIt(c, [&] { d.iterDiy(c, sh, dt); });
      base.diy.ran = true;
      checkOutputs(c, d, sh, dt, &base.diy, false);
    }
  }

  bool baselinesJudged = false;
  for (int k = 0; k < nk; ++k) {
    if (algo[k] < 0) {
      if (isRoot(c)) printSkipped(c, dt, bytes, total, k, why[k].c_str());
      char b[768];
      snprintf(b, sizeof(b), "%s %s %zu B codec %s: %s", collName(d.coll), dtypeName(dt), bytes,
               c.o.codecs[k].c_str(), why[k].c_str());
      out->skipped.push_back(b);
      continue;
    }
    Row r = base;
    r.codec = c.o.codecs[k];
    r.algo = algo[k];
    r.uncompressed = runsUncompressed(c.codecs[k], algo[k]);
    r.wire = wireRatio(c.codecs[k], algo[k], d.pieceElems(c.codecs[k], sh, c.P), dt);
    poisonOutputs(c, recvBytes);
    r.taco.us = 1e6 * timeIt(c, [&] { iterColl(c, d, sh, dt, k); });
    r.taco.ran = true;
    checkOutputs(c, d, sh, dt, &r.taco, true);
    if (isRoot(c)) printRow(c, r);
    // ---- pass/fail
    if (r.taco.diff > 0) addFailure(out, r, "taco", "ranks' outputs differ bitwise");
    if (r.taco.checked && r.taco.st.nonfinite > 0) addFailure(out, r, "taco", "non-finite outputs");
    // Rows that ran uncompressed must be plain's exact bits or within rounding; compressed rows must be
    // within a ceiling a few times the lossiest codec's (int4-block: rmserr ~0.15), which an output of
    // zeros (1), a rank's own input (>= 0.7 at P >= 2) or an average instead of a sum (0.5) exceed.
    if (r.taco.checked && r.uncompressed) {
      const double bound = d.exact ? 0.0 : 8.0 * c.P * unitRoundoff(dt);
      if (r.taco.st.maxRel() > bound) addFailure(out, r, "taco", "uncompressed, yet error beyond rounding");
    } else if (r.taco.checked && r.taco.st.rmsRel() > kMaxCodecRmsErr) {
      addFailure(out, r, "taco", "gross error (rmserr above the codecs' ceiling)");
    }
    if (!baselinesJudged) {  // once per size, on the first row that shows them
      baselinesJudged = true;
      if (r.plain.checked) {
        const double bound = d.exact ? 0.0 : 8.0 * c.P * unitRoundoff(dt);
        if (r.plain.st.nonfinite > 0 || r.plain.st.maxRel() > bound)
          addFailure(out, r, "plain", "error beyond rounding: the tool or the plain path is wrong");
      }
      if (r.diy.checked && r.diy.st.nonfinite > 0) addFailure(out, r, "DIY", "non-finite outputs");
    }
    out->rows.push_back(r);
  }
}

}  // namespace
}  // namespace perf

int main(int argc, char** argv) {
  using namespace perf;
  Ctx c;
  // Arguments first: no CUDA call before they are known to be good.
  {
    const int rc = parseArgs(argc, argv, &c.o);
    if (rc != 0) return rc;
    if (c.o.help) {
      printUsage(stdout);
      return 0;
    }
  }
  c.boot = bootstrap(&argc, &argv);
  c.loopback = c.o.loopback > 0;
  checkLaunch(c.boot, c.loopback);
  // -J is written by rank 0 at the end: a path it cannot write is said now, not after the run.
  if (c.boot.rank == 0 && !c.o.jsonPath.empty() && !canWriteFile(c.o.jsonPath.c_str()))
    fatalCode(2, "-J: cannot write '%s': %s", c.o.jsonPath.c_str(), errno != 0 ? strerror(errno) : "a directory");
  if (c.loopback && c.boot.size > 1)
    fatalCode(2, "--loopback runs every rank in one process: launch one process, not %d", c.boot.size);
  c.P = c.loopback ? c.o.loopback : c.boot.size;

  int ndev = 0;
  const cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0)
    fatal("no usable CUDA device (cudaGetDeviceCount: %s): measuring needs a GPU; only --help and the argument "
          "checks run without one",
          e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
  c.device = c.boot.localRank % ndev;
  CUDACHECK(cudaSetDevice(c.device));
  cudaDeviceProp prop;
  CUDACHECK(cudaGetDeviceProperties(&prop, c.device));
  c.deviceName = prop.name;

  createComms(c);
  if (!c.loopback && c.boot.size > 1 && c.boot.rank == 0 && !c.o.idFile.empty()) {
#ifndef TACO_PERF_MPI
    // Every rank has read the ids once the communicators exist.
    unlink(c.o.idFile.c_str());
#endif
  }
  allocate(c);
  if (isRoot(c)) printPreamble(c);

  Outcome out;
  for (Coll coll : c.o.colls) {
    const CollDesc& d = collDesc(coll);
    for (tacoDataType_t dt : c.o.dtypes) {
      prepareInputs(c, dt);
      // With TACO_TUNE=auto (the library's default) a communicator measures its AllReduce table at
      // its first eager AllReduce of a dtype: one small call per codec first, untimed, so that every
      // row runs, and its algo column names, the table's choice.
      // Not with a forced --algo (never tuned); with --algo auto too (it tunes as the default does).
      if (coll == kAllReduce && c.o.algo <= (int)tacoAlgoAuto) {
        const Shape first = d.getCounts((size_t)c.P, c.P);
        for (int k = 0; k < (int)c.codecs.size(); ++k) {
          int a = -1;  // a communicator that cannot run TACO_ALGO's algorithm skips its rows below
          if (d.algo(c, k, first, dt, &a) == tacoSuccess) iterColl(c, d, first, dt, k);
        }
        syncAll(c);
      }
      if (isRoot(c)) printHeader(c, coll, dt);
      for (size_t total : sizeList(c.o, d, dt, c.P)) measureSize(c, d, dt, total, &out);
    }
  }
  // Nothing measured at all (every row skipped) is a failure: a forced
  // algorithm that no communicator can run must not look like a clean run.
  if (out.rows.empty()) out.failures.push_back("nothing measured: every row was skipped");

  if (isRoot(c)) {
    printSummary(c, out.rows, out.failures, out.skipped);
    if (!c.o.jsonPath.empty()) writeJson(c, out.rows, out.failures, out.skipped);
  }
  fflush(stdout);
  teardown(c);
  finalizeBoot();
  return out.failures.empty() ? 0 : 1;
}
