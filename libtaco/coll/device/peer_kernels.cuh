// The peer-memory AllReduce kernels: fused two-shot and one-shot (compressed or raw).
// A chunk of the call (coll/peer_plan.h) is an epoch with its half of the scratch by epoch
// parity: one launch for the one-shot, one launch per phase (A, B, C) for the fused two-shot.
// The host side, which picks and launches them, is coll/allreduce_peer.cu; each element
// type and group of code formats is instantiated in a translation unit of its own (made from
// coll/peer_kernels.cu.in), so that they compile in parallel.
// A launch drives one rank (NCCL / CUDA IPC: one rank per process) or every rank of a
// loopback world (one GPU): CTA group g runs rank localRank[g], ctasPerRank CTAs each.
//
// Fused two-shot, rank r, P ranks, per chunk (pieces = this chunk's part of every shard):
//   A. for every peer j != r: compress piece j of sendbuff straight into slot r of
//      rank j's scratch (stores over NVLink); arrive: flag 0 of r at every j.
//   B. wait for flag 0 of every j; sum in fp32, in rank order, the exact piece r of
//      sendbuff and the decoded slots j != r (decompress-reduce-compress): the sum is
//      compressed once into slot r of our scratch, and recvbuff's piece r is decoded
//      from those bytes; arrive: flag 1 of r at every j.
//   C. wait for flag 1 of every j; decode every peer's reduced piece from slot j of
//      rank j's scratch (loads over NVLink) into recvbuff's piece j.
// The tile functions and the wire layout per piece are the codec kernels' own
// (codec/device/*.cuh), so the result is the staged two-shot's, bit for bit.
//
// One-shot, rank r, per chunk: A. compress the chunk of sendbuff into slot 0 of our scratch;
// arrive: flag 0 of r at every rank (ourselves too). B. wait for flag 0 of every
// rank; decode-accumulate every rank's slot 0 in rank order into recvbuff. Raw
// one-shot is the same with codec `none` (a copy, then an fp32 sum in rank order).
//
// No stale data (epochs in device memory, halves by epoch parity), no deadlock (cooperative
// launches sized to be resident), in place safe: the argument is in docs/design.md §5.
#pragma once
#include <cuda_runtime.h>

#include <type_traits>

#include "coll/peer_launch.h"
#include "coll/device/peer_sync.cuh"
#include "coll/device/peer_timeline.cuh"
#include "codec/device/args.h"
#include "codec/device/block_generic.cuh"
#include "codec/device/element.cuh"
#include "codec/device/rotated256.cuh"
#include "codec/device/rotated256_sum.cuh"

namespace taco {
namespace peer {

using namespace dev;

__device__ __forceinline__ char* slotOf(const PeerLaunch& L, int owner, int parity, int j) {
  return L.base[owner] + kDataOffset + (size_t)parity * L.halfBytes + (size_t)j * L.slotBytes;
}

__device__ __forceinline__ bool aligned16Dev(const void* p) { return ((uintptr_t)p & 15) == 0; }

struct Who {
  int group, rank, cta, ctas;  // group: the local rank this CTA drives (index into send / recv)
  size_t warp, nWarps;
  int lane;
};

__device__ __forceinline__ Who who(const PeerLaunch& L) {
  const unsigned bx = blockIdx.x, tx = threadIdx.x;
  Who w;
  w.group = (int)bx / L.ctasPerRank;
  w.rank = L.localRank[w.group];
  w.cta = (int)bx % L.ctasPerRank;
  w.ctas = L.ctasPerRank;
  w.warp = ((size_t)w.cta * blockDim.x + tx) >> 5;
  w.nWarps = ((size_t)w.ctas * blockDim.x) >> 5;
  w.lane = tx & 31;
  return w;
}

// What every peer kernel reads first: rank r's scratch, the epoch of this launch's chunk
// (the chunks r completed before it) and what its waits give up on.
struct RankEpoch {
  char* mine;
  uint32_t epoch;
  peer::WaitGuard guard;
};

__device__ __forceinline__ RankEpoch rankEpoch(const PeerLaunch& L, int r) {
  char* const mine = L.base[r];
  const uint32_t word = *reinterpret_cast<volatile uint32_t*>(peer::controlWord(mine, kCtlEpoch));
  const uint32_t epoch = peerChunkEpoch(word, L.chunk);
  return RankEpoch{mine, epoch,
                   peer::WaitGuard{L.abortWord, L.statusWord, peer::controlWord(mine, kCtlFailed), L.timeoutNs,
                                   L.oneGpu != 0}};
}

// The launch's chunk: its index in the call, its epoch, the flags' value once a rank is
// past a point in it, and its half of the scratch.
struct Chunk {
  int c;
  uint32_t epoch, flag;
  int parity;
};

__device__ __forceinline__ Chunk chunkOf(const PeerLaunch& L, const RankEpoch& e) {
  return Chunk{L.chunk, e.epoch, e.epoch + 1, (int)(e.epoch & 1)};
}

// Shard j's piece in chunk `ch` (coll/peer_launch.h): its first element, whether it is
// empty, and its wire set into `a`.
__device__ __forceinline__ size_t pieceOff(const PeerLaunch& L, int j, const Chunk& ch) {
  return peerPieceOff(L, j, ch.c);
}
__device__ __forceinline__ bool pieceEmpty(const PeerLaunch& L, int j, const Chunk& ch) {
  return peerPieceLen(L, j, ch.c) == 0;
}
__device__ __forceinline__ void setPieceWire(Args& a, const PeerLaunch& L, int j, const Chunk& ch) {
  switch (peerPieceWireOf(L, j, ch.c)) {
    case kPieceFull: setWire(a, L.full); break;
    case kPieceTail: setWire(a, L.tail[j]); break;
    default: setWire(a, PieceWire{}); break;
  }
}

// The codec's kernel arguments for shard j's piece in chunk `ch` (no pointers set).
__device__ __forceinline__ void setPiece(Args& a, const PeerLaunch& L, int j, const Chunk& ch) {
  setPieceWire(a, L, j, ch);
  a.in.n = 0;
  a.x = nullptr;
  a.y = nullptr;
  a.out = nullptr;
  a.streamOut = 0;
}

// Formats whose rotated codecs at B = 256 take the rotated256 layout in the peer kernels
// (codec/device/rotated256.cuh): FormatInfo::rotated256 (codec/format.h).
template <int FMT>
constexpr bool kRotated256Format = formatInfo(FMT).rotated256;

// A piece the rotated256 tile functions take: the test of the codec launcher's
// takesRotated256Kernel(), for a CTA-uniform piece.
__device__ __forceinline__ bool rotated256Piece(const Args& a) {
  return a.k.rotate && a.k.B == 256 && a.vec && a.count < ((size_t)1 << 40);
}

// Runs body(tiles) with this warp's tiles of a piece (codec/device/tile_queue.cuh): CLAIM, claimed
// from the counter `claim` (the claimed order: peerFusedKernel; D: the loop's tiles in flight),
// else warp, warp + nWarps, ... of the share, in indices of type I.
template <bool CLAIM, int D, typename I = size_t, class Body>
__device__ __forceinline__ void withTiles(const Who& w, uint32_t* claim, Body body) {
  if constexpr (CLAIM) {
    ClaimedTiles<D> tiles(claim);
    body(tiles);
  } else {
    StaticTilesOf<I> tiles{(I)w.warp, (I)w.nWarps};
    body(tiles);
  }
}

// Compress with the codec kernels' software pipeline (cp.async staging of the tiles
// ahead; tiles that cannot be staged take the general load). CLAIM: the warps of the share claim
// their tiles from the counter `claim` (withTiles).
template <typename T, int FMT, bool ROT, bool CLAIM = false>
__device__ __forceinline__ void compressPiece(const Args& a, const Who& w, uint32_t* claim = nullptr) {
  if (w.warp == 0 && w.lane == 0) writeHeader(a.out, a);
  if constexpr (ROT && kRotated256Format<FMT>) {
    if (rotated256Piece(a)) {  // the B = 256 rotated layout, as the codec's own kernel takes it
      if constexpr (sizeof(T) == 2)
        withTiles<CLAIM, rotated256::fourLane::kDepth, uint32_t>(
            w, claim, [&](auto& tiles) { rotated256::fourLane::fourLaneCompressTiles<T, FMT>(a, tiles, w.lane); });
      else
        withTiles<CLAIM, rotated256::kCompressDepth>(w, claim, [&](auto& tiles) {
          rotated256::rotated256CompressTiles<T, FMT>(a, tiles, (a.nBlocks + 3) / 4, w.lane >> 3, w.lane & 7);
        });
      return;
    }
  }
  const int tpb = a.k.tpb, t = w.lane & (tpb - 1), gpw = 32 / tpb, giw = w.lane / tpb;
  const size_t nTiles = (a.nBlocks + gpw - 1) / gpw;
  withTiles<CLAIM, Stage<T>::kCompressDepth>(
      w, claim, [&](auto& tiles) { genericCompressTiles<T, FMT>(a, tiles, nTiles, gpw, giw, t); });
}

// Decode (and for MODE kReduceCompress re-compress) the sum of a.in; inputsOk: every input's header matched.
// REG_ARGS: the staged sum keeps a's fields in registers (genericSumTiles, SMEM_ARGS), where the
// kernel's registers allow it (kSumArgsInRegisters).
// CLAIM: the tiles claimed from `claim`, as compressPiece.
template <typename T, int MODE, int FMT, bool ROT, bool REG_ARGS = false, bool CLAIM = false>
__device__ __forceinline__ void sumPiece(const Args& a, const Who& w, bool inputsOk, uint32_t* claim = nullptr) {
  const int tpb = a.k.tpb, t = w.lane & (tpb - 1), gpw = 32 / tpb, giw = w.lane / tpb;
  const size_t nTiles = (a.nBlocks + gpw - 1) / gpw;
  if (MODE == kReduceCompress && w.warp == 0 && w.lane == 0) writeHeader(a.out, a);
  if constexpr (CLAIM) {
    static_assert(!ROT, "the rotated256 loops keep the static order");
    ClaimedTiles<Stage<T>::kSumDepth> tiles(claim);
    SumRest rest = allTiles(w.warp);
    if constexpr (stagedSumCodes(FMT, sizeof(T))) {
      if (takesStagedSum<T, FMT>(a, inputsOk)) rest = genericSumTiles<T, MODE, FMT, REG_ARGS>(a, tiles, nTiles, gpw, giw, t);
    }
    generalTiles<T, MODE, FMT>(a, tiles, nTiles, gpw, giw, t, inputsOk, rest);
    return;
  }
  SumRest rest = allTiles(w.warp);  // what the staged loops leave to the general loads
  bool rotated = false;             // the rotated256 layout took the piece
  if constexpr (ROT && kRotated256Format<FMT>) {
    if (rotated256Piece(a) && a.in.n >= 1 && inputsOk) {
      const uint32_t warp = (uint32_t)w.warp, nWarps = (uint32_t)w.nWarps;
      if (MODE == kAccumulate && a.in.n == 1 && a.x == nullptr) {
        StaticTiles32 tiles{warp, nWarps};
        rotated256::rotated256DecompressTiles<T, FMT>(a, tiles, w.lane >> 3, w.lane & 7);
        return;
      }
      rest = rotated256::rotated256SumTiles<T, MODE, FMT>(a, warp, nWarps, w.lane >> 3, w.lane & 7);
      rotated = true;
    }
  }
  if constexpr (stagedCodes(FMT, sizeof(T))) {  // the staged pipelines copy a chunk's codes whole
    if (!rotated) {
      if (MODE == kAccumulate && a.vec && a.in.n == 1 && a.x == nullptr && inputsOk) {
        StaticTiles tiles{w.warp, w.nWarps};
        genericDecompressTiles<T, FMT>(a, tiles, nTiles, gpw, giw, t);
        return;
      }
    }
  }
  if constexpr (stagedSumCodes(FMT, sizeof(T))) {
    if (!rotated && takesStagedSum<T, FMT>(a, inputsOk)) {  // k inputs (+ exact), staged
      StaticTiles tiles{w.warp, w.nWarps};
      rest = genericSumTiles<T, MODE, FMT, REG_ARGS>(a, tiles, nTiles, gpw, giw, t);
    }
  }
  generalTiles<T, MODE, FMT>(a, w.warp, w.nWarps, nTiles, gpw, giw, t, inputsOk, rest);
}

// Decode a's one input (no exact input) into a.y: sumPiece's plain decompress, without the
// sums' loops, which the fused two-shot's gather never takes (their registers spilled there).
// CLAIM: the tiles claimed from `claim`, as compressPiece.
template <typename T, int FMT, bool ROT, bool CLAIM = false>
__device__ __forceinline__ void decodePiece(const Args& a, const Who& w, bool inputsOk, uint32_t* claim = nullptr) {
  if constexpr (ROT && kRotated256Format<FMT>) {
    if (rotated256Piece(a) && inputsOk) {
      withTiles<CLAIM, rotated256::kDecompressDepth, uint32_t>(w, claim, [&](auto& tiles) {
        rotated256::rotated256DecompressTiles<T, FMT>(a, tiles, w.lane >> 3, w.lane & 7);
      });
      return;
    }
  }
  const int tpb = a.k.tpb, t = w.lane & (tpb - 1), gpw = 32 / tpb, giw = w.lane / tpb;
  const size_t nTiles = (a.nBlocks + gpw - 1) / gpw;
  // (a in shared memory: the staged loops take its fields into registers)
  if constexpr (CLAIM) {
    ClaimedTiles<Stage<T>::kDecompressDepth> tiles(claim);
    if constexpr (FMT == kFmtInt4) {
      if (a.vec && inputsOk && int4WholeDecode(a)) return int4WholeDecompressTiles<T, true>(a, tiles, nTiles);
    }
    if constexpr (stagedCodes(FMT, sizeof(T))) {
      if (a.vec && inputsOk) return genericDecompressTiles<T, FMT, true>(a, tiles, nTiles, gpw, giw, t);
    }
    return generalTiles<T, kAccumulate, FMT>(a, tiles, nTiles, gpw, giw, t, inputsOk, allTiles(w.warp));
  }
  if constexpr (FMT == kFmtInt4) {  // a block per lane, in any type
    if (a.vec && inputsOk && int4WholeDecode(a)) {
      StaticTiles tiles{w.warp, w.nWarps};
      int4WholeDecompressTiles<T, true>(a, tiles, nTiles);
      return;
    }
  }
  if constexpr (stagedCodes(FMT, sizeof(T))) {  // the staged pipeline copies a chunk's codes whole
    if (a.vec && inputsOk) {
      StaticTiles tiles{w.warp, w.nWarps};
      genericDecompressTiles<T, FMT, true>(a, tiles, nTiles, gpw, giw, t);
      return;
    }
  }
  generalTiles<T, kAccumulate, FMT>(a, w.warp, w.nWarps, nTiles, gpw, giw, t, inputsOk);
}

// Where the staged sum is a kernel's main loop (the fused two-shot's reduce, the one-shot's
// sum), whether it takes the piece's arguments into registers (genericSumTiles, SMEM_ARGS):
// from shared memory it reloads them, and redoes its address arithmetic, after every store
// and copy. In registers, fp8-block's reduce (bf16, P = 2) took 24 % fewer instructions and
// ~10 % less time, and the one-shot ran up to 1.24x faster (docs/results.md). Not in the
// kernels that carry the rotated256 tile functions, nor in fp32's reduce: the copy spills
// there (ptxas: 100-220 bytes), and fp32's fused two-shot measured up to 8 % slower with it.
// (fp32's one-shot spills 136 bytes with it, and is still faster: 0.72 -> 0.89 of the
// roofline at P = 8.)
template <typename T, int MODE, bool ROT>
constexpr bool kSumArgsInRegisters = !ROT && (MODE == kAccumulate || sizeof(T) == 2);

// The codec arguments of the piece a CTA works on live in shared memory: thread 0 fills
// them, every thread reads them. (A copy per thread would sit in local memory, since
// its input array is indexed at run time.)
struct PieceArgs {
  Args a;
  int inputsOk;
};

// Whether the inputs' headers match `a` and every pointer is 16-byte aligned.
__device__ __forceinline__ bool inputsMatch(const Args& a, int q) {
  return headerOk(static_cast<const uint8_t*>(a.in.ptr[q]), a);
}
__device__ __forceinline__ bool pointersAligned(const Args& a) {
  bool vec = aligned16Dev(a.x) && aligned16Dev(a.y) && aligned16Dev(a.out);
  for (int q = 0; q < a.in.n; ++q) vec = vec && aligned16Dev(a.in.ptr[q]);
  return vec;
}

// One thread sets up sp for shard j's piece in chunk `ch` (pointers by `fill`): the wire,
// vec and the input header check. The caller brackets it with __syncthreads.
template <class Fill>
__device__ __forceinline__ void fillPiece(PieceArgs& sp, const PeerLaunch& L, int j, const Chunk& ch, Fill fill) {
  sp.a = L.proto;
  setPiece(sp.a, L, j, ch);
  fill(sp.a);
  bool ok = true;
  for (int q = 0; q < sp.a.in.n; ++q) ok &= inputsMatch(sp.a, q);
  sp.a.vec = pointersAligned(sp.a);
  sp.inputsOk = ok;
}

// Every thread of the CTA calls it: thread 0 sets up sp for shard j's piece in chunk `ch`,
// and thread q checks input q's header (the P loads of a one-shot in flight together, not
// one after another). On return every thread sees sp; returns whether the headers matched.
template <class Fill>
__device__ __forceinline__ bool preparePiece(PieceArgs& sp, const PeerLaunch& L, int j, const Chunk& ch, Fill fill) {
  __syncthreads();  // every thread is done with the previous piece
  if (threadIdx.x == 0) {
    sp.a = L.proto;
    setPiece(sp.a, L, j, ch);
    fill(sp.a);
    sp.a.vec = pointersAligned(sp.a);
  }
  __syncthreads();
  const int q = (int)threadIdx.x;
  return __syncthreads_and(q >= sp.a.in.n || inputsMatch(sp.a, q)) != 0;
}

// Pieces a phase works on at once: all P - 1 peers' pieces up to P = 8.
constexpr int kPieceGroups = 7;
static_assert(kMaxPeerRanks - 1 <= kClaimPieces, "a tile counter per piece of a phase (coll/peer_plan.h)");

// Phases A and C: work(args, who) on the pieces of the P - 1 peers j = r + 1, r + 2, ...
// (mod P) in chunk `ch`, up to kPieceGroups at once, each taken by its own share of the
// rank's warps (warp w takes piece w mod G, as warp w / G of its share). A phase thus ramps
// up and drains once, not once per piece. The tile functions keep their staging per warp or
// per thread, so warps of one CTA may work on different pieces. Every thread of the CTA
// calls it; fill(args, j) sets piece j's pointers; work(args, share, i) works on piece i of the
// phase (i < P - 1: peer j = r + 1 + i).
template <class Fill, class Work>
__device__ __forceinline__ void forPeerPieces(PieceArgs* sp, const PeerLaunch& L, const Who& w, const Chunk& ch,
                                              Fill fill, Work work) {
  const int P = L.P, m = P - 1;
  const int G = (int)min((size_t)min(m, kPieceGroups), w.nWarps);
  const int g = (int)(w.warp % G);
  Who share = w;
  share.warp = w.warp / G;
  share.nWarps = (w.nWarps - g + G - 1) / G;
  for (int t = 0; t < m; t += G) {
    __syncthreads();  // every thread is done with the previous round's pieces
    if ((int)threadIdx.x < G && t + (int)threadIdx.x < m) {
      const int j = (w.rank + 1 + t + (int)threadIdx.x) % P;
      if (!pieceEmpty(L, j, ch)) fillPiece(sp[threadIdx.x], L, j, ch, [&](Args& a) { fill(a, j); });
      else sp[threadIdx.x].a.count = 0;  // an empty piece: its slot holds no wire to check
    }
    __syncthreads();
    if (t + g < m && sp[g].a.count > 0) work(sp[g], share, t + g);
  }
}

// Launches and registers. The rotated codecs' tile loops just fit the 128 registers of two
// CTAs per SM, and ptxas spills where a kernel holds more than one of them: a loop over a
// call's chunks in one launch spilled 8 KB of code (`taco` 1.6-1.9x slower), the fused
// two-shot's three phases in one kernel ~1 KB (1.1-1.35x slower than a launch per phase;
// docs/results.md). So a launch runs one chunk, and the fused two-shot a launch per phase,
// each kernel spill-free: a phase waits for the previous one of every rank through the
// flags, as within one launch, and the kernel boundary is the drain the phase had anyway.
//
// Early launch (programmatic dependent launch, where coll/allreduce_peer.cu asks for it):
// a phase lets the next kernel in the stream launch before it ends, so the next phase's
// CTAs take the SM slots the moment this phase's CTAs leave them, instead of after the
// kernel's end, the launch and the ramp. B and C let it launch at their start; A only once
// each CTA's work is done: B's CTAs, waiting on their flags in the slots of A's first CTAs to
// finish, made A's last ones slower (measured, docs/results.md). C lets the next chunk's A
// launch, and that A does its work at once in the slots C's CTAs leave, rather than after C's
// end. What orders the phases is what ordered them within one launch, the flags, and:
//  - Every phase waits for its predecessor before it ends (A before it lets B launch), so a
//    phase's end implies the ends of those before it, and the work after the call in the
//    stream (which waits for C's end) runs after all of them, as without early launch.
//  - So A of chunk k >= 1 starts after C of chunk k - 2 ended: its B launched only once A of
//    k - 1 had waited for that C. Every kernel of the call reads the epoch word as E0: only the
//    call's last C changes it, after its own B has ended (coll/peer_launch.h). A of a call's
//    first chunk waits for the kernel before it at its start (the previous call's last C may
//    still run).
//  - What A of chunk k >= 2 writes is free: it writes half k mod 2 of the peers' slots, whose
//    last reader was B of chunk k - 2 on that peer, done before our C of k - 2 (which waited for
//    it) ended. A of chunk 1 writes the half of epoch E0 - 1, the previous call's last chunk,
//    which may have been a one-shot that every rank reads: it waits for every peer's flag 0 of
//    chunk 0, raised after that peer's previous call ended. A reads chunk k of sendbuff, which no
//    C or B of an earlier chunk writes (in place, their chunks' elements are others). The
//    reduced pieces that C of k - 1 still reads are in the other half.
// The early CTAs of a phase wait on its flags in SM slots the previous phase no longer
// uses, so nothing else may need those slots to make progress: early launch is only
// asked for where this launch's ranks are all the ranks on the GPU.
//
// Interleaved (TACO_PEER_EARLY_LAUNCH=2, L.interleave): the stream holds A0 B0, then per chunk
// k >= 1 A(k) C(k-1) B(k), then C(n-1), so that the last CTAs of each phase have another
// chunk's work beside them: C(k-1), whose flags are up, beside A(k)'s, and A(k+1) beside B(k)'s.
// A(k >= 1) lets C(k-1) launch at its start. What changes in the argument above:
//  - A(k) may run beside A(k-1) and C(k-2) has not been seen to end: A(k >= 2) waits for every
//    peer's flag 1 of k - 2 (their B(k-2), the last readers of its half, ended), and A(k >= 1)
//    and B arrive only after their predecessor's end, so that a rank's flags still come in chunk
//    order (a reader compares them, so a flag must never be written ahead of an earlier one).
//  - B(k) writes half k mod 2 of our slot r, which the peers' C(k-2) read: a peer's A(k)
//    arrives after its B(k-1), and so its C(k-2), ended; B(k) waits for that arrival anyway.
//  - Every kernel still waits for its predecessor before it ends, so the call's last kernel,
//    C(n-1), ends after all of them, and only it changes the epoch word.
// tests/host/test_peer_protocol.cc checks the three launch modes (after the previous kernel, early,
// interleaved), and that each of these steps is needed.

// The kernels that also come in the claimed order (peerFusedKernel), as measured (docs/results.md,
// "Tiles claimed"): the byte codes' in any type, and with ROT the rotated256 layout's compress and
// decompress in fp32 (its sum keeps the static order). The 16-bit rotated256 compress is bound by
// instruction issue, and claims measured 0-3 % slower there; INT4's reduce spills with them, and
// measured slower.
template <typename T, int FMT, bool ROT>
constexpr bool kClaimFormat =
    ROT ? sizeof(T) == 4 && kRotated256Format<FMT> : FMT == kFmtE4M3 || FMT == kFmtE5M2 || FMT == kFmtInt8;

// Phase PH (kFused*: A, B, C above) of the launch's chunk of the fused two-shot; CLAIM: in the
// claimed order (peerFusedKernel).
template <typename T, int FMT, bool ROT, int PH, bool CLAIM>
__device__ __forceinline__ void fusedPhase(PieceArgs* sp, const PeerLaunch& L, const Who& w, const RankEpoch& e) {
  const Chunk ch = chunkOf(L, e);
  const int r = w.rank, P = L.P;
  const char* send = static_cast<const char*>(L.send[w.group]);
  char* recv = static_cast<char*>(L.recv[w.group]);
  constexpr size_t eb = sizeof(T);
  constexpr bool C = CLAIM;
  // The counter of the phase's piece i (CLAIM), and the phase's counters, reset at its end.
  auto claim = [&](int i) { return C ? peer::controlWord(e.mine, claimLine(ch.parity, PH, i)) : nullptr; };
  const size_t claims = C ? claimLine(ch.parity, PH, 0) : 0;
  // (the rotated256 sum keeps the static order: its loops have no registers to spare)
  const int nClaims = C ? (PH == kFusedReduce ? (ROT ? 0 : 1) : P - 1) : 0;
  if constexpr (PH == kFusedScatter) {
    // Chunk 1's scatter starts before chunk 0's gather has ended (early launch, above), into the
    // half of the epoch before the call's, whose last readers may be a slower rank's one-shot of
    // the previous call: it waits until every peer has arrived in chunk 0, past that call.
    if (ch.c == 1 && !peer::ctaWaitRanks(e.mine, 0, P, r, ch.flag - 1, e.guard)) return;
    // Interleaved, A of chunk k >= 2 may start before our gather of k - 2 has seen the peers' reduces
    // of k - 2 end, the last readers of the half it writes: it waits for their flag 1 itself.
    if (L.interleave && ch.c >= 2 && !peer::ctaWaitRanks(e.mine, 1, P, r, ch.flag - 2, e.guard)) return;
    forPeerPieces(  // A. compress the peers' pieces into their scratch
        sp, L, w, ch,
        [&](Args& a, int j) {
          a.x = send + pieceOff(L, j, ch) * eb;
          a.out = reinterpret_cast<uint8_t*>(slotOf(L, j, ch.parity, r));
        },
        [&](PieceArgs& p, const Who& share, int i) { compressPiece<T, FMT, ROT, C>(p.a, share, claim(i)); });
    peer::markPhaseEnd(L, kTimelineEndA);
    // Interleaved, A of chunk k - 1 may still run: flags only grow, so its flags must come first
    // (the previous kernel's end implies A(k - 1)'s).
    if (L.interleave && ch.c >= 1) peer::gridDependencyWait();
    peer::ctaArrive(L.base, P, r, r, 0, w.ctas, ch.flag, L.oneGpu != 0,
                    ch.parity != 0 ? kCtlArriveScatterOdd : kCtlArrive, claims, nClaims);
  } else if constexpr (PH == kFusedReduce) {
    if (!peer::ctaWaitRanks(e.mine, 0, P, r, ch.flag, e.guard)) return;
    peer::mark(L, kTimelineWait0);
    if (!pieceEmpty(L, r, ch)) {  // B. reduce our piece
      const bool ok = preparePiece(sp[0], L, r, ch, [&](Args& a) {
        for (int j = 0; j < P; ++j)
          if (j != r) a.in.ptr[a.in.n++] = slotOf(L, r, ch.parity, j);
        a.x = send + pieceOff(L, r, ch) * eb;
        a.y = recv + pieceOff(L, r, ch) * eb;
        a.out = reinterpret_cast<uint8_t*>(slotOf(L, r, ch.parity, r));
      });
      sumPiece<T, kReduceCompress, FMT, ROT, kSumArgsInRegisters<T, kReduceCompress, ROT>, C && !ROT>(sp[0].a, w, ok,
                                                                                                     claim(0));
    }
    peer::markPhaseEnd(L, kTimelineEndB);
    // Interleaved, the gather of chunk k - 1 is the kernel before this one: flag 1 then also says
    // it has ended (its reads of the peers' reduced pieces, which their reduce of k + 1 overwrites),
    // and comes after the reduce of k - 1's.
    if (L.interleave) peer::gridDependencyWait();
    peer::ctaArrive(L.base, P, r, r, 1, w.ctas, ch.flag, L.oneGpu != 0, kCtlArrive + 1, claims, nClaims);
  } else {
    static_assert(PH == kFusedGather, "a fused kernel runs one phase");
    if (!peer::ctaWaitRanks(e.mine, 1, P, r, ch.flag, e.guard)) return;
    peer::mark(L, kTimelineWait1);
    forPeerPieces(  // C. decode the peers' reduced pieces
        sp, L, w, ch,
        [&](Args& a, int j) {
          a.in.ptr[a.in.n++] = slotOf(L, j, ch.parity, j);
          a.y = recv + pieceOff(L, j, ch) * eb;
        },
        [&](PieceArgs& p, const Who& share, int i) { decodePiece<T, FMT, ROT, C>(p.a, share, p.inputsOk, claim(i)); });
  }
}

// ROT: the codec is rotated with B = 256, and the kernel carries the rotated256 layout's
// tile functions too (a kernel of its own: they need more registers than the generic path).
// CLAIM (kClaimFormat): the claimed order (codec/device/tile_queue.cuh). The warps of a
// piece take its tiles one at a time from a counter in the rank's scratch (coll/peer_plan.h,
// claimLine) instead of warp, warp + nWarps, ..., so that the CTAs of a phase end together however
// their speeds differ; the host asks for it where it measured faster (coll/allreduce_peer.cu).
// With ROT the reduce keeps the static order.
// A waiting phase that gives up (abort, timeout) returns early; the next ones see the rank's
// failed word and give up too, and the last phase still writes the epoch word (E0 again, or
// E0 + nChunks after the call's last chunk).
template <typename T, int FMT, bool ROT, int PH, bool CLAIM = false>
__global__ void __launch_bounds__(kThreads, 2) peerFusedKernel(const PeerLaunch L) {
  static_assert(!CLAIM || kClaimFormat<T, FMT, ROT>, "a format without the claimed order");
  // A of a call's first chunk waits for the kernel before it (the previous call's C, or other
  // work); A of a later chunk starts at once, beside the previous chunk's C (see above; A of
  // chunk 1 waits for the peers' A of chunk 0 before it stores).
  if (PH == kFusedScatter) {
    if (L.chunk == 0) peer::gridDependencyWait();
  } else {
    peer::launchDependents();
  }
  __shared__ PieceArgs sp[kPieceGroups];  // the codec arguments of the pieces the CTA works on
  const Who w = who(L);
  const bool runs = w.rank != L.skipRank;  // fault injection: a skipped rank never arrives
  // Interleaved, A of chunk k >= 1 lets the next kernel (the gather of chunk k - 1, whose flags
  // are up or soon will be) launch at its start, into the SM slots A's first CTAs leave.
  const bool scatterFirst = PH == kFusedScatter && L.interleave && L.chunk >= 1;
  RankEpoch e{};
  if (runs) {
    e = rankEpoch(L, w.rank);
    if (scatterFirst) peer::launchDependents();
    if (PH == kFusedScatter) peer::markStart(L, w.rank);
    fusedPhase<T, FMT, ROT, PH, CLAIM>(sp, L, w, e);
  }
  // Every phase waits for its predecessor before it ends (A only then lets B launch, once its
  // work is done), so that a phase's end implies the ends of those before it.
  peer::gridDependencyWait();
  if (PH == kFusedScatter && !(scatterFirst && runs)) peer::launchDependents();
  // The gather ends the chunk's epoch only now, once the reduce has ended: C does not wait for
  // its own rank's B (only for the peers'), and a CTA of B may read the epoch word after it let
  // C launch, so an earlier write could reach it first (tests/host/test_peer_protocol.cc found
  // that schedule). The gather's tile counters go back to 0 with the epoch.
  if (PH == kFusedGather && runs) {
    peer::ctaFinish(e.mine, w.ctas, peerNextEpoch(e.epoch, L.chunk, L.nChunks),
                    CLAIM ? claimLine(chunkOf(L, e).parity, kFusedGather, 0) : 0, CLAIM ? L.P - 1 : 0);
    peer::mark(L, kTimelineEnd);
  }
}

// The one-shot, both phases of the launch's chunk in one launch (small messages want one).
template <typename T, int FMT, bool ROT>
__global__ void __launch_bounds__(kThreads, 2) peerOneShotKernel(const PeerLaunch L) {
  const Who w = who(L);
  const int r = w.rank, P = L.P;
  if (r == L.skipRank) return;  // fault injection: this rank never arrives
  const RankEpoch e = rankEpoch(L, r);
  const Chunk ch = chunkOf(L, e);
  peer::markStart(L, r);
  __shared__ PieceArgs sp[1];
  const size_t off = pieceOff(L, 0, ch) * sizeof(T);
  (void)preparePiece(sp[0], L, 0, ch, [&](Args& a) {
    a.x = static_cast<const char*>(L.send[w.group]) + off;
    a.out = reinterpret_cast<uint8_t*>(slotOf(L, r, ch.parity, 0));
  });
  compressPiece<T, FMT, ROT>(sp[0].a, w);
  peer::markPhaseEnd(L, kTimelineEndA);
  peer::ctaArrive(L.base, P, -1, r, 0, w.ctas, ch.flag, L.oneGpu != 0, kCtlArrive);
  if (peer::ctaWaitRanks(e.mine, 0, P, -1, ch.flag, e.guard)) {
    peer::mark(L, kTimelineWait0);
    const bool ok = preparePiece(sp[0], L, 0, ch, [&](Args& a) {
      for (int q = 0; q < P; ++q) a.in.ptr[a.in.n++] = slotOf(L, q, ch.parity, 0);
      a.y = static_cast<char*>(L.recv[w.group]) + off;
    });
    sumPiece<T, kAccumulate, FMT, ROT, kSumArgsInRegisters<T, kAccumulate, ROT>>(sp[0].a, w, ok);
  }
  peer::ctaFinish(e.mine, w.ctas, peerNextEpoch(e.epoch, L.chunk, L.nChunks));
  peer::mark(L, kTimelineEnd);
}

// Raw one-shot: codec none's element path (a copy with a header, then the fp32 sum in rank order).
template <typename T>
__global__ void __launch_bounds__(kThreads, 1) peerRawKernel(const PeerLaunch L) {
  const Who w = who(L);
  const int r = w.rank, P = L.P;
  if (r == L.skipRank) return;  // fault injection: this rank never arrives
  const RankEpoch e = rankEpoch(L, r);
  const Chunk ch = chunkOf(L, e);
  peer::markStart(L, r);
  const size_t tid = (size_t)w.cta * blockDim.x + threadIdx.x, nThreads = (size_t)w.ctas * blockDim.x;
  const size_t off = pieceOff(L, 0, ch) * sizeof(T);
  Args a = L.proto;
  setPiece(a, L, 0, ch);
  a.x = static_cast<const char*>(L.send[w.group]) + off;
  a.out = reinterpret_cast<uint8_t*>(slotOf(L, r, ch.parity, 0));
  a.vec = aligned16Dev(a.x);
  elementTiles<T, T, kCompress>(a, tid, nThreads);
  peer::markPhaseEnd(L, kTimelineEndA);
  peer::ctaArrive(L.base, P, -1, r, 0, w.ctas, ch.flag, L.oneGpu != 0, kCtlArrive);
  if (peer::ctaWaitRanks(e.mine, 0, P, -1, ch.flag, e.guard)) {
    peer::mark(L, kTimelineWait0);
    setPiece(a, L, 0, ch);
    for (int q = 0; q < P; ++q) a.in.ptr[a.in.n++] = slotOf(L, q, ch.parity, 0);
    a.y = static_cast<char*>(L.recv[w.group]) + off;
    a.vec = aligned16Dev(a.y);
    elementTiles<T, T, kAccumulate>(a, tid, nThreads);
  }
  peer::ctaFinish(e.mine, w.ctas, peerNextEpoch(e.epoch, L.chunk, L.nChunks));
  peer::mark(L, kTimelineEnd);
}

}  // namespace peer

// Instantiated per element type and code format (kFmtRaw: the raw one-shot) in the translation
// units that CMakeLists.txt makes of coll/peer_kernels.cu.in. `claim`: the fused two-shot in the
// claimed order, where the format has it (kClaimFormat; else the static order).
template <typename T, int FMT>
PeerKernel peerKernelFor(int algo, bool rot, int phase, bool claim) {
  using namespace peer;
  if constexpr (FMT == kFmtRaw) {
    return algo == tacoAlgoOneShotRaw ? peerRawKernel<T> : nullptr;
  } else {
    auto pick = [&](auto r) -> PeerKernel {
      constexpr bool R = decltype(r)::value;
      if (algo == tacoAlgoOneShot) return peerOneShotKernel<T, FMT, R>;
      if (algo != tacoAlgoFused) return nullptr;
      if constexpr (kClaimFormat<T, FMT, R>) {
        if (claim) {
          switch (phase) {
            case kFusedScatter: return peerFusedKernel<T, FMT, R, kFusedScatter, true>;
            case kFusedReduce:  // (the rotated256 sum: the static order)
              if constexpr (R) return peerFusedKernel<T, FMT, R, kFusedReduce>;
              else return peerFusedKernel<T, FMT, R, kFusedReduce, true>;
            case kFusedGather: return peerFusedKernel<T, FMT, R, kFusedGather, true>;
            default: return nullptr;
          }
        }
      }
      switch (phase) {
        case kFusedScatter: return peerFusedKernel<T, FMT, R, kFusedScatter>;
        case kFusedReduce: return peerFusedKernel<T, FMT, R, kFusedReduce>;
        case kFusedGather: return peerFusedKernel<T, FMT, R, kFusedGather>;
        default: return nullptr;
      }
    };
    if constexpr (kRotated256Format<FMT>) {
      if (rot) return pick(std::true_type{});
    }
    return pick(std::false_type{});
  }
}

}  // namespace taco
