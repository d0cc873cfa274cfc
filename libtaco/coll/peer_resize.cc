#include "coll/peer_resize.h"

#include <cstring>

#include "coll/allreduce_peer.h"
#include "coll/peer_plan.h"
#include "core/check.h"
#include "core/comm.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace taco {

tacoResult_t peerMemoryCreateSized(const std::vector<tacoComm*>& comms, size_t chunkBytes,
                                   std::vector<PeerMemory*>* out) {
  out->assign(comms.size(), nullptr);
  tacoComm* c0 = comms[0];
  if (c0->peer == nullptr) return tacoSuccess;
  const size_t bytes = peerScratchBytes(chunkBytes, c0->nranks, c0->codec);
  const char* route = c0->peer->route;
  if (strcmp(route, "loopback") == 0) {
    TACO_CHECK(peerMemoryCreateLoopback((int)comms.size(), bytes, out->data()));
  } else if (strcmp(route, "nccl-symmetric") == 0) {
    TACO_CHECK(peerMemoryCreateNcclSymmetric(c0->transport, bytes, peerMaxCtasPerRank(), &(*out)[0]));
  } else if (strcmp(route, "cuda-ipc") == 0) {
    TACO_CHECK(peerMemoryCreateIpc(c0->transport, bytes, &(*out)[0]));
  }
  for (size_t i = 0; i < comms.size(); ++i)
    if ((*out)[i] != nullptr) (*out)[i]->faultSkipRank = comms[i]->peer->faultSkipRank;
  if ((*out)[0] == nullptr)
    TACO_INFO("peer memory: a %zu-byte scratch (chunk %zu) was refused by the %s route", bytes, chunkBytes, route);
  return tacoSuccess;
}

PeerMemory* peerMemorySwap(tacoComm* c, PeerMemory* pm) {
  PeerMemory* old = c->peer;
  c->workspaceBytes = c->workspaceBytes - (old != nullptr ? old->bytes : 0) + (pm != nullptr ? pm->bytes : 0);
  c->peer = pm;
  return old;
}

size_t peerScratchOf(const tacoComm* c) { return c->peer != nullptr ? c->peer->bytes : 0; }

}  // namespace taco
