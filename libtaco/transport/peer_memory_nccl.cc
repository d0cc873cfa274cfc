// The nccl-symmetric peer-memory route (transport/peer_memory.h): the scratch is NCCL's
// own symmetric memory, and every peer's address comes from NCCL's device API.
//
//   1. alone:      the loaded NCCL's version against the headers compiled in
//                  (nccl_symmetric_version.h), its functions, ncclMemAlloc of the scratch;
//   2. collective: ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC);
//   3. collective: ncclDevCommCreate, with LSA barriers for every CTA of a peer launch;
//                  its LSA team must be the whole communicator;
//   4. alone:      ncclGetLsaPointer(window, 0, q) for every rank q, in a kernel;
//   5. collective: a real write into every peer, checked by its owner (peer_memory_route.h).
//
// All ranks agree after every step that can fail (peerAgree) and before every collective
// NCCL call: a rank that went on alone would wait forever in NCCL for the others, or take
// the fused path while its peers take the staged one. Registration succeeding proves
// nothing: where the communicator has no symmetric memory NCCL returns a NULL window, or
// (2.28) a local registration that only ncclDevCommCreate refuses, as it does for one rank
// on one GPU ("Communicator does not support symmetric memory"). So the whole chain
// decides, and a refusal is logged at INFO (which step, NCCL's words) and is not an error:
// the caller tries the next route.
//
// This runs when a communicator is created, never inside a collective and never during a
// graph capture: the window is registered once and lives as long as the communicator.
#include <cstdio>
#include <memory>
#include <new>
#include <utility>

#include "core/check.h"
#include "core/log.h"
#include "transport/nccl_symmetric.h"
#include "transport/nccl_symmetric_version.h"
#include "transport/peer_memory.h"
#include "transport/peer_memory_route.h"
#include "transport/transport.h"

namespace taco {
namespace {

constexpr const char* kRoute = "nccl-symmetric";

struct NcclSymmetricOwner : PeerOwner {
  const NcclSymmetricApi* api = nullptr;
  void* comm = nullptr;
  void* mem = nullptr;     // the ncclMemAlloc'ed scratch
  void* window = nullptr;  // its window
#if TACO_NCCL_DEVICE_API
  NcclDevCommBox* devComm = nullptr;
#endif
  MappedWords words;
  // NCCL destroys a device communicator and deregisters a window locally (it waits on no
  // peer), so a communicator abort cannot hang here. The NCCL communicator must still be
  // alive: peerMemoryFree comes before the transport's finalize or abort.
  ~NcclSymmetricOwner() override {
#if TACO_NCCL_DEVICE_API
    if (devComm != nullptr) ncclDevCommClose(*api, comm, devComm);
#endif
    if (window != nullptr) api->windowDeregister(comm, window);
    if (mem != nullptr) api->memFree(mem);
  }
};

// An NCCL version code as NCCL prints it (2.28.3).
struct VersionText {
  char s[24];
  explicit VersionText(int v) { snprintf(s, sizeof(s), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100); }
};

// "<step> returned <r> '<NCCL's string>'[: <NCCL's last error>]"
void ncclWhy(const NcclSymmetricApi& api, void* comm, int r, const char* step, char* why, size_t n) {
  const char* last = api.lastError != nullptr ? api.lastError(comm) : nullptr;
  const bool hasLast = last != nullptr && *last != '\0';
  snprintf(why, n, "%s returned %d '%s'%s%s", step, r, api.errorString != nullptr ? api.errorString(r) : "?",
           hasLast ? ": " : "", hasLast ? last : "");
}

// After an agreement that failed: this rank's own reason, or which rank refused.
void logClosed(int me, int refuser, const char* why) {
  if (*why != '\0') TACO_INFO("peer memory: %s closed on rank %d: %s", kRoute, me, why);
  else TACO_INFO("peer memory: %s closed: rank %d refused (its log says why)", kRoute, refuser);
}

// Step 1, what this rank can decide alone. 1 when it can go on, else 0 and `why`.
int localSteps(Transport* t, size_t bytes, NcclSymmetricOwner* o, char* why, size_t n) {
  o->comm = t->ncclComm();
  if (o->comm == nullptr) {
    snprintf(why, n, "the %s transport has no NCCL communicator", t->name());
    return 0;
  }
  if (ncclSymmetricApi(&o->api) != tacoSuccess) {  // not reached: an NCCL transport has loaded NCCL
    snprintf(why, n, "NCCL is not loaded");
    return 0;
  }
  const NcclSymmetricApi& api = *o->api;
  const int compiled = ncclDeviceHeadersVersion();
  if (const char* refusal = ncclSymmetricVersionRefusal(api.version, compiled)) {
    snprintf(why, n, "version: NCCL %s loaded from %s, headers %s: %s", VersionText(api.version).s, api.path,
             compiled > 0 ? VersionText(compiled).s : "none", refusal);
    return 0;
  }
  if (api.missing != nullptr) {
    snprintf(why, n, "symbol missing: NCCL %s at %s lacks %s", VersionText(api.version).s, api.path, api.missing);
    return 0;
  }
  const int r = api.memAlloc(&o->mem, bytes);
  if (r != 0) {
    o->mem = nullptr;
    ncclWhy(api, o->comm, r, "ncclMemAlloc", why, n);
    return 0;
  }
  const cudaError_t e = zeroScratchSync(o->mem, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, n, "zeroing the ncclMemAlloc'ed scratch: '%s'", cudaGetErrorString(e));
    return 0;
  }
  return 1;
}

#if TACO_NCCL_DEVICE_API
// Steps 2 to 5, once every rank passed step 1.
tacoResult_t sharedSteps(Transport* t, size_t bytes, int lsaBarriers, std::unique_ptr<NcclSymmetricOwner> o,
                         PeerMemory** out) {
  const NcclSymmetricApi& api = *o->api;
  const int P = t->nranks(), me = t->rank();
  char why[512] = "";
  int ok = 1, refuser = -1;

  // 2. The window.
  int r = api.windowRegister(o->comm, o->mem, bytes, &o->window, kNcclWinCollSymmetric);
  if (r != 0) {
    o->window = nullptr;
    ncclWhy(api, o->comm, r, "ncclCommWindowRegister", why, sizeof(why));
    ok = 0;
  } else if (o->window == nullptr) {
    snprintf(why, sizeof(why),
             "window register returned a NULL window (NCCL does so where the communicator has no symmetric "
             "memory)");
    ok = 0;
  }
  TACO_CHECK(peerAgree(t, &ok, &refuser));
  if (!ok) {
    logClosed(me, refuser, why);
    return tacoSuccess;
  }

  // 3. The device communicator. Its LSA barriers (one per CTA, NCCL's convention) are
  // reserved for every CTA a peer launch can have, so that a kernel may synchronise with
  // ncclLsaBarrierSession without creating another device communicator later (never in a
  // capture); today's kernels signal through flags in the scratch (docs/design.md §5).
  r = ncclDevCommOpen(api, o->comm, lsaBarriers, &o->devComm);
  if (r != 0) {
    ncclWhy(api, o->comm, r, "ncclDevCommCreate", why, sizeof(why));
    ok = 0;
  } else {
    int lsaRank = -1, lsaSize = 0;
    ncclDevCommLsaTeam(o->devComm, &lsaRank, &lsaSize);
    if (lsaSize != P || lsaRank != me) {
      snprintf(why, sizeof(why),
               "the LSA team is not the communicator: rank %d is LSA rank %d of %d, the communicator has %d ranks "
               "(GPUs in several NVLink domains)",
               me, lsaRank, lsaSize, P);
      ok = 0;
    }
  }
  TACO_CHECK(peerAgree(t, &ok, &refuser));
  if (!ok) {
    logClosed(me, refuser, why);
    return tacoSuccess;
  }

  // 4. Every rank's scratch, as NCCL mapped it here (our own too: all stores go through
  // NCCL's mapping, as NCCL's kernels do).
  PeerMemory pm;
  pm.route = kRoute;
  pm.rank = me;
  pm.nranks = P;
  pm.bytes = bytes;
  const cudaError_t e = ncclLsaPointers(o->window, P, pm.base);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, sizeof(why), "the ncclGetLsaPointer kernel failed ('%s')", cudaGetErrorString(e));
    ok = 0;
  }
  // 5. The check by a real write into every peer (which write failed is logged by the rank that saw it);
  // the mapped words first, so that a rank cannot fail alone after the agreement.
  if (ok && o->words.alloc() != tacoSuccess) {
    snprintf(why, sizeof(why), "the host-mapped abort and status words could not be allocated");
    ok = 0;
  }
  TACO_CHECK(peerVerifyWrites(t, pm, kRoute, &ok));
  if (!ok) {
    TACO_INFO("peer memory: %s closed on rank %d: %s", kRoute, me,
              *why != '\0' ? why : "the check by a real write into every peer failed on some rank");
    return tacoSuccess;
  }
  PeerMemory* res = new (std::nothrow) PeerMemory(pm);
  if (res == nullptr) return setError(tacoSystemError, "peer memory: out of host memory");
  attachWords(res, o->words);
  res->owner = o.release();
  TACO_INFO("peer memory: %s, %d ranks, %zu bytes of scratch per rank, NCCL %s", kRoute, P, bytes,
            VersionText(api.version).s);
  *out = res;
  return tacoSuccess;
}
#endif

}  // namespace

tacoResult_t peerMemoryCreateNcclSymmetric(Transport* t, size_t bytes, int lsaBarriers, PeerMemory** out) {
  *out = nullptr;
  const int P = t->nranks(), me = t->rank();
  if (P > kMaxPeerRanks) {
    TACO_INFO("peer memory: %s closed: %d ranks (at most %d)", kRoute, P, kMaxPeerRanks);
    return tacoSuccess;
  }
  auto owner = std::unique_ptr<NcclSymmetricOwner>(new (std::nothrow) NcclSymmetricOwner());
  char why[512] = "";
  int ok = owner != nullptr ? localSteps(t, bytes, owner.get(), why, sizeof(why)) : 0;
  if (owner == nullptr) snprintf(why, sizeof(why), "out of host memory");
  int refuser = -1;
  // Also where the route is compiled out: a rank built with it waits here for this one.
  TACO_CHECK(peerAgree(t, &ok, &refuser));
  if (!ok) {
    logClosed(me, refuser, why);
    return tacoSuccess;
  }
#if TACO_NCCL_DEVICE_API
  return sharedSteps(t, bytes, lsaBarriers, std::move(owner), out);
#else
  return setError(tacoInternalError, "peer memory: %s passed its local steps without nccl_device.h", kRoute);
#endif
}

}  // namespace taco
