// A collective as data: a list of steps per rank (docs/design.md). Builders in
// coll/*.cc turn one call into one Schedule; the executor (coll/executor.cc)
// runs the schedules of one or several ranks in lockstep: local steps
// (kernels, fork/join) are enqueued on that rank's streams; sync steps
// (exchanges, plain collectives) are posted by every rank inside one
// transport group. The NCCL executor is the same code with one rank.
#pragma once
#include <cuda_runtime_api.h>

#include <vector>

#include "codec/codec.h"
#include "core/comm.h"

namespace taco {

enum StepKind {
  kStepFork,                      // pipeline streams wait for the user stream
  kStepJoin,                      // the user stream waits for the pipeline streams
  kStepCompress,                  // out = compress(in[0:count])
  kStepDecompress,                // y = decompress(in)
  kStepDecompressAccumulate,      // y = sum(decompress(inputs)) + exact
  kStepDecompressReduceCompress,  // out = compress(sum(decompress(inputs)) + exact), y = decompress(out)
  kStepExchange,                  // grouped send/recv (sync)
  kStepPlain,                     // plain collective on raw dtype (sync)
  kStepLaunch                     // step.launch(): one launch for every local rank at once (sync), e.g. a
                                  // peer-memory AllReduce kernel
};

enum PlainKind { kPlainAllReduce, kPlainReduceScatter, kPlainAllGather, kPlainAlltoAll };

struct Xfer {
  bool send;
  int peer;
  void* buf;
  size_t bytes;
};

struct Step;
// What a kStepLaunch step runs: the same step of every rank driven from this thread (one for
// NCCL, every rank of a loopback world), in rank order.
using StepLaunch = tacoResult_t (*)(const std::vector<tacoComm*>& comms, const std::vector<const Step*>& steps);

struct Step {
  StepKind kind;
  int stream = -1;  // pipeline stream index; -1: the user stream
  cudaStream_t user = nullptr;
  const void* in = nullptr;
  void* out = nullptr;
  void* y = nullptr;
  const void* exact = nullptr;
  size_t count = 0;
  tacoDataType_t dtype = tacoFloat32;
  AccumInputs inputs{};  // the sum steps (kStepDecompressAccumulate, kStepDecompressReduceCompress)
  PlainKind plain = kPlainAllReduce;
  StepLaunch launch = nullptr;  // kStepLaunch
  int algo = 0;      // kStepLaunch: tacoAlgo_t
  std::vector<Xfer> xfers;
};

struct Schedule {
  tacoComm* comm = nullptr;
  std::vector<Step> steps;
};

inline bool isSyncStep(const Step& s) {
  return s.kind == kStepExchange || s.kind == kStepPlain || s.kind == kStepLaunch;
}

// Runs the programs (one per rank, ranks of one world or NCCL communicators
// driven from this thread) in lockstep.
tacoResult_t runLockstep(std::vector<Schedule*>& programs);

// Submits a schedule: queued if a group is open, else run now (a loopback
// world of more than one rank needs a group: tacoInvalidUsage).
tacoResult_t submit(Schedule&& s, const char* opName);
tacoResult_t groupStart();
tacoResult_t groupEnd();
// Drops the communicator's queued schedules (abort inside a group).
void groupForget(tacoComm* comm);

}  // namespace taco
