// Host side of the peer-memory AllReduce kernels (coll/device/peer_kernels.cuh): which
// kernels a chunk takes (the fused two-shot: one per phase), how many CTAs fit, and the
// launches (cooperative, or early: programmatic dependent launch).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "coll/allreduce_peer.h"
#include "codec/codec.h"
#include "codec/device/args.h"
#include "codec/launch.h"
#include "core/dtype.h"
#include "core/params.h"

namespace taco {
namespace {

using namespace dev;

// CTAs of `kernel` resident per SM with `smem` bytes of shared memory, asked once per
// (kernel, device): the launch path stays free of driver queries.
cudaError_t residentPerSm(PeerKernel kernel, size_t smem, int* perSm) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> cache;
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), dev);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) {
    *perSm = it->second;
    return cudaSuccess;
  }
  // Always opt in: the kernel's static shared memory (PieceArgs) counts against the default
  // 48 KB, which a 48 KB staging area alone would otherwise just fit.
  e = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)smem);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(perSm, kernel, kThreads, smem);
  if (e == cudaSuccess && *perSm < 1) e = cudaErrorCooperativeLaunchTooLarge;
  if (e == cudaSuccess) cache[key] = *perSm;
  return e;
}

template <typename T>
PeerKernel pickKernelFor(int algo, int fmt, bool rot, int phase, bool claim) {
  if (algo == tacoAlgoOneShotRaw) return peerKernelFor<T, kFmtRaw>(algo, rot, phase, false);
  return visitBlockFormat(fmt, PeerKernel(nullptr),
                          [&](auto f) { return peerKernelFor<T, decltype(f)::value>(algo, rot, phase, claim); });
}

PeerKernel pickKernel(int algo, int fmt, bool rot, tacoDataType_t dtype, int phase, bool claim = false) {
  switch (dtype) {
    case tacoFloat32: return pickKernelFor<float>(algo, fmt, rot, phase, claim);
    case tacoFloat16: return pickKernelFor<__half>(algo, fmt, rot, phase, claim);
    case tacoBfloat16: return pickKernelFor<__nv_bfloat16>(algo, fmt, rot, phase, claim);
    default: return nullptr;
  }
}

// Whether the rotated256 layout may take a codec's pieces (its kernels carry it).
bool rotated256Codec(const Args& proto) { return proto.k.rotate && proto.k.B == 256; }

}  // namespace

// From TACO_PEER_CLAIM_MIN_RANKS ranks on (default 5), for the kernels that have it (kClaimFormat:
// the byte codes; fp32's rotated256 compress and decompress; a rotated codec at another block size
// keeps the static order). Measured on an H200 (loopback, docs/results.md, "Tiles claimed"): the
// byte codes 1-6 % faster at P = 6-8 and within 1 % (bf16) or 3 % faster (fp32) at P = 5; at P = 2
// up to 10 % slower, where the phases are bound by HBM (CTAs that end early leave their bandwidth
// to the others, so the static order loses nothing) and every claim of a rank's warps goes to one
// counter. Each rank's counters are its own, so ranks may differ.
bool peerClaimsTiles(const Args& proto, int algo, int P, tacoDataType_t dtype) {
  const int minRanks = envParams().peerClaimMinRanks;
  const CodecDesc* d = codecById(proto.k.id);
  if (algo != tacoAlgoFused || minRanks <= 0 || P < minRanks || d == nullptr) return false;
  const bool rot = rotated256Codec(proto);
  if (proto.k.rotate && !rot) return false;
  // the format has claimed kernels: they differ from the static ones
  return pickKernel(algo, d->format, rot, dtype, kFusedScatter, true) !=
         pickKernel(algo, d->format, rot, dtype, kFusedScatter, false);
}

namespace {

// One launch of `kernel` for L (its CTAs per rank set here): cooperative, or with `early`
// launched before the previous kernel in the stream ends (coll/device/peer_kernels.cuh).
cudaError_t launchPeerKernel(PeerKernel kernel, const PeerLaunch& L, size_t workItems, size_t smem, bool early,
                             cudaStream_t stream) {
  // Co-residency bound: every CTA of the launch, and of the other ranks' launches on this GPU
  // (ranksPerDevice counts them), must fit on the GPU at once.
  int perSm = 0;
  cudaError_t e = residentPerSm(kernel, smem, &perSm);
  if (e != cudaSuccess) return e;
  const int sms = smCount();
  const long maxPerRank = (long)sms * perSm / L.ranksPerDevice;
  if (maxPerRank < 1) return cudaErrorCooperativeLaunchTooLarge;
  // Enough CTAs for the work (a warp per tile of 32 lanes), no more than fit.
  long want = (long)((workItems + kThreads - 1) / kThreads);
  if (want < 1) want = 1;
  PeerLaunch Lc = L;
  Lc.ctasPerRank = (int)(want < maxPerRank ? want : maxPerRank);
  // The timeline holds a row per CTA of the device's largest grid (peerMaxCtasPerRank),
  // which the bound above keeps every launch within; never write past it.
  if (Lc.ctasPerRank * L.nLocal > L.timelineRows) Lc.timeline = nullptr;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(Lc.ctasPerRank * L.nLocal));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  // A phase of the fused two-shot waits only on other kernels (earlier phases and chunks of
  // every rank), never on a CTA of its own launch, so it needs no cooperative launch; the
  // one-shots wait within their launch, across its rank groups, and do.
  cudaLaunchAttribute attr[1];
  if (early) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
  } else {
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
  }
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, Lc);
}

}  // namespace

bool peerCodecSupported(tacoCodec_t codec) {
  const CodecDesc* d = codecById(codec.id);
  return d != nullptr && d->blocked &&
         pickKernel(tacoAlgoFused, d->format, false, tacoFloat32, kFusedScatter) != nullptr;
}

int peerMaxCtasPerRank() {
  // launchPeerAllReduce's bound (SMs x resident CTAs per SM) at its largest: as many
  // kThreads-thread CTAs per SM as the SM's thread and block limits allow.
  int dev = 0, threads = 0, blocks = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
  cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, dev);
  (void)cudaGetLastError();
  const int perSm = std::max(1, std::min(threads / kThreads, blocks > 0 ? blocks : 32));
  return smCount() * perSm;
}

int peerLaunchMode(int ranksPerDevice, int nLocal) {
  if (ranksPerDevice != nLocal || computeCapabilityMajor() < 9) return kPeerLaunchAfter;
  return envParams().peerEarlyLaunch;
}

void peerLaunchInit(PeerLaunch& L, tacoCodec_t codec, tacoDataType_t dtype) {
  L.proto = makeArgs(codec, 0, dtype);
}

cudaError_t launchPeerAllReduce(const PeerLaunch& L, size_t workItems, tacoDataType_t dtype, cudaStream_t stream,
                                int refuse, int* launched) {
  *launched = 0;
  const CodecDesc* d = codecById(L.proto.k.id);
  const bool rot = rotated256Codec(L.proto);  // the rotated256 layout may apply
  const int fmt = d != nullptr ? d->format : -1;
  // The block kernels stage tiles through shared memory (the compress, plain decompress and,
  // for codes it copies a chunk at a time, the multi-input sum pipelines: sumPiece; the rotated256 layout's).
  size_t smem = 0;
  if (L.algo != tacoAlgoOneShotRaw) {
    smem = std::max(genericCompressSmemBytes(dtype), genericDecompressSmemBytes(dtype));
    if (rot)
      smem = std::max({smem, rotated256CompressSmemBytes(dtype), rotated256DecompressSmemBytes(dtype),
                       rotated256SumSmemBytes(dtype)});
    if (stagedSumCodes(d->format, (int)dtypeBytes(dtype))) smem = std::max(smem, genericSumSmemBytes(dtype));
  }
  // The fused two-shot: a launch per phase (coll/device/peer_kernels.cuh says why), each
  // launched early (TACO_PEER_EARLY_LAUNCH, sm_90) where this launch's ranks are all the
  // ranks on the GPU: early CTAs that wait in the SM slots must not keep another process's
  // rank, whose arrival they wait for, out of them. Interleaved (TACO_PEER_EARLY_LAUNCH=2), chunk
  // k >= 1 launches its scatter, then chunk k - 1's gather, then its reduce, and the call's last
  // chunk its gather too: each phase's stragglers then have the other chunk's work beside them.
  const bool fused = L.algo == tacoAlgoFused;
  const int mode = fused ? peerLaunchMode(L.ranksPerDevice, L.nLocal) : (int)kPeerLaunchAfter;
  const bool early = mode != kPeerLaunchAfter;
  const bool claim = peerClaimsTiles(L.proto, L.algo, L.P, dtype);
  PeerLaunch Lk = L;
  Lk.interleave = mode == kPeerLaunchInterleaved;
  auto launch = [&](int phase, int chunk) {
    const PeerKernel kernel = pickKernel(L.algo, fmt, rot, dtype, phase, claim);
    if (kernel == nullptr) return cudaErrorInvalidValue;
    if (*launched == refuse) return cudaErrorLaunchOutOfResources;  // TACO_FAULT_PEER_LAUNCH
    Lk.chunk = chunk;
    const cudaError_t e = launchPeerKernel(kernel, Lk, workItems, smem, early, stream);
    if (e == cudaSuccess) ++*launched;
    return e;
  };
  if (!fused) return launch(0, L.chunk);
  cudaError_t e = launch(kFusedScatter, L.chunk);
  if (!Lk.interleave) {
    if (e == cudaSuccess) e = launch(kFusedReduce, L.chunk);
    if (e == cudaSuccess) e = launch(kFusedGather, L.chunk);
    return e;
  }
  if (e == cudaSuccess && L.chunk >= 1) e = launch(kFusedGather, L.chunk - 1);
  if (e == cudaSuccess) e = launch(kFusedReduce, L.chunk);
  if (e == cudaSuccess && L.chunk == L.nChunks - 1) e = launch(kFusedGather, L.chunk);
  return e;
}

}  // namespace taco
