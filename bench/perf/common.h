// taco_perf's shared driver (nccl-tests' common.h): the state of a run, the
// error macros, and CollDesc, the little a collective tells the driver. The
// driver (common.cc) owns ranks, buffers, timing, checking and the table; each
// collective (all_reduce.cc, reduce_scatter.cc, all_gather.cc, alltoall.cc)
// only says how to size, check, run and count bandwidth. docs/perf-tool.md.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "args.h"
#include "taco.h"

namespace perf {

// ------------------------------------------------------------------ errors
// Exit with `code` after flushing (MPI_Abort under MPI, so no rank is left waiting).
[[noreturn]] void fatalExit(int code);
[[noreturn]] void fatalCode(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
#define fatal(...) ::perf::fatalCode(1, __VA_ARGS__)

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

// --------------------------------------------------------------- processes
struct Boot {  // this process in the job (bootstrap.cc)
  int rank = 0, size = 1, localRank = 0;
};
// MPI_Init, or rank/size/local rank from the launcher's environment.
Boot bootstrap(int* argc, char*** argv);
// After bootstrap, knowing --loopback: refuses a launch that cannot be what it looks like (exit 2).
void checkLaunch(const Boot& b, bool loopback);
void finalizeBoot();
// Rank 0 creates `n` unique ids; every rank ends with the same ids (MPI_Bcast or --id-file).
std::vector<tacoUniqueId> shareUniqueIds(const Boot& b, const Options& o, int n);

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
  void merge(const Stats& o);
  double maxRel() const;
  double rmsRel() const;
};

struct Measure {  // one variant at one size
  bool ran = false;
  double us = NAN;      // mean time per call, averaged over ranks
  bool checked = false;
  Stats st;
  int diff = -1;        // ranks whose output differs bitwise from rank 0's; -1: not applicable
};

// Element counts of one call (nccl-tests' getCollByteCount).
struct Shape {
  size_t total;      // the "count" column: elements of the largest buffer
  size_t callCount;  // the count argument of the call
  size_t sendElems, recvElems;
};

struct Row {
  Coll coll;
  tacoDataType_t dt;
  size_t bytes, count;
  std::string codec;
  int algo;          // tacoAlgo_t the taco call ran (never tacoAlgoAuto)
  bool uncompressed; // the taco call ran uncompressed ('*' after the codec)
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

// ------------------------------------------------------------- collectives
// What a collective tells the driver (nccl-tests' struct testColl). Adding one:
// a file defining its CollDesc, a Coll value and name in args.h/args.cc, and a
// line in collDesc() (common.cc). docs/perf-tool.md, "Layout".
struct CollDesc {
  Coll coll;
  // Counts are multiples of P (the call's count is count/P) rather than any count.
  bool perRankBlocks;
  // Every rank ends with the same bits (checked as #diff).
  bool sameOnEveryRank;
  // Moves data without arithmetic: the plain path must be exact.
  bool exact;
  // Element counts of a call whose largest buffer holds `total` elements.
  Shape (*getCounts)(size_t total, int P);
  // The exact output element i of rank `rank`, from every rank's input in[q][.]
  // (the inputs themselves are the driver's: Laplace(0, 1) from (seed, q, i)).
  double (*expected)(const std::vector<std::vector<float>>& in, int P, int rank, size_t i, size_t total);
  // busbw = algbw x busFactor(P) (nccl-tests' getBw).
  double (*busFactor)(int P);
  // Enqueues the call on one rank (nccl-tests' runColl).
  tacoResult_t (*run)(const void* send, void* recv, const Shape& sh, tacoDataType_t dt, tacoComm_t comm,
                      cudaStream_t stream);
  // The tacoAlgo_t the call runs on codec k's communicator; not tacoSuccess
  // (message in tacoGetLastError(nullptr)) when it cannot run there.
  tacoResult_t (*algo)(const Ctx& c, int k, const Shape& sh, tacoDataType_t dt, int* algo);
  // Elements of one piece of the compressed exchange (the `wire` column).
  size_t (*pieceElems)(tacoCodec_t codec, const Shape& sh, int P);
  // One iteration of the do-it-yourself FP8 baseline on every local rank, or
  // nullptr where there is none.
  void (*iterDiy)(Ctx& c, const Shape& sh, tacoDataType_t dt);
};

const CollDesc& collDesc(Coll c);
extern const CollDesc kAllReduceDesc, kReduceScatterDesc, kAllGatherDesc, kAlltoAllDesc;

// (P-1)/P: the bus factor of the collectives that move each byte once.
double oneHopBusFactor(int P);
// The path of the collectives other than AllReduce, which have no algorithm
// choice: tacoAlgoPlain when libtaco runs them uncompressed (codec none, below
// fallbackBytes, or more ranks than one accumulate kernel takes), else tacoAlgoStaged.
tacoResult_t blockwiseAlgo(const Ctx& c, int k, const Shape& sh, tacoDataType_t dt, int* algo);

// ------------------------------------------------------------------ report
// The `wire` column: 1 when the call runs uncompressed, else the uncompressed
// over the compressed bytes of one piece (common.cc has the formula).
bool runsUncompressed(tacoCodec_t codec, int algo);
double wireRatio(tacoCodec_t codec, int algo, size_t pieceElems, tacoDataType_t dt);

bool isRoot(const Ctx& c);
void printPreamble(const Ctx& c);
void printHeader(const Ctx& c, Coll coll, tacoDataType_t dt);
void printRow(const Ctx& c, const Row& r);
void printSkipped(const Ctx& c, tacoDataType_t dt, size_t bytes, size_t count, int k, const char* why);
void printSummary(const Ctx& c, const std::vector<Row>& rows, const std::vector<std::string>& failures,
                  const std::vector<std::string>& skipped);
void writeJson(const Ctx& c, const std::vector<Row>& rows, const std::vector<std::string>& failures,
               const std::vector<std::string>& skipped);

}  // namespace perf
