// The layout of a communicator's workspace (tacoComm::workspace, allocated once
// by coll/comm_init.cc; docs/collectives.md, "The pipeline and the workspace"):
// `depth` pipeline slots; each slot holds two regions of nranks compressed
// pieces, each piece `pieceCap` bytes:
//
//   outgoing  piece j: compressed here for rank j (or for every rank); in the
//             gather phases, rank j's piece lands at the same index
//   incoming  piece j: received from rank j in an AlltoAll exchange, the
//             inputs of the owner's reduction
#pragma once
#include <cstddef>

#include "core/comm.h"

namespace taco {

inline size_t workspaceBytes(int depth, int nranks, size_t pieceCap) {
  return (size_t)depth * 2 * (size_t)nranks * pieceCap;
}

// Piece j of the outgoing / incoming region of pipeline slot `slot`.
inline char* outgoingPiece(tacoComm* c, int slot, int j) {
  return c->workspace + ((size_t)slot * 2 * c->nranks + j) * c->pieceCap;
}
inline char* incomingPiece(tacoComm* c, int slot, int j) {
  return c->workspace + ((size_t)slot * 2 * c->nranks + c->nranks + j) * c->pieceCap;
}

}  // namespace taco
