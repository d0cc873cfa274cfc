// taco_perf: libtaco's collectives measured side by side with the plain
// (uncompressed) collective and a do-it-yourself FP8 baseline, in the style of
// nccl-tests. docs/perf-tool.md describes the columns.
//
//   mpirun -np 8 taco_perf -b 1K -e 1G -f 2 -o all -d bfloat16 -C taco,fp8-block
//   taco_perf --loopback 4 -b 1K -e 256M -o allreduce -C taco -G 10 -J out.json
//
// Driver, per (collective, datatype, size):
//   1. plain : the same libtaco call on a codec "none" communicator (plain NCCL
//              over NCCL; the loopback's uncompressed kernels on one GPU).
//   2. DIY   : (allreduce) FP8 quantize -> plain all-gather -> dequantize-sum (diy.cu).
//   3. codec : each -C codec, on its own communicator.
// Each is warmed up, timed over -n iterations (or a CUDA graph of them, -G),
// then checked (-c 1) against a host fp64 reference computed from the known
// inputs, and, where every rank must end with the same bits (allreduce,
// allgather), compared bitwise across ranks.
//
// Process model: with --loopback N this process drives N communicators on its
// GPU, one stream each, every call inside tacoGroupStart/End. Otherwise each
// process is one rank on one GPU (local rank modulo the visible GPUs); MPI (when
// built with it) or --id-file only hands the NCCL unique ids around: timings,
// errors and checksums are combined across ranks with a plain tacoAllGather.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#ifdef TACO_PERF_MPI
#include <mpi.h>
#endif

#include "args.h"
#include "kernels.h"
#include "taco.h"

namespace perf {
namespace {

// ------------------------------------------------------------------ errors
int gWorldRank = 0;
[[maybe_unused]] bool gMpiActive = false;

[[noreturn]] void fatalExit(int code) {
  fflush(stdout);
  fflush(stderr);
#ifdef TACO_PERF_MPI
  if (gMpiActive) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  exit(code);
}

[[noreturn]] void fatalCode(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void fatalCode(int code, const char* fmt, ...) {
  fprintf(stderr, "taco_perf: rank %d: error: ", gWorldRank);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fatalExit(code);
}
#define fatal(...) fatalCode(1, __VA_ARGS__)

#define CUDACHECK(call)                                                                                  \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) fatal("%s:%d: %s: CUDA error '%s'", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)

#define TACOCHECK(call, comm)                                                                            \
  do {                                                                                                   \
    tacoResult_t r_ = (call);                                                                            \
    if (r_ != tacoSuccess)                                                                               \
      fatal("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, tacoGetErrorString(r_), tacoGetLastError(comm)); \
  } while (0)

// --------------------------------------------------------------- bootstrap
struct Boot {
  int rank = 0, size = 1, localRank = 0;
};

int envInt(const char* name, int dflt) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  return (end != v && *end == '\0') ? (int)x : dflt;
}

Boot bootstrap(int* argc, char*** argv) {
  Boot b;
#ifdef TACO_PERF_MPI
  (void)argc;
  (void)argv;
  MPI_Init(argc, argv);
  gMpiActive = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, b.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &b.localRank);
  MPI_Comm_free(&local);
#else
  (void)argc;
  (void)argv;
  // Launchers' conventions, first found wins.
  static const char* kEnv[][3] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                                  {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
                                  {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
                                  {"RANK", "WORLD_SIZE", "LOCAL_RANK"}};
  for (auto& e : kEnv) {
    int r = envInt(e[0], -1), s = envInt(e[1], -1);
    if (r >= 0 && s >= 1 && r < s) {
      b.rank = r;
      b.size = s;
      b.localRank = envInt(e[2], r);
      break;
    }
  }
#endif
  gWorldRank = b.rank;
  return b;
}

void finalizeBoot() {
#ifdef TACO_PERF_MPI
  if (gMpiActive) MPI_Finalize();
  gMpiActive = false;
#endif
}

// Rank 0 creates `n` unique ids; every rank ends with the same ids.
std::vector<tacoUniqueId> shareUniqueIds(const Boot& b, const Options& o, int n) {
  std::vector<tacoUniqueId> ids(n);
  if (b.rank == 0)
    for (int i = 0; i < n; ++i) TACOCHECK(tacoGetUniqueId(&ids[i]), nullptr);
  if (b.size == 1) return ids;
#ifdef TACO_PERF_MPI
  (void)o;
  MPI_Bcast(ids.data(), (int)(n * sizeof(tacoUniqueId)), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
  const size_t bytes = n * sizeof(tacoUniqueId);
  if (o.idFile.empty())
    fatalCode(2,
              "%d ranks found in the environment, but this taco_perf was built without MPI: pass --id-file PATH "
              "(a path on a file system every rank sees) to exchange the NCCL unique ids",
              b.size);
  if (b.rank == 0) {
    if (access(o.idFile.c_str(), F_OK) == 0)
      fatalCode(2, "--id-file %s exists already (left by an earlier run?): remove it first", o.idFile.c_str());
    const std::string tmp = o.idFile + ".tmp." + std::to_string(getpid());
    FILE* f = fopen(tmp.c_str(), "wb");
    if (f == nullptr || fwrite(ids.data(), 1, bytes, f) != bytes || fclose(f) != 0)
      fatal("cannot write %s", tmp.c_str());
    if (rename(tmp.c_str(), o.idFile.c_str()) != 0) fatal("cannot rename %s to %s", tmp.c_str(), o.idFile.c_str());
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      FILE* f = fopen(o.idFile.c_str(), "rb");
      if (f != nullptr) {
        size_t got = fread(ids.data(), 1, bytes, f);
        fclose(f);
        if (got == bytes) break;
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(300))
        fatal("waited 300 s for rank 0 to write --id-file %s", o.idFile.c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
#endif
  return ids;
}

// ------------------------------------------------------------------ state
struct Local {  // one rank driven by this process
  int rank = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t joinEvent = nullptr;
  tacoComm_t plain = nullptr;
  std::vector<tacoComm_t> comms;  // one per codec of -C
  void* send = nullptr;
  void* recv = nullptr;
  void* diyPacket = nullptr;
  void* diyGathered = nullptr;
  unsigned long long* counter = nullptr;  // device scalar for hash / compare
};

struct Stats {  // accumulated over elements, then over ranks
  double maxErr = 0, maxRef = 0, sumSqErr = 0, sumSqRef = 0, nonfinite = 0;
  void merge(const Stats& o) {
    maxErr = std::max(maxErr, o.maxErr);
    maxRef = std::max(maxRef, o.maxRef);
    sumSqErr += o.sumSqErr;
    sumSqRef += o.sumSqRef;
    nonfinite += o.nonfinite;
  }
  double maxRel() const {
    if (nonfinite > 0) return INFINITY;
    return maxRef > 0 ? maxErr / maxRef : maxErr;
  }
  double rmsRel() const {
    if (nonfinite > 0) return INFINITY;
    return sumSqRef > 0 ? std::sqrt(sumSqErr / sumSqRef) : std::sqrt(sumSqErr);
  }
};

struct Measure {  // one variant at one size
  bool ran = false;
  double us = NAN;      // mean time per call, averaged over ranks
  bool checked = false;
  Stats st;
  int diff = -1;        // ranks whose output differs bitwise from rank 0's; -1: not applicable
};

struct Row {
  Coll coll;
  tacoDataType_t dt;
  size_t bytes, count;
  std::string codec;
  bool fallback;
  double wire;
  Measure taco, plain, diy;
};

struct Ctx {
  Options o;
  Boot boot;
  bool loopback = false;
  int P = 1;
  int device = 0;
  std::string deviceName;
  std::vector<Local> ranks;
  std::vector<tacoCodec_t> codecs;
  std::vector<tacoConfig_t> codecConfigs;  // resolved
  size_t allocBytes = 0;
  size_t diyPacketCap = 0;
  float* dScratch = nullptr;
  size_t scratchElems = 0;
  double* dStatsSend = nullptr;
  double* dStatsRecv = nullptr;
  static constexpr int kStatsMax = 16;  // doubles per rank in one gather
  cudaEvent_t forkEvent = nullptr;
  std::vector<std::vector<float>> hostIn;  // every rank's input prefix (for the check)
  size_t hostInElems = 0;
  std::vector<float> hostOut;
};

bool isRoot(const Ctx& c) { return c.boot.rank == 0; }

double busFactor(Coll c, int P) {
  if (P <= 1) return 0.0;
  return c == kAllReduce ? 2.0 * (P - 1) / P : (double)(P - 1) / P;
}

void syncAll(Ctx& c) {
  for (Local& L : c.ranks) CUDACHECK(cudaStreamSynchronize(L.stream));
}

// Every rank's `n` doubles, in rank order (loopback: the caller has them all already).
std::vector<double> gatherDoubles(Ctx& c, const double* mine, int n) {
  std::vector<double> all((size_t)c.P * n);
  if (c.loopback || c.P == 1) {
    std::copy(mine, mine + n, all.begin());
    return all;
  }
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

// --------------------------------------------------------------- shapes
struct Shape {
  size_t total;      // the "count" column: elements of the largest buffer
  size_t callCount;  // the count argument of the call
  size_t sendElems, recvElems;
};

Shape shapeOf(Coll c, size_t total, int P) {
  const size_t n = total / P;
  switch (c) {
    case kAllReduce: return {total, total, total, total};
    case kReduceScatter: return {total, n, total, n};
    case kAllGather: return {total, n, n, total};
    case kAlltoAll: return {total, n, total, total};
    default: return {0, 0, 0, 0};
  }
}

// Element counts of the sizes -b..-e for this collective: multiples of P for
// all but allreduce (as nccl-tests), duplicates after rounding removed.
std::vector<size_t> sizeList(const Options& o, Coll c, tacoDataType_t dt, int P) {
  const size_t eb = dtypeBytes(dt);
  const size_t unit = c == kAllReduce ? 1 : (size_t)P;
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

// Wire ratio of a codec at this size: uncompressed bytes over compressed bytes
// (headers included) of what each rank sends; 1 when the call falls back.
double wireRatio(const Ctx& c, int k, Coll coll, size_t total, tacoDataType_t dt, bool* fallback) {
  const tacoCodec_t codec = c.codecs[k];
  const size_t bytes = total * dtypeBytes(dt);
  *fallback = codec.id == tacoCodecNone || bytes < c.codecConfigs[k].fallbackBytes ||
              (c.P - 1 > TACO_MAX_ACCUM_INPUTS);
  if (*fallback) return 1.0;
  size_t piece = total / c.P;
  if (coll == kAllReduce) {  // shards on block boundaries (docs/collectives.md)
    const size_t B = codec.blockSize > 0 ? (size_t)codec.blockSize : 256;
    const size_t nblocks = (total + B - 1) / B;
    piece = std::min(total, (nblocks + c.P - 1) / c.P * B);
  }
  size_t cb = 0;
  TACOCHECK(tacoCompressedSize(codec, piece, dt, &cb), nullptr);
  return (double)bytes / ((double)c.P * (double)cb);
}

// ------------------------------------------------------------------ calls
void enqueue(Coll coll, const Shape& sh, tacoDataType_t dt, Local& L, tacoComm_t comm) {
  switch (coll) {
    case kAllReduce: TACOCHECK(tacoAllReduce(L.send, L.recv, sh.callCount, dt, tacoSum, comm, L.stream), comm); break;
    case kReduceScatter:
      TACOCHECK(tacoReduceScatter(L.send, L.recv, sh.callCount, dt, tacoSum, comm, L.stream), comm);
      break;
    case kAllGather: TACOCHECK(tacoAllGather(L.send, L.recv, sh.callCount, dt, comm, L.stream), comm); break;
    case kAlltoAll: TACOCHECK(tacoAlltoAll(L.send, L.recv, sh.callCount, dt, comm, L.stream), comm); break;
    default: fatal("internal: collective %d", (int)coll);
  }
}

// One iteration of the libtaco collective on every local rank; k < 0: plain.
void iterColl(Ctx& c, Coll coll, const Shape& sh, tacoDataType_t dt, int k) {
  TACOCHECK(tacoGroupStart(), nullptr);
  for (Local& L : c.ranks) enqueue(coll, sh, dt, L, k < 0 ? L.plain : L.comms[k]);
  TACOCHECK(tacoGroupEnd(), nullptr);
}

// One iteration of the do-it-yourself FP8 AllReduce on every local rank.
void iterDiy(Ctx& c, const Shape& sh, tacoDataType_t dt) {
  const size_t pb = diyPacketBytes(sh.total);
  for (Local& L : c.ranks) CUDACHECK(launchDiyQuantize(L.send, sh.total, dt, L.diyPacket, L.stream));
  TACOCHECK(tacoGroupStart(), nullptr);
  for (Local& L : c.ranks)
    TACOCHECK(tacoAllGather(L.diyPacket, L.diyGathered, pb / 4, tacoFloat32, L.plain, L.stream), L.plain);
  TACOCHECK(tacoGroupEnd(), nullptr);
  for (Local& L : c.ranks) CUDACHECK(launchDiyDequantSum(L.diyGathered, c.P, sh.total, dt, L.recv, L.stream));
}

// Mean seconds per iteration of `iter` (every local rank), averaged over ranks.
double timeIt(Ctx& c, const std::function<void()>& iter) {
  for (int w = 0; w < c.o.warmup; ++w) iter();
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

// The exact (fp64) element i of rank r's output.
inline double expected(const Ctx& c, Coll coll, int r, size_t i, const Shape& sh) {
  const size_t n = sh.total / c.P;
  switch (coll) {
    case kAllReduce: {
      double s = 0;
      for (int q = 0; q < c.P; ++q) s += c.hostIn[q][i];
      return s;
    }
    case kReduceScatter: {
      double s = 0;
      for (int q = 0; q < c.P; ++q) s += c.hostIn[q][(size_t)r * n + i];
      return s;
    }
    case kAllGather: return c.hostIn[i / n][i % n];
    case kAlltoAll: return c.hostIn[i / n][(size_t)r * n + i % n];
    default: return NAN;
  }
}

bool sameOnEveryRank(Coll coll) { return coll == kAllReduce || coll == kAllGather; }

// Checks the outputs of every rank (after a measurement): error statistics vs
// the fp64 reference when the size is within --check-max, and bitwise
// agreement across ranks where the collective promises it.
void checkOutputs(Ctx& c, Coll coll, const Shape& sh, tacoDataType_t dt, Measure* m, bool wantDiff) {
  if (!c.o.check) return;
  const size_t eb = dtypeBytes(dt);
  const size_t recvBytes = sh.recvElems * eb;
  // ---- bitwise agreement with rank 0
  if (wantDiff && sameOnEveryRank(coll)) {
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
      const double e = expected(c, coll, L.rank, i, sh);
      const double y = c.hostOut[i];
      s.maxRef = std::max(s.maxRef, std::fabs(e));
      s.sumSqRef += e * e;
      if (!std::isfinite(y)) {
        s.nonfinite += 1;
        continue;
      }
      const double d = std::fabs(y - e);
      s.maxErr = std::max(s.maxErr, d);
      s.sumSqErr += d * d;
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

// ------------------------------------------------------------------ output
std::string fmtNum(double v, const char* fmt, bool valid = true) {
  if (!valid || std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  char b[64];
  snprintf(b, sizeof(b), fmt, v);
  return b;
}

void printHeader(const Ctx& c, Coll coll, tacoDataType_t dt) {
  printf("#\n# %s, %s, %d rank%s (%s), %d iterations%s, warmup %d\n", collName(coll), dtypeName(dt), c.P,
         c.P == 1 ? "" : "s", c.loopback ? "loopback on one GPU" : "NCCL, one GPU per rank", c.o.iters,
         c.o.graphIters > 0 ? (" in a CUDA graph launched " + std::to_string(c.o.graphIters) + " times").c_str() : "",
         c.o.warmup);
  printf("# %12s %12s %8s %-14s %9s %7s %7s  %9s %7s %7s  %7s %6s %9s %9s %5s  %9s %7s %7s %9s\n", "", "", "", "",
         "<----", "taco", "---->", "<----", "plain", "---->", "", "", "", "", "", "<----", "DIY fp8", "---->", "");
  printf("# %12s %12s %8s %-14s %9s %7s %7s  %9s %7s %7s  %7s %6s %9s %9s %5s  %9s %7s %7s %9s\n", "size",
         "count", "type", "codec", "time", "algbw", "busbw", "time", "algbw", "busbw", "speedup", "wire",
         "maxerr", "rmserr", "#diff", "time", "busbw", "speedup", "rmserr");
  printf("# %12s %12s %8s %-14s %9s %7s %7s  %9s %7s %7s  %7s %6s %9s %9s %5s  %9s %7s %7s %9s\n", "(B)",
         "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)", "(x)", "(x)", "", "", "",
         "(us)", "(GB/s)", "(x)", "");
}

void printRow(const Ctx& c, const Row& r) {
  const double algT = r.bytes / (r.taco.us * 1e-6) / 1e9;
  const double algP = r.bytes / (r.plain.us * 1e-6) / 1e9;
  const double algD = r.diy.ran ? r.bytes / (r.diy.us * 1e-6) / 1e9 : NAN;
  const double f = busFactor(r.coll, c.P);
  std::string codec = r.codec + (r.fallback && c.codecs.size() > 0 && r.codec != "none" ? "*" : "");
  printf("  %12zu %12zu %8s %-14s %9s %7s %7s  %9s %7s %7s  %7s %6s %9s %9s %5s  %9s %7s %7s %9s\n", r.bytes,
         r.count, dtypeName(r.dt), codec.c_str(), fmtNum(r.taco.us, "%.1f").c_str(), fmtNum(algT, "%.2f").c_str(),
         fmtNum(algT * f, "%.2f").c_str(), fmtNum(r.plain.us, "%.1f").c_str(), fmtNum(algP, "%.2f").c_str(),
         fmtNum(algP * f, "%.2f").c_str(), fmtNum(r.plain.us / r.taco.us, "%.2f").c_str(),
         fmtNum(r.wire, "%.2f").c_str(), fmtNum(r.taco.st.maxRel(), "%.2e", r.taco.checked).c_str(),
         fmtNum(r.taco.st.rmsRel(), "%.2e", r.taco.checked).c_str(),
         r.taco.diff < 0 ? "-" : std::to_string(r.taco.diff).c_str(), fmtNum(r.diy.us, "%.1f", r.diy.ran).c_str(),
         fmtNum(algD * f, "%.2f", r.diy.ran).c_str(), fmtNum(r.plain.us / r.diy.us, "%.2f", r.diy.ran).c_str(),
         fmtNum(r.diy.st.rmsRel(), "%.2e", r.diy.checked).c_str());
  fflush(stdout);
}

std::string jsonStr(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if ((unsigned char)ch < 0x20) o += ' ';
    else o += ch;
  }
  return o + "\"";
}

std::string jsonNum(double v, bool valid = true) {
  if (!valid || !std::isfinite(v)) return "null";
  char b[64];
  snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

void jsonMeasure(FILE* f, const char* prefix, const Measure& m, size_t bytes, double factor) {
  const double alg = m.ran ? bytes / (m.us * 1e-6) / 1e9 : NAN;
  fprintf(f, ", \"%stime_us\": %s, \"%salgbw_gbps\": %s, \"%sbusbw_gbps\": %s", prefix, jsonNum(m.us, m.ran).c_str(),
          prefix, jsonNum(alg, m.ran).c_str(), prefix, jsonNum(alg * factor, m.ran).c_str());
  fprintf(f, ", \"%smax_rel_err\": %s, \"%srms_rel_err\": %s, \"%snonfinite\": %s", prefix,
          jsonNum(m.st.maxRel(), m.checked).c_str(), prefix, jsonNum(m.st.rmsRel(), m.checked).c_str(), prefix,
          jsonNum(m.st.nonfinite, m.checked).c_str());
  fprintf(f, ", \"%sranks_differing\": %s", prefix, m.diff < 0 ? "null" : std::to_string(m.diff).c_str());
}

void writeJson(const Ctx& c, const std::vector<Row>& rows, const std::vector<std::string>& failures) {
  FILE* f = fopen(c.o.jsonPath.c_str(), "w");
  if (f == nullptr) fatal("cannot open -J file %s for writing", c.o.jsonPath.c_str());
  fprintf(f, "{\n  \"tool\": \"taco_perf\",\n  \"libtaco_version\": %d,\n", tacoGetVersion());
  fprintf(f, "  \"mode\": \"%s\",\n  \"nranks\": %d,\n  \"device\": %s,\n", c.loopback ? "loopback" : "nccl", c.P,
          jsonStr(c.deviceName).c_str());
  fprintf(f, "  \"iters\": %d,\n  \"warmup_iters\": %d,\n  \"graph_iters\": %d,\n  \"check\": %d,\n", c.o.iters,
          c.o.warmup, c.o.graphIters, c.o.check);
  fprintf(f, "  \"check_max_bytes\": %zu,\n  \"seed\": %llu,\n  \"codecs\": [", c.o.checkMaxBytes,
          (unsigned long long)c.o.seed);
  for (size_t k = 0; k < c.codecs.size(); ++k)
    fprintf(f, "%s{\"spec\": %s, \"chunk_bytes\": %zu, \"fallback_bytes\": %zu, \"pipeline_depth\": %d}",
            k ? ", " : "", jsonStr(c.o.codecs[k]).c_str(), c.codecConfigs[k].chunkBytes,
            c.codecConfigs[k].fallbackBytes, c.codecConfigs[k].pipelineDepth);
  fprintf(f, "],\n  \"failures\": [");
  for (size_t i = 0; i < failures.size(); ++i) fprintf(f, "%s%s", i ? ", " : "", jsonStr(failures[i]).c_str());
  fprintf(f, "],\n  \"results\": [\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double factor = busFactor(r.coll, c.P);
    fprintf(f, "    {\"collective\": \"%s\", \"type\": \"%s\", \"size_bytes\": %zu, \"count\": %zu, \"codec\": %s",
            collName(r.coll), dtypeName(r.dt), r.bytes, r.count, jsonStr(r.codec).c_str());
    fprintf(f, ", \"fallback\": %s, \"wire_ratio\": %s, \"bus_factor\": %s", r.fallback ? "true" : "false",
            jsonNum(r.wire).c_str(), jsonNum(factor).c_str());
    jsonMeasure(f, "", r.taco, r.bytes, factor);
    jsonMeasure(f, "plain_", r.plain, r.bytes, factor);
    fprintf(f, ", \"speedup\": %s", jsonNum(r.plain.us / r.taco.us).c_str());
    jsonMeasure(f, "diy_", r.diy, r.bytes, factor);
    fprintf(f, ", \"diy_speedup\": %s}%s\n", jsonNum(r.plain.us / r.diy.us, r.diy.ran).c_str(),
            i + 1 < rows.size() ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  if (fclose(f) != 0) fatal("cannot write -J file %s", c.o.jsonPath.c_str());
}

// Unit roundoff of the element type (the plain path's sanity bound).
double unitRoundoff(tacoDataType_t dt) {
  switch (dt) {
    case tacoFloat32: return std::ldexp(1.0, -24);
    case tacoFloat16: return std::ldexp(1.0, -11);
    default: return std::ldexp(1.0, -8);
  }
}

// ------------------------------------------------------------------ setup
tacoConfig_t makeConfig(const Options& o, const char* spec) {
  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;
  cfg.codec = spec;
  if (o.fallbackBytes >= 0) cfg.fallbackBytes = (size_t)o.fallbackBytes;
  if (o.chunkBytes > 0) cfg.chunkBytes = (size_t)o.chunkBytes;
  if (o.pipelineDepth > 0) cfg.pipelineDepth = o.pipelineDepth;
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
  for (int k = -1; k < nk; ++k) {  // -1: the plain ("none") communicator
    const char* spec = k < 0 ? "none" : c.o.codecs[k].c_str();
    tacoConfig_t cfg = makeConfig(c.o, spec);
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
  const bool diy = c.o.diy && std::find(c.o.colls.begin(), c.o.colls.end(), kAllReduce) != c.o.colls.end();
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
  syncAll(c);
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

void printPreamble(const Ctx& c) {
  const int v = tacoGetVersion();
  printf("# taco_perf: libtaco %d.%d.%d, %s, %d rank%s, %s\n", v / 10000, v / 100 % 100, v % 100,
         c.loopback ? "loopback transport" : "NCCL transport", c.P, c.P == 1 ? "" : "s", c.deviceName.c_str());
  printf("# sizes %zu..%zu bytes, %s %zu; iters %d, warmup %d, graph launches %d; check %s (up to %zu bytes)\n",
         c.o.minBytes, c.o.maxBytes, c.o.stepBytes ? "step" : "factor",
         c.o.stepBytes ? c.o.stepBytes : (size_t)c.o.stepFactor, c.o.iters, c.o.warmup, c.o.graphIters,
         c.o.check ? "on" : "off", c.o.checkMaxBytes);
  for (size_t k = 0; k < c.codecs.size(); ++k) {
    tacoCodecInfo_t info;
    TACOCHECK(tacoCodecGetInfo(c.codecs[k], &info), nullptr);
    size_t ws = 0;
    TACOCHECK(tacoCommWorkspaceBytes(c.ranks[0].comms[k], &ws), c.ranks[0].comms[k]);
    printf("# codec %-14s %s; block %d, chunk %zu B, fallback below %zu B, depth %d, workspace %zu B/rank\n",
           c.o.codecs[k].c_str(), info.description, info.blockSize, c.codecConfigs[k].chunkBytes,
           c.codecConfigs[k].fallbackBytes, c.codecConfigs[k].pipelineDepth, ws);
  }
  printf("# plain: the same call on a codec 'none' communicator (%s)\n",
         c.loopback ? "the loopback's uncompressed kernels" : "plain NCCL");
  printf("# DIY (allreduce): per-block FP8 E4M3 quantize (256, absmax) -> plain all-gather of codes+scales ->"
         " dequantize and sum in fp32\n");
  printf("# busbw = algbw x %s on uncompressed bytes; speedup = plain time / taco time; wire = uncompressed /"
         " compressed bytes sent; '*' after the codec: the call fell back to the plain path\n",
         "2(n-1)/n (allreduce) or (n-1)/n (others)");
  printf("# maxerr = max|y-exact| / max|exact|, rmserr = ||y-exact|| / ||exact|| (fp64 host reference); #diff = ranks"
         " whose output differs bitwise from rank 0's\n");
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
  if (c.loopback && c.boot.size > 1)
    fatalCode(2, "--loopback runs every rank in one process: launch one process, not %d", c.boot.size);
  c.P = c.loopback ? c.o.loopback : c.boot.size;

  int ndev = 0;
  CUDACHECK(cudaGetDeviceCount(&ndev));
  if (ndev == 0) fatal("no CUDA device");
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

  std::vector<Row> rows;
  std::vector<std::string> failures;
  auto fail = [&](const Row& r, const char* variant, const char* what) {
    char b[512];
    snprintf(b, sizeof(b), "%s %s %zu B codec %s, %s: %s", collName(r.coll), dtypeName(r.dt), r.bytes,
             r.codec.c_str(), variant, what);
    failures.push_back(b);
  };

  for (Coll coll : c.o.colls) {
    for (tacoDataType_t dt : c.o.dtypes) {
      prepareInputs(c, dt);
      if (isRoot(c)) printHeader(c, coll, dt);
      for (size_t total : sizeList(c.o, coll, dt, c.P)) {
        const Shape sh = shapeOf(coll, total, c.P);
        const size_t bytes = total * dtypeBytes(dt);
        const size_t recvBytes = sh.recvElems * dtypeBytes(dt);
        Row base{};
        base.coll = coll;
        base.dt = dt;
        base.bytes = bytes;
        base.count = total;
        // plain
        poisonOutputs(c, recvBytes);
        base.plain.us = 1e6 * timeIt(c, [&] { iterColl(c, coll, sh, dt, -1); });
        base.plain.ran = true;
        checkOutputs(c, coll, sh, dt, &base.plain, true);
        // DIY
        if (coll == kAllReduce && c.o.diy) {
          poisonOutputs(c, recvBytes);
          base.diy.us = 1e6 * timeIt(c, [&] { iterDiy(c, sh, dt); });
          base.diy.ran = true;
          checkOutputs(c, coll, sh, dt, &base.diy, false);
        }
        for (size_t k = 0; k < c.codecs.size(); ++k) {
          Row r = base;
          r.codec = c.o.codecs[k];
          r.wire = wireRatio(c, (int)k, coll, total, dt, &r.fallback);
          poisonOutputs(c, recvBytes);
          r.taco.us = 1e6 * timeIt(c, [&] { iterColl(c, coll, sh, dt, (int)k); });
          r.taco.ran = true;
          checkOutputs(c, coll, sh, dt, &r.taco, true);
          if (isRoot(c)) printRow(c, r);
          // ---- pass/fail
          if (r.taco.diff > 0) fail(r, "taco", "ranks' outputs differ bitwise");
          if (r.taco.checked && r.taco.st.nonfinite > 0) fail(r, "taco", "non-finite outputs");
          if (r.taco.checked && r.taco.st.rmsRel() > 1.0) fail(r, "taco", "gross error (rmserr > 1)");
          if (k == 0) {
            if (r.plain.checked) {
              const bool exact = coll == kAllGather || coll == kAlltoAll;
              const double bound = exact ? 0.0 : 8.0 * c.P * unitRoundoff(dt);
              if (r.plain.st.nonfinite > 0 || r.plain.st.maxRel() > bound)
                fail(r, "plain", "error beyond rounding: the tool or the plain path is wrong");
            }
            if (r.diy.checked && r.diy.st.nonfinite > 0) fail(r, "DIY", "non-finite outputs");
          }
          rows.push_back(r);
        }
      }
    }
  }

  if (isRoot(c)) {
    printf("#\n");
    for (size_t k = 0; k < c.codecs.size(); ++k) {
      double sT = 0, sP = 0, logSpeed = 0;
      int n = 0;
      for (const Row& r : rows) {
        if (r.codec != c.o.codecs[k]) continue;
        sT += r.bytes / (r.taco.us * 1e-6) / 1e9 * busFactor(r.coll, c.P);
        sP += r.bytes / (r.plain.us * 1e-6) / 1e9 * busFactor(r.coll, c.P);
        logSpeed += std::log(r.plain.us / r.taco.us);
        ++n;
      }
      if (n > 0)
        printf("# codec %-14s avg busbw %.2f GB/s (plain %.2f GB/s), geometric-mean speedup %.3fx over %d rows\n",
               c.o.codecs[k].c_str(), sT / n, sP / n, std::exp(logSpeed / n), n);
    }
    if (failures.empty()) {
      printf("# check: %s\n", c.o.check ? "OK" : "off");
    } else {
      printf("# check: %zu FAILED\n", failures.size());
      for (const std::string& s : failures) printf("#   FAILED %s\n", s.c_str());
    }
    if (!c.o.jsonPath.empty()) writeJson(c, rows, failures);
  }
  fflush(stdout);
  teardown(c);
  finalizeBoot();
  return failures.empty() ? 0 : 1;
}
