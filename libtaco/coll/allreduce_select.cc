// The one place that picks an AllReduce algorithm (docs/collectives.md, "Choosing
// an algorithm"). The thresholds are provisional: they come from reasoning about
// bytes and latency on NVLink, not yet from a sweep across GPUs (docs/tuning.md).
#include "allreduce_select.h"  // same folder: tests/host/test_select.cc compiles this file directly


namespace taco {

int selectAllReduceAlgo(const AlgoInputs& in) {
  const bool peer = in.peerMemory && in.nranks > 1;
  const bool oneShots = peer && !in.peerLaunchesApart;  // algoAutoExcluded
  // Below fallbackBytes the call goes uncompressed: a lossless one-shot where peer memory
  // makes it one hop and the size is latency-bound, else the transport's AllReduce.
  if (!in.compressed || in.bytes < in.fallbackBytes)
    return oneShots && in.bytes <= kOneShotRawMaxBytes ? tacoAlgoOneShotRaw : tacoAlgoPlain;
  if (!peer || !in.peerCodec) return tacoAlgoStaged;
  // P = 2: one-shot moves the same wire bytes as two-shot with one exchange fewer and one
  // quantization instead of two. Beyond, one-shot's P-fold decode traffic pays only while
  // latency dominates.
  if (oneShots && (in.nranks == 2 || in.bytes <= kOneShotMaxBytes)) return tacoAlgoOneShot;
  return tacoAlgoFused;
}

const char* algoUnavailable(int algo, const AlgoInputs& in) {
  switch (algo) {
    case tacoAlgoPlain: return nullptr;
    case tacoAlgoStaged:
      return in.compressed ? nullptr : "the staged two-shot needs a compressing codec (this communicator's is none)";
    case tacoAlgoFused:
    case tacoAlgoOneShot:
      if (!in.compressed) return "a compressed algorithm needs a compressing codec (this communicator's is none)";
      if (!in.peerCodec) return "the peer-memory kernels take block codecs only (not bf16)";
      [[fallthrough]];  // and peer memory
    case tacoAlgoOneShotRaw:
      if (!in.peerMemory) return "it needs peer memory, which this communicator does not have (TACO_DEBUG=INFO says why)";
      return nullptr;
    default: return "not a tacoAlgo_t";
  }
}

const char* algoAutoExcluded(int algo, const AlgoInputs& in) {
  if (const char* why = algoUnavailable(algo, in)) return why;
  if ((algo == tacoAlgoOneShot || algo == tacoAlgoOneShotRaw) && in.peerLaunchesApart)
    return "the one-shots are not chosen automatically where the ranks' peer kernels are separate launches "
           "(cuda-ipc, nccl-symmetric) until the tuner has run with them as candidates between processes (their fix "
           "for back-to-back calls has passed its tests between processes on one GPU; docs/collectives.md, \"Known "
           "limitation\")";
  return nullptr;
}

}  // namespace taco
