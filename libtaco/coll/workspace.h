// The layout of a communicator's workspace (tacoComm::workspace, allocated once
// by coll/comm_init.cc; docs/collectives.md, "The pipeline and the workspace"):
// `depth` pipeline slots; each slot holds two regions (A, B) of nranks
// compressed pieces, each piece `pieceCap` bytes.
#pragma once
#include <cstddef>

#include "core/comm.h"

namespace taco {

inline size_t workspaceBytes(int depth, int nranks, size_t pieceCap) {
  return (size_t)depth * 2 * (size_t)nranks * pieceCap;
}

// Region A / B of pipeline slot `slot`, piece `j`.
inline char* slotA(tacoComm* c, int slot, int j) {
  return c->workspace + ((size_t)slot * 2 * c->nranks + j) * c->pieceCap;
}
inline char* slotB(tacoComm* c, int slot, int j) {
  return c->workspace + ((size_t)slot * 2 * c->nranks + c->nranks + j) * c->pieceCap;
}

}  // namespace taco
