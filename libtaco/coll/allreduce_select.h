// AllReduce algorithm selection: a pure function of what the call and the
// communicator offer, so that host tests can check the table.
#pragma once
#include <cstddef>

#include "taco.h"

namespace taco {

// Provisional thresholds (docs/tuning.md): below the communicator's fallbackBytes the call
// is uncompressed (one-shot up to 256 KiB where peer memory exists, else the transport's);
// above it, compressed one-shot up to 4 MiB (any size at P = 2), fused two-shot beyond. Where
// the ranks' peer kernels are separate launches, no one-shot (algoAutoExcluded).
constexpr size_t kOneShotRawMaxBytes = (size_t)256 << 10;
constexpr size_t kOneShotMaxBytes = (size_t)4 << 20;

struct AlgoInputs {
  size_t bytes = 0;          // uncompressed bytes of the call
  int nranks = 1;
  tacoDataType_t dtype = tacoFloat32;
  bool compressed = false;   // the communicator's codec compresses (not `none`)
  bool peerMemory = false;   // every peer's scratch is mapped (NVLink, IPC, loopback)
  bool peerCodec = false;    // the peer-memory kernels support the codec (block codecs)
  // The ranks' peer kernels are separate launches (cuda-ipc, nccl-symmetric: other processes or
  // GPUs), not one launch for every rank (loopback).
  bool peerLaunchesApart = false;
  size_t fallbackBytes = 0;  // config: below this the staged path gives way to plain
};

// The algorithm (tacoAlgo_t, never tacoAlgoAuto) for these inputs.
int selectAllReduceAlgo(const AlgoInputs& in);
// Why `algo` cannot run with these inputs, or nullptr when it can.
const char* algoUnavailable(int algo, const AlgoInputs& in);
// Why the automatic choice (the model, the tuner, a tuned table) leaves `algo` out, or nullptr:
// what algoUnavailable says, and the one-shots where the peer kernels are separate launches.
// The fix for back-to-back one-shots there (consecutive epochs, coll/peer_launch.h) has passed the
// host model of the protocol and ipc_world's bursts between processes on one GPU; until the
// tuner's world between processes has run with them as candidates (docs/collectives.md, "Known
// limitation"), only an explicit config algo / TACO_ALGO runs them.
const char* algoAutoExcluded(int algo, const AlgoInputs& in);

}  // namespace taco
