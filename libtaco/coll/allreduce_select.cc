// The one place that picks an AllReduce algorithm (docs/collectives.md, "Choosing
// an algorithm"). The thresholds are provisional: they come from reasoning about
// bytes and latency on NVLink, not yet from a sweep across GPUs (docs/tuning.md).
#include "coll/allreduce_select.h"

#include "core/check.h"
#include "core/params.h"
#include "coll/coll.h"

namespace taco {

int selectAllReduceAlgo(const AlgoInputs& in) {
  const bool peer = in.peerMemory && in.nranks > 1;
  if (peer && in.bytes <= kOneShotRawMaxBytes) return tacoAlgoOneShotRaw;  // latency-bound: lossless, one hop
  if (!in.compressed) return tacoAlgoPlain;
  if (!peer) return in.bytes < in.fallbackBytes ? tacoAlgoPlain : tacoAlgoStaged;
  // P = 2: one-shot moves the same wire bytes as two-shot with one exchange fewer and one
  // quantization instead of two. Beyond, one-shot's P-fold input traffic pays only while
  // latency dominates.
  if (in.nranks == 2 || in.bytes <= kOneShotMaxBytes) return tacoAlgoOneShot;
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
      [[fallthrough]];  // and peer memory
    case tacoAlgoOneShotRaw:
      if (!in.peerMemory) return "it needs peer memory, which this communicator does not have (TACO_DEBUG=INFO says why)";
      return nullptr;
    default: return "not a tacoAlgo_t";
  }
}

AlgoInputs algoInputs(const tacoComm* c, size_t count, tacoDataType_t dtype) {
  AlgoInputs in;
  in.bytes = count * dtypeBytes(dtype);
  in.nranks = c->nranks;
  in.dtype = dtype;
  in.compressed = c->compressed;
  in.peerMemory = commHasPeerMemory(c);
  in.fallbackBytes = c->config.fallbackBytes;
  return in;
}

tacoResult_t allReduceAlgo(const tacoComm* c, size_t count, tacoDataType_t dtype, int* algo) {
  const AlgoInputs in = algoInputs(c, count, dtype);
  if (c->config.algo == tacoAlgoAuto) {
    *algo = selectAllReduceAlgo(in);
    return tacoSuccess;
  }
  if (const char* why = algoUnavailable(c->config.algo, in))
    return setError(tacoInvalidUsage, "AllReduce : algorithm '%s' (config algo / TACO_ALGO) cannot run: %s",
                    algoName(c->config.algo), why);
  *algo = c->config.algo;
  return tacoSuccess;
}

}  // namespace taco
