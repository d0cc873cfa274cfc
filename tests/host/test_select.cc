// AllReduce algorithm selection (libtaco/coll/allreduce_select.cc): the table the
// library applies, and why a forced algorithm cannot run. Pure functions, compiled in.
#include <cstdio>
#include <initializer_list>

#include "../../libtaco/coll/allreduce_select.cc"
#include "check.h"

using taco::AlgoInputs;

namespace {

AlgoInputs in(size_t bytes, int P, bool compressed, bool peer, bool peerCodec = true, size_t fallback = 1 << 20,
              bool apart = false) {
  AlgoInputs a;
  a.peerLaunchesApart = peer && apart;
  a.bytes = bytes;
  a.nranks = P;
  a.dtype = tacoBfloat16;
  a.compressed = compressed;
  a.peerMemory = peer;
  a.peerCodec = peerCodec;
  a.fallbackBytes = fallback;
  return a;
}

}  // namespace

int main() {
  using taco::selectAllReduceAlgo;
  const size_t K = 1024, M = K * K;
  // Without peer memory: plain below the fallback, staged above, plain for codec none.
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(64 * K, 4, true, false)), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(64 * M, 4, true, false)), tacoAlgoStaged);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(64 * M, 4, false, false)), tacoAlgoPlain);
  // With peer memory: raw one-shot while latency-bound and below the fallback.
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(8, 4, true, true)), tacoAlgoOneShotRaw);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(256 * K, 4, true, true)), tacoAlgoOneShotRaw);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(512 * K, 4, true, true)), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(8, 4, false, true)), tacoAlgoOneShotRaw);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(64 * M, 4, false, true)), tacoAlgoPlain);
  // Above the fallback: compressed one-shot up to 4 MiB, fused two-shot beyond; P = 2 one-shot.
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(2 * M, 4, true, true)), tacoAlgoOneShot);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(4 * M, 8, true, true)), tacoAlgoOneShot);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(4 * M + 2, 8, true, true)), tacoAlgoFused);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(1024 * M, 4, true, true)), tacoAlgoFused);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(1024 * M, 2, true, true)), tacoAlgoOneShot);
  // fallbackBytes 0: compressed at every size.
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(8, 4, true, true, true, 0)), tacoAlgoOneShot);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(8, 4, true, false, true, 0)), tacoAlgoStaged);
  // A codec the peer kernels do not take (bf16): staged.
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(64 * M, 4, true, true, false)), tacoAlgoStaged);
  // One rank: no peer algorithm even with peer memory.
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(8, 1, true, true)), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(in(64 * M, 1, true, true)), tacoAlgoStaged);
  // Peer kernels in separate launches (cuda-ipc, nccl-symmetric): no one-shot is chosen; where
  // the model would take one, the fused two-shot (compressed) or plain (uncompressed).
  const auto apart = [](size_t bytes, int P, bool compressed, size_t fallback = 1 << 20) {
    return in(bytes, P, compressed, true, true, fallback, true);
  };
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(apart(8, 4, true)), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(apart(256 * K, 4, false)), tacoAlgoPlain);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(apart(2 * M, 4, true)), tacoAlgoFused);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(apart(1024 * M, 2, true)), tacoAlgoFused);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(apart(8, 2, true, 0)), tacoAlgoFused);
  TEST_ASSERT_EQ_INT(selectAllReduceAlgo(apart(1024 * M, 8, true)), tacoAlgoFused);
  // There the one-shots still run when forced, but the automatic choice leaves them out and
  // says why; in one launch (loopback) it does not.
  for (int algo : {tacoAlgoOneShot, tacoAlgoOneShotRaw}) {
    TEST_ASSERT(taco::algoUnavailable(algo, apart(M, 4, true)) == nullptr);
    TEST_ASSERT(taco::algoAutoExcluded(algo, apart(M, 4, true)) != nullptr);
    TEST_ASSERT(taco::algoAutoExcluded(algo, in(M, 4, true, true)) == nullptr);
  }
  for (int algo : {tacoAlgoPlain, tacoAlgoStaged, tacoAlgoFused})
    TEST_ASSERT(taco::algoAutoExcluded(algo, apart(M, 4, true)) == nullptr);
  TEST_ASSERT(taco::algoAutoExcluded(tacoAlgoFused, in(M, 4, true, false)) != nullptr);  // and what cannot run
  // Never auto, always a valid algorithm that the automatic choice may take.
  for (int P = 1; P <= 16; ++P)
    for (size_t b = 1; b < ((size_t)8 << 30); b *= 3)
      for (int bits = 0; bits < 16; ++bits) {
        const AlgoInputs x = in(b, P, bits & 1, bits & 2, bits & 4, 1 << 20, bits & 8);
        const int a = selectAllReduceAlgo(x);
        TEST_ASSERT(a > tacoAlgoAuto && a < tacoNumAlgos);
        TEST_ASSERT(taco::algoUnavailable(a, x) == nullptr);
        TEST_ASSERT(taco::algoAutoExcluded(a, x) == nullptr);
      }
  // Forced algorithms that cannot run say why.
  TEST_ASSERT(taco::algoUnavailable(tacoAlgoFused, in(M, 4, true, false)) != nullptr);
  TEST_ASSERT(taco::algoUnavailable(tacoAlgoOneShot, in(M, 4, false, true)) != nullptr);
  TEST_ASSERT(taco::algoUnavailable(tacoAlgoFused, in(M, 4, true, true, false)) != nullptr);
  TEST_ASSERT(taco::algoUnavailable(tacoAlgoOneShotRaw, in(M, 4, false, true)) == nullptr);
  TEST_ASSERT(taco::algoUnavailable(tacoAlgoStaged, in(M, 4, false, true)) != nullptr);
  TEST_ASSERT(taco::algoUnavailable(tacoAlgoPlain, in(M, 4, false, false)) == nullptr);
  TEST_ASSERT(taco::algoUnavailable(99, in(M, 4, true, true)) != nullptr);
  return TEST_REPORT();
}
