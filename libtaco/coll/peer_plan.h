// What the peer-memory AllReduce kernels (fused two-shot, one-shot) keep in each
// rank's scratch, and how a call is cut into launches (docs/collectives.md, "Peer
// memory"). Host and device code share these offsets; host tests check them.
//
// One rank's scratch, `bytes` long and the same layout on every rank:
//   [0, kControlBytes)       control words, each on its own 128-byte line:
//                            the epoch (of the next call's first chunk:
//                            peerChunkEpoch), per-phase arrival counters, the finish
//                            counter, the failed word, the scatter's counter
//                            of odd epochs; from line kCtlClaims, the fused
//                            two-shot's tile counters
//   [kFlagsOffset, ...)      flags[phase][src], one 32-bit word per 128-byte line,
//                            written by rank src with release semantics
//   [kDataOffset, ...)       two halves of data, used by alternate epochs (parity)
//   [bytes - kTailBytes, bytes)  spare (the IPC route's verification line)
// A half holds P slots: in two-shot, slot j (j != owner) receives the piece that rank
// j compressed for this rank, and slot `rank` holds this rank's reduced piece, which
// the peers read; in one-shot, slot 0 holds this rank's compressed input.
#pragma once
#include <cstddef>
#include <cstdint>

#include "coll/plan.h"
#include "transport/peer_memory.h"  // kMaxPeerRanks
#include "taco.h"

namespace taco {

constexpr size_t kPeerLine = 128;
constexpr int kPeerPhases = 2;            // two-shot: scatter done, reduced piece ready
constexpr size_t kCtlEpoch = 0;           // line indices in the control area
constexpr size_t kCtlArrive = 1;          // + phase
constexpr size_t kCtlFinish = kCtlArrive + kPeerPhases;
constexpr size_t kCtlFailed = kCtlFinish + 1;
// The fused scatter's arrival counter in odd epochs (kCtlArrive + 0 in even ones): the scatter of
// chunk k may start before that of chunk k - 1 has ended (coll/device/peer_kernels.cuh), whose
// reset of the counter only a kernel's end makes visible for certain; that of chunk k - 2 has ended.
constexpr size_t kCtlArriveScatterOdd = kCtlFailed + 1;
// The fused two-shot's tile counters (coll/device/peer_kernels.cuh, the claimed tile order): one
// per epoch parity, phase (A, B, C) and piece of the phase (A and C: P - 1 pieces), from line
// kCtlClaims on; the last CTA of a phase to finish resets its counters to 0.
constexpr size_t kCtlClaims = 16;
constexpr int kClaimPhases = 3;
constexpr int kClaimPieces = kMaxPeerRanks;
inline constexpr size_t claimLine(int parity, int phase, int piece) {
  return kCtlClaims + ((size_t)parity * kClaimPhases + (size_t)phase) * kClaimPieces + (size_t)piece;
}
constexpr size_t kControlBytes = claimLine(2, 0, 0) * kPeerLine;
constexpr size_t kFlagsOffset = kControlBytes;
constexpr size_t kFlagsBytes = (size_t)kPeerPhases * kMaxPeerRanks * kPeerLine;
constexpr size_t kDataOffset = kFlagsOffset + kFlagsBytes;
constexpr size_t kTailBytes = 256;

// Scratch bytes per rank for a communicator whose chunk is `chunkBytes` and codec
// `codec`: each half holds chunkBytes / 2 of data, and at least P slots of the codec's
// wire of a staged chunk's piece of 16-bit data (pieceElems), so that a two-shot chunk
// of 16-bit data is one launch.
size_t peerScratchBytes(size_t chunkBytes, int nranks, tacoCodec_t codec);

// Bytes of one data half of a scratch of `scratchBytes`.
inline size_t peerHalfBytes(size_t scratchBytes) {
  return (scratchBytes - kDataOffset - kTailBytes) / 2 / 256 * 256;
}
// Bytes of one of the P slots of a half.
inline size_t peerSlotBytes(size_t scratchBytes, int nranks) {
  return peerHalfBytes(scratchBytes) / (size_t)nranks / 256 * 256;
}

// How one AllReduce call is cut into kernel launches (one launch per chunk, one epoch each).
struct PeerPlan {
  int algo = 0;             // tacoAlgoFused, tacoAlgoOneShot or tacoAlgoOneShotRaw
  tacoCodec_t codec{};      // the codec on the wire (none for oneshot-raw)
  size_t granule = 0;       // block size of the plan
  size_t chunkElems = 0;    // two-shot: elements of each shard per launch; one-shot: of the buffer
  size_t nChunks = 0;
  Range shard[kMaxPeerRanks];  // two-shot: the P shards of the whole buffer
};

// The plan for `count` elements of `dtype` on P ranks with `scratchBytes` of scratch each.
// `codec` is the communicator's (ignored for oneshot-raw). Never zero chunks for count > 0.
PeerPlan peerPlan(int algo, tacoCodec_t codec, size_t count, tacoDataType_t dtype, int nranks,
                  size_t scratchBytes);

// The piece of shard j in launch `chunk` (two-shot), or the chunk of the buffer (one-shot).
inline Range peerPiece(const PeerPlan& p, int j, size_t chunk) { return pieceOf(p.shard[j], p.chunkElems, chunk); }
inline Range peerChunk(const PeerPlan& p, size_t count, size_t chunk) {
  return pieceOf(Range{0, count}, p.chunkElems, chunk);
}

}  // namespace taco
