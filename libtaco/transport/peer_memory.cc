// Peer memory routes loopback and CUDA IPC, and what every route shares: the mapped
// words, the agreement, the check by a real write (transport/peer_memory_route.h).
#include "transport/peer_memory.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/log.h"
#include "transport/host_layout.h"
#include "transport/peer_memory_route.h"
#include "transport/transport.h"

namespace taco {

cudaError_t zeroScratchSync(void* p, size_t bytes) {
  cudaError_t e = cudaMemset(p, 0, bytes);
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  return e;
}

void attachWords(PeerMemory* pm, const MappedWords& w) {
  pm->abortHost = w.host;
  pm->abortDev = w.dev;
  pm->statusHost = w.host + 1;
  pm->statusDev = w.dev + 1;
}

tacoResult_t peerAgree(Transport* t, int* ok, int* refuser) {
  std::vector<int> oks(t->nranks());
  TACO_CHECK(t->hostAllGather(ok, oks.data(), sizeof(int)));
  if (refuser != nullptr) *refuser = -1;
  for (int q = 0; q < t->nranks(); ++q) {
    if (oks[q] == 0 && refuser != nullptr && *refuser < 0) *refuser = q;
    *ok &= oks[q];
  }
  return tacoSuccess;
}

tacoResult_t peerVerifyWrites(Transport* t, const PeerMemory& pm, const char* route, int* ok) {
  const int P = pm.nranks, me = pm.rank;
  // Rank q writes (q + 1) * 0x01010101 into word q of every peer's verification line.
  const size_t line = pm.bytes - 4 * (size_t)P;
  const uint32_t token = (uint32_t)(me + 1) * 0x01010101u;
  for (int q = 0; q < P && *ok; ++q) {
    const cudaError_t e = cudaMemcpy(pm.base[q] + line + 4 * (size_t)me, &token, 4, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      TACO_WARN("peer memory: %s: rank %d cannot write into rank %d's scratch ('%s')", route, me, q,
                cudaGetErrorString(e));
      *ok = 0;
    }
  }
  if (*ok && cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError(), *ok = 0;
  // Everyone has written (or failed); each checks its own line, then all agree.
  TACO_CHECK(peerAgree(t, ok));
  if (*ok) {
    std::vector<uint32_t> got(P);
    if (cudaMemcpy(got.data(), pm.base[me] + line, 4 * (size_t)P, cudaMemcpyDeviceToHost) != cudaSuccess)
      (void)cudaGetLastError(), *ok = 0;
    for (int q = 0; q < P && *ok; ++q)
      if (got[q] != (uint32_t)(q + 1) * 0x01010101u) {
        TACO_WARN("peer memory: %s: rank %d's write never reached rank %d (read %08x): P2P reported but not "
                  "working", route, q, me, got[q]);
        *ok = 0;
      }
    if (zeroScratchSync(pm.base[me] + line, 4 * (size_t)P) != cudaSuccess) (void)cudaGetLastError(), *ok = 0;
  }
  return peerAgree(t, ok);
}

// This host's identity (transport/host_layout.h, hostIdentityOf) into out[size], NUL-terminated.
static void thisHostIdentity(char* out, size_t size) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string boot;
  if (FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char line[64] = {};
    if (fgets(line, sizeof(line), f) != nullptr) boot = line;
    fclose(f);
    while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  }
  snprintf(out, size, "%s", hostIdentityOf(name, boot).c_str());
}

tacoResult_t peerHostLayout(Transport* t, int* ranksOnThisHost, bool* oneHost, bool* firstOnHost,
                            int* mostOnOneHost) {
  struct Host {
    char name[kHostIdentityBytes];
  } mine{};
  thisHostIdentity(mine.name, sizeof(mine.name));
  std::vector<Host> all(t->nranks());
  TACO_CHECK(t->hostAllGather(&mine, all.data(), sizeof(Host)));
  std::vector<std::string> names;
  for (Host& h : all) h.name[sizeof(h.name) - 1] = '\0', names.emplace_back(h.name);
  const HostLayout layout = hostLayoutOf(names, t->rank());
  *ranksOnThisHost = layout.ranksOnThisHost;
  *oneHost = layout.oneHost;
  if (firstOnHost != nullptr) *firstOnHost = layout.firstOnHost;
  if (mostOnOneHost != nullptr) *mostOnOneHost = layout.mostOnOneHost;
  return tacoSuccess;
}

namespace {

struct LoopbackMemory {
  char* mem = nullptr;
  MappedWords words;
  ~LoopbackMemory() {
    if (mem) cudaFree(mem);
  }
};

// Every rank of a loopback world holds one reference; the last one frees.
struct LoopbackOwner : PeerOwner {
  explicit LoopbackOwner(std::shared_ptr<LoopbackMemory> m) : mem(std::move(m)) {}
  std::shared_ptr<LoopbackMemory> mem;
};

struct IpcOwner : PeerOwner {
  char* mine = nullptr;             // our cudaMalloc
  std::vector<char*> opened;        // peers' handles we opened
  MappedWords words;
  ~IpcOwner() override {
    for (char* p : opened) cudaIpcCloseMemHandle(p);
    if (mine) cudaFree(mine);
  }
};

}  // namespace

tacoResult_t peerMemoryCreateLoopback(int nranks, size_t bytes, PeerMemory** out) {
  for (int r = 0; r < nranks; ++r) out[r] = nullptr;
  if (nranks < 1 || nranks > kMaxPeerRanks) return tacoSuccess;
  auto shared = std::make_shared<LoopbackMemory>();
  TACO_CHECK(shared->words.alloc());
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&shared->mem), bytes * nranks);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    shared->mem = nullptr;
    TACO_WARN("loopback peer memory of %d x %zu bytes could not be allocated ('%s'): fused and one-shot "
              "AllReduce are off for this world", nranks, bytes, cudaGetErrorString(e));
    return tacoSuccess;
  }
  TACO_CUDA_CHECK(zeroScratchSync(shared->mem, bytes * nranks));
  for (int r = 0; r < nranks; ++r) {
    PeerMemory* pm = new (std::nothrow) PeerMemory();
    if (pm == nullptr) {
      for (int q = 0; q < r; ++q) peerMemoryFree(out[q]), out[q] = nullptr;
      return setError(tacoSystemError, "loopback peer memory: out of host memory");
    }
    pm->route = "loopback";
    pm->rank = r;
    pm->nranks = nranks;
    pm->bytes = bytes;
    pm->ranksPerDevice = nranks;
    for (int q = 0; q < nranks; ++q) pm->base[q] = shared->mem + (size_t)q * bytes;
    attachWords(pm, shared->words);
    pm->owner = new (std::nothrow) LoopbackOwner(shared);
    if (pm->owner == nullptr) {
      delete pm;
      for (int q = 0; q < r; ++q) peerMemoryFree(out[q]), out[q] = nullptr;
      return setError(tacoSystemError, "loopback peer memory: out of host memory");
    }
    out[r] = pm;
  }
  return tacoSuccess;
}

tacoResult_t peerMemoryCreateIpc(Transport* t, size_t bytes, PeerMemory** out) {
  *out = nullptr;
  const int P = t->nranks(), me = t->rank();
  if (P < 2 || P > kMaxPeerRanks) {
    TACO_INFO("peer memory: none (%d ranks; the fused path needs 2..%d)", P, kMaxPeerRanks);
    return tacoSuccess;
  }
  // 1. Same host (by name and boot id: hostIdentityOf)? CUDA IPC handles only open on the host
  // that made them. Same GPU? Ranks are told apart by the device's UUID (ordinals differ
  // between processes with CUDA_VISIBLE_DEVICES; a MIG instance has a UUID of its own).
  struct Who {
    char host[kHostIdentityBytes];
    int device;
    int canMap;
    unsigned char uuid[16];
  } mine{};
  thisHostIdentity(mine.host, sizeof(mine.host));
  cudaGetDevice(&mine.device);
  cudaDeviceProp prop;
  static_assert(sizeof(prop.uuid) == sizeof(mine.uuid), "cudaUUID_t is 16 bytes");
  if (cudaGetDeviceProperties(&prop, mine.device) == cudaSuccess) memcpy(mine.uuid, &prop.uuid, sizeof(mine.uuid));
  else (void)cudaGetLastError();  // all zeros: counted as sharing with every rank that failed too (safe)
  std::vector<Who> all(P);
  TACO_CHECK(t->hostAllGather(&mine, all.data(), sizeof(Who)));
  int sameDevice = 0;
  for (int q = 0; q < P; ++q) {
    if (strncmp(all[q].host, mine.host, sizeof(mine.host)) != 0) {
      TACO_INFO("peer memory: none (rank %d is on host '%s', rank %d on '%s': the staged path)", me, mine.host,
                q, all[q].host);
      return tacoSuccess;
    }
    sameDevice += memcmp(all[q].uuid, mine.uuid, sizeof(mine.uuid)) == 0;
  }
  // 2. Allocate, export, exchange.
  auto owner = std::unique_ptr<IpcOwner>(new IpcOwner());
  struct Handle {
    cudaIpcMemHandle_t h;
    int ok;
  } hmine{};
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&owner->mine), bytes);
  if (e == cudaSuccess) e = zeroScratchSync(owner->mine, bytes);
  if (e == cudaSuccess) e = cudaIpcGetMemHandle(&hmine.h, owner->mine);
  hmine.ok = e == cudaSuccess;
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    TACO_WARN("peer memory: cuda-ipc: rank %d could not export %zu bytes of scratch ('%s')", me, bytes,
              cudaGetErrorString(e));
  }
  std::vector<Handle> handles(P);
  TACO_CHECK(t->hostAllGather(&hmine, handles.data(), sizeof(Handle)));
  // 3. Open every peer's scratch, then check it by a real write into every peer.
  PeerMemory pm;
  pm.route = "cuda-ipc";
  pm.rank = me;
  pm.nranks = P;
  pm.bytes = bytes;
  pm.ranksPerDevice = sameDevice;
  int ok = 1;
  for (int q = 0; q < P; ++q) ok &= handles[q].ok;
  for (int q = 0; q < P && ok; ++q) {
    if (q == me) {
      pm.base[q] = owner->mine;
      continue;
    }
    void* p = nullptr;
    e = cudaIpcOpenMemHandle(&p, handles[q].h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      TACO_WARN("peer memory: cuda-ipc: rank %d cannot open rank %d's scratch ('%s')", me, q, cudaGetErrorString(e));
      ok = 0;
      break;
    }
    owner->opened.push_back(static_cast<char*>(p));
    pm.base[q] = static_cast<char*>(p);
  }
  // The mapped words before the agreement, so that a rank cannot fail alone after it.
  if (ok && owner->words.alloc() != tacoSuccess) ok = 0;
  TACO_CHECK(peerVerifyWrites(t, pm, "cuda-ipc", &ok));
  if (!ok) {
    TACO_WARN("peer memory: cuda-ipc refused on rank %d (the reason is logged by the rank that failed): no peer "
              "memory through it", me);
    return tacoSuccess;
  }
  PeerMemory* res = new (std::nothrow) PeerMemory(pm);
  if (res == nullptr) return setError(tacoSystemError, "peer memory: out of host memory");
  attachWords(res, owner->words);
  res->owner = owner.release();
  TACO_INFO("peer memory: cuda-ipc, %d ranks (%d on this GPU), %zu bytes of scratch per rank", P, sameDevice,
            bytes);
  *out = res;
  return tacoSuccess;
}

void peerMemoryFree(PeerMemory* pm) {
  if (pm == nullptr) return;
  delete pm->owner;
  delete pm;
}

}  // namespace taco
