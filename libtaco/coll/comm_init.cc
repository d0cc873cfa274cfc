// Communicator lifecycle: configuration resolution, streams, events and the
// workspace (allocated here once, never inside a call), the creation-time
// consistency check, destroy and abort.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/check.h"
#include "core/params.h"
#include "coll/allreduce_peer.h"
#include "coll/peer_timeline_buffer.h"
#include "coll/coll.h"
#include "coll/tune_state.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace taco {
namespace {

constexpr int kMaxDepth = 16;

// The largest value of chunkBytes: 256 TiB, beyond any device's memory, so that the workspace
// and scratch sizes computed from it never wrap.
constexpr size_t kMaxChunkBytes = (size_t)1 << 48;

// Copies the caller's config (configBytesOf(size), as NCCL copies min(size, sizeof)) and fills
// every undefined field from the environment (taco::envParams()).
tacoResult_t resolveConfig(const tacoConfig_t* user, tacoComm* c, const char* op) {
  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;
  if (user != nullptr) {
    if (user->size < offsetof(tacoConfig_t, version) + sizeof(unsigned) || user->magic != TACO_CONFIG_MAGIC)
      return setError(tacoInvalidArgument,
                      "%s: config argument is not initialised (bad size or magic; start from "
                      "TACO_CONFIG_INITIALIZER)",
                      op);
    // A size that ends inside a field would copy part of it (half of the codec pointer).
    if (configBytesOf(user->size) == 0)
      return setError(tacoInvalidArgument,
                      "%s: config size %zu ends inside a field of tacoConfig_t (%zu bytes): not the size of "
                      "any version of the struct (start from TACO_CONFIG_INITIALIZER)",
                      op, user->size, sizeof(tacoConfig_t));
    // A version code is MAJOR*10000 + MINOR*100 + PATCH: 0 or beyond 99.99.99 is not one.
    if (user->version == 0 || user->version > 999999)
      return setError(tacoInvalidArgument,
                      "%s: config version %u is not a TACO_VERSION_CODE (start from TACO_CONFIG_INITIALIZER)", op,
                      user->version);
    memcpy(&cfg, user, configBytesOf(user->size));
    cfg.size = sizeof(cfg);
  }
  // Each field from the config where set, else from its TACO_* variable: an error names the one
  // the value came from.
  const EnvParams& env = envParams();
  const char* codecFrom = cfg.codec != nullptr ? "config codec" : "TACO_CODEC";
  c->codecSpec = cfg.codec != nullptr ? cfg.codec : env.codec;
  const char* chunkFrom = "config chunkBytes";
  if (cfg.chunkBytes == TACO_CONFIG_UNDEF_SIZE) cfg.chunkBytes = env.chunkBytes, chunkFrom = "TACO_CHUNK_BYTES";
  if (cfg.fallbackBytes == TACO_CONFIG_UNDEF_SIZE) cfg.fallbackBytes = env.fallbackBytes;
  const char* depthFrom = "config pipelineDepth";
  if (cfg.pipelineDepth == TACO_CONFIG_UNDEF_INT) cfg.pipelineDepth = env.pipelineDepth, depthFrom = "TACO_PIPELINE_DEPTH";
  if (cfg.checkConsistency == TACO_CONFIG_UNDEF_INT) cfg.checkConsistency = env.checkConsistency;
  if (cfg.algo == TACO_CONFIG_UNDEF_INT) cfg.algo = env.algo;
  if (cfg.algo < 0 || cfg.algo >= tacoNumAlgos)
    return setError(tacoInvalidArgument, "%s: config algo %d is not a tacoAlgo_t (0..%d)", op, cfg.algo,
                    tacoNumAlgos - 1);
  TACO_CHECK(codecParse(c->codecSpec.c_str(), &c->codec, op, codecFrom));
  if (cfg.chunkBytes == 0) return setError(tacoInvalidArgument, "%s: %s must be > 0", op, chunkFrom);
  if (cfg.chunkBytes > kMaxChunkBytes)
    return setError(tacoInvalidArgument, "%s: %s %zu is larger than %zu (256 TiB)", op, chunkFrom, cfg.chunkBytes,
                    kMaxChunkBytes);
  if (cfg.pipelineDepth < 1 || cfg.pipelineDepth > kMaxDepth)
    return setError(tacoInvalidArgument, "%s: %s %d is outside [1, %d] (2 or more overlap)", op, depthFrom,
                    cfg.pipelineDepth, kMaxDepth);
  cfg.checkConsistency = cfg.checkConsistency ? 1 : 0;
  cfg.codec = c->codecSpec.c_str();
  c->config = cfg;
  return tacoSuccess;
}

// Sets up streams, events and workspace; the transport is already attached.
tacoResult_t commSetup(tacoComm* c) {
  TACO_CUDA_CHECK(cudaGetDevice(&c->device));
  c->compressed = c->codec.id != tacoCodecNone;
  if (c->compressed && c->nranks - 1 > TACO_MAX_ACCUM_INPUTS) {
    TACO_WARN("%d ranks exceed the %d inputs of one accumulate kernel: collectives fall back to plain %s",
              c->nranks, TACO_MAX_ACCUM_INPUTS, c->transport->name());
    c->compressed = false;
  }
  c->depth = c->config.pipelineDepth;
  c->streams.assign(c->depth, nullptr);
  c->joinEvents.assign(c->depth, nullptr);
  for (int i = 0; i < c->depth; ++i) {
    TACO_CUDA_CHECK(cudaStreamCreateWithFlags(&c->streams[i], cudaStreamNonBlocking));
    TACO_CUDA_CHECK(cudaEventCreateWithFlags(&c->joinEvents[i], cudaEventDisableTiming));
  }
  TACO_CUDA_CHECK(cudaEventCreateWithFlags(&c->forkEvent, cudaEventDisableTiming));
  if (!c->compressed) return tacoSuccess;
  // Workspace: depth slots x 2 regions x P pieces of the largest compressed piece
  // any dtype can produce for this chunk size.
  size_t cap = 0;
  for (int d = 0; d < tacoNumDataTypes; ++d) {
    const tacoDataType_t dt = (tacoDataType_t)d;
    const size_t b = wireLayout(c->codec, chunkPieceElems(c, dt), dt).totalBytes;
    cap = b > cap ? b : cap;
  }
  c->pieceCap = (cap + 255) / 256 * 256;
  c->workspaceBytes = workspaceBytes(c->depth, c->nranks, c->pieceCap);
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&c->workspace), c->workspaceBytes);
  if (e != cudaSuccess) {
    c->workspace = nullptr;
    (void)cudaGetLastError();
    return setError(tacoOutOfMemory,
                    "communicator workspace of %zu bytes (depth %d x 2 x %d ranks x %zu) could not be "
                    "allocated: '%s'; lower chunkBytes or pipelineDepth",
                    c->workspaceBytes, c->depth, c->nranks, c->pieceCap, cudaGetErrorString(e));
  }
  TACO_INFO("rank %d/%d codec %s workspace %zu bytes, chunk %zu, depth %d", c->rank, c->nranks,
            c->codecSpec.c_str(), c->workspaceBytes, c->config.chunkBytes, c->depth);
  return tacoSuccess;
}

void commFree(tacoComm* c) {
  tuneDetach(c);
  peerTimelineFree(c);
  peerMemoryFree(c->peer);
  if (c->peerEvent) cudaEventDestroy(c->peerEvent);
  if (c->workspace) cudaFree(c->workspace);
  for (cudaStream_t s : c->streams) if (s) cudaStreamDestroy(s);
  for (cudaEvent_t e : c->joinEvents) if (e) cudaEventDestroy(e);
  if (c->forkEvent) cudaEventDestroy(c->forkEvent);
  delete c->transport;
  // Poisoned before the free, so that a later call with this handle is refused;
  // volatile, so the store to an object about to die is not optimised away.
  *static_cast<volatile uint64_t*>(&c->magic) = kCommMagicDead;
  delete c;
}

// What ranks must agree on. Fixed-width fields: compared byte for byte.
struct Consistency {
  uint32_t magic;
  int32_t version;
  int32_t codecId;
  int32_t blockSize;
  uint64_t chunkBytes;
  uint64_t fallbackBytes;
  int32_t pipelineDepth;
  int32_t nranks;
  int32_t algo;        // a forced AllReduce algorithm must be forced everywhere
  int32_t peerMemory;  // TACO_PEER_MEMORY: creating peer memory is collective
  int32_t tune;        // TACO_TUNE: measuring at the first AllReduce is collective
  int32_t check;       // this rank's checkConsistency (not compared): in the tail padding of the
                       // fields before it, which builds without it send as 0
};
static_assert(sizeof(Consistency) == 56, "the size every build gathers");
constexpr uint32_t kConsistencyMagic = 0x7ac0c4ecu;

// Runs on every rank whatever its own checkConsistency, which each process takes from its own
// config or environment: a rank that gathered while another went on to creation's next
// all-gather (peer memory's, of another size) would pair the two. The fields are compared where
// any rank asks for it. The all-gather is of 56 bytes, as in the builds before `check`, which
// gathered only with their check on: a job that mixes the two with the check on (the default)
// still fails naming the library version, instead of pairing different all-gathers.
tacoResult_t consistencyCheck(tacoComm* c) {
  Consistency mine;
  memset(&mine, 0, sizeof(mine));
  mine.check = c->config.checkConsistency;
  mine.magic = kConsistencyMagic;
  mine.version = TACO_VERSION_CODE;  // this build's version
  mine.codecId = c->codec.id;
  mine.blockSize = c->codec.blockSize;
  mine.chunkBytes = c->config.chunkBytes;
  mine.fallbackBytes = c->config.fallbackBytes;
  mine.pipelineDepth = c->depth;
  mine.nranks = c->nranks;
  mine.algo = c->config.algo;
  mine.peerMemory = envParams().peerMemory;
  mine.tune = envParams().tune;
  std::vector<Consistency> all(c->nranks);
  TACO_CHECK(c->transport->hostAllGather(&mine, all.data(), sizeof(mine)));
  bool asked = false;
  for (const Consistency& a : all) asked = asked || a.check != 0;
  if (!asked) return tacoSuccess;
  for (int q = 0; q < c->nranks; ++q) {
    const Consistency& a = all[0];
    const Consistency& b = all[q];
#define TACO_CMP(field, label)                                                                      \
  if (a.field != b.field)                                                                           \
    return setError(tacoRemoteError,                                                                \
                    "consistency check failed: ranks disagree on %s (rank 0 has %lld, rank %d has %lld); " \
                    "every rank must use the same libtaco build and configuration",                 \
                    label, (long long)a.field, q, (long long)b.field);
    TACO_CMP(magic, "libtaco check format")
    TACO_CMP(version, "library version")
    TACO_CMP(codecId, "codec id")
    TACO_CMP(blockSize, "codec block size")
    TACO_CMP(chunkBytes, "chunkBytes")
    TACO_CMP(fallbackBytes, "fallbackBytes")
    TACO_CMP(pipelineDepth, "pipelineDepth")
    TACO_CMP(nranks, "nranks")
    TACO_CMP(algo, "algo (TACO_ALGO)")
    TACO_CMP(peerMemory, "TACO_PEER_MEMORY")
    TACO_CMP(tune, "TACO_TUNE")
#undef TACO_CMP
  }
  return tacoSuccess;
}

}  // namespace

size_t configBytesOf(size_t size) {
  using C = tacoConfig_t;
  if (size >= sizeof(C)) return sizeof(C);
  // Where each field ends, from `version` on (the fields a caller may lack).
  const size_t ends[] = {offsetof(C, version) + sizeof(C::version),
                         offsetof(C, codec) + sizeof(C::codec),
                         offsetof(C, chunkBytes) + sizeof(C::chunkBytes),
                         offsetof(C, fallbackBytes) + sizeof(C::fallbackBytes),
                         offsetof(C, pipelineDepth) + sizeof(C::pipelineDepth),
                         offsetof(C, checkConsistency) + sizeof(C::checkConsistency),
                         offsetof(C, algo) + sizeof(C::algo)};
  for (size_t end : ends) {
    const size_t padded = (end + alignof(C) - 1) / alignof(C) * alignof(C);  // an older struct's sizeof
    if (size == end || size == padded) return size;
  }
  return 0;
}

tacoResult_t commCheckConfig(const tacoConfig_t* config, const char* op) {
  tacoComm tmp;
  return resolveConfig(config, &tmp, op);
}

tacoResult_t commCreate(Transport* t, const tacoConfig_t* config, bool consistency, tacoComm** out) {
  tacoComm* c = new (std::nothrow) tacoComm();
  if (c == nullptr) {
    delete t;
    return setError(tacoSystemError, "communicator: out of host memory");
  }
  c->transport = t;
  c->rank = t->rank();
  c->nranks = t->nranks();
  tacoResult_t r = resolveConfig(config, c, "CommInit");
  if (r == tacoSuccess) r = commSetup(c);
  if (r == tacoSuccess && consistency && c->nranks > 1) r = consistencyCheck(c);
  if (r == tacoSuccess && loopbackWorldOf(t) == nullptr) r = peerMemorySetup(&c, 1, false);
  if (r == tacoSuccess && loopbackWorldOf(t) == nullptr) r = tuneAttach(&c, 1, false);
  if (r != tacoSuccess) {
    // An owned NCCL communicator must be torn down too, after the peer memory registered with it.
    peerMemoryFree(c->peer);
    c->peer = nullptr;
    t->abort();
    commFree(c);
    return r;
  }
  c->magic = kCommMagicLive;
  *out = c;
  return tacoSuccess;
}

tacoResult_t commCreateLoopback(tacoComm** comms, int nranks, const tacoConfig_t* config) {
  std::vector<Transport*> ts(nranks > 0 ? nranks : 0, nullptr);
  TACO_CHECK(loopbackCreate(nranks, ts.data()));
  for (int r = 0; r < nranks; ++r) {
    tacoResult_t res = commCreate(ts[r], config, false, &comms[r]);
    if (res != tacoSuccess) {
      for (int q = 0; q < r; ++q) commFree(comms[q]), comms[q] = nullptr;
      for (int q = r + 1; q < nranks; ++q) delete ts[q];
      return res;
    }
  }
  tacoResult_t res = peerMemorySetup(comms, nranks, true);
  if (res == tacoSuccess) res = tuneAttach(comms, nranks, true);
  if (res != tacoSuccess)
    for (int q = 0; q < nranks; ++q) commFree(comms[q]), comms[q] = nullptr;
  return res;
}

tacoResult_t commDestroy(tacoComm* c, bool abort) {
  if (c->pendingOps > 0) {
    if (!abort)
      return setError(tacoInvalidUsage,
                      "tacoCommDestroy: %d collectives of this communicator are queued in an open group; call "
                      "tacoGroupEnd first (or tacoCommAbort)",
                      c->pendingOps);
    groupForget(c);
  }
  tacoResult_t res = tacoSuccess;
  if (!abort) {
    for (cudaStream_t s : c->streams) {
      cudaError_t e = cudaStreamSynchronize(s);
      if (e != cudaSuccess && res == tacoSuccess)
        res = setError(tacoUnhandledCudaError, "tacoCommDestroy: waiting for the communicator's work: '%s'",
                       cudaGetErrorString(e));
    }
    if (res == tacoSuccess) peerTimelineReport(c);
    peerMemoryFree(c->peer);  // before the transport: NCCL symmetric memory is registered with it
    c->peer = nullptr;
    tacoResult_t f = c->transport->finalize();
    if (res == tacoSuccess) res = f;
  } else {
    if (c->peer != nullptr) {
      // Peer kernels poll this word in every wait: they exit promptly, and must have
      // exited before their scratch is freed.
      *c->peer->abortHost = 1;
      for (cudaStream_t st : c->streams) (void)cudaStreamSynchronize(st);
      (void)cudaGetLastError();
    }
    peerMemoryFree(c->peer);
    c->peer = nullptr;
    tacoResult_t f = c->transport->abort();
    if (res == tacoSuccess) res = f;
  }
  commFree(c);
  return res;
}

}  // namespace taco
