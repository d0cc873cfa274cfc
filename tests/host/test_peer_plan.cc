// The peer-memory AllReduce's scratch size and launch plan (libtaco/coll/peer_plan.h):
// a slot holds the wire of the staged plan's piece of 16-bit data for every blocked
// codec and rank count, so a two-shot call takes no more launches than the staged path
// has chunks (no short remainder launch for a scale's few bytes); every launch's
// pieces fit their slots; the chunks cover each shard without overlap; the launch's
// chunk geometry (coll/peer_launch.h: what the kernels compute each piece from) gives
// every piece of the plan, with its wire. The plan is internal (hidden symbols), so its
// sources are compiled in here.
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "../../libtaco/codec/registry.cc"
#include "../../libtaco/coll/peer_plan.cc"
#include "../../libtaco/coll/plan.cc"
#include "../../libtaco/core/check.cc"
#include "../../libtaco/core/log.cc"
#include "../../libtaco/core/params.cc"
#include "check.h"

namespace {

using namespace taco;

tacoCodec_t parse(const char* spec) {
  tacoCodec_t c{};
  if (codecParse(spec, &c, "test", "codec") != tacoSuccess) {
    std::printf("cannot parse %s\n", spec);
    std::exit(1);
  }
  return c;
}

bool sameWire(const dev::PieceWire& a, const dev::PieceWire& b) {
  return a.count == b.count && a.nBlocks == b.nBlocks && a.scalesOffset == b.scalesOffset &&
         a.codesEnd == b.codesEnd && a.scalesEnd == b.scalesEnd && a.totalBytes == b.totalBytes;
}

// What a launch's geometry gives each piece is the plan's piece, with the wire of its length.
void checkGeometry(tacoCodec_t codec, int algo, int P, size_t scratch, size_t count, tacoDataType_t dtype,
                   const char* spec) {
  const PeerPlan p = peerPlan(algo, codec, count, dtype, P, scratch);
  PeerLaunch L{};
  L.P = P;
  const size_t largest = peerLaunchGeometry(L, p, count, dtype);
  const int shards = algo == tacoAlgoFused ? P : 1;
  bool same = true;
  size_t most = 0;
  for (int j = 0; j < shards; ++j)
    for (size_t c = 0; c < p.nChunks; ++c) {
      const Range want = algo == tacoAlgoFused ? peerPiece(p, j, c) : peerChunk(p, count, c);
      const size_t len = peerPieceLen(L, j, (int)c);
      const int kind = peerPieceWireOf(L, j, (int)c);
      const dev::PieceWire& w = kind == kPieceFull ? L.full : kind == kPieceTail ? L.tail[j] : dev::PieceWire{};
      same = same && len == want.len && (len == 0 || peerPieceOff(L, j, (int)c) == want.off) &&
             sameWire(w, peerPieceWire(codec, want.len, dtype));
      most = want.len > most ? want.len : most;
    }
  TEST_ASSERT_MSG(same, "%s %s P %d count %zu: the launch geometry disagrees with the plan", spec, algoName(algo), P,
                  count);
  TEST_ASSERT_MSG(largest == most, "%s %s P %d count %zu: largest piece %zu, the plan's %zu", spec, algoName(algo),
                  P, count, largest, most);
}

void checkCase(const char* spec, int P, size_t chunkBytes, size_t count, tacoDataType_t dtype) {
  const tacoCodec_t codec = parse(spec);
  const size_t scratch = peerScratchBytes(chunkBytes, P, codec);
  const size_t slot = peerSlotBytes(scratch, P);
  const PeerPlan p = peerPlan(tacoAlgoFused, codec, count, dtype, P, scratch);
  const size_t eb = dtype == tacoFloat32 ? 4 : 2;
  // No more launches than the staged plan has chunks (fewer where the wire is under a
  // byte per element or the minimum slot is larger).
  const size_t staged = chunkCount(p.shard[0].len, pieceElems(chunkBytes, P, eb, planGranule(codec)));
  TEST_ASSERT_MSG(p.nChunks <= staged, "%s P %d chunk %zu count %zu eb %zu: %zu launches, staged %zu chunks", spec, P,
                  chunkBytes, count, eb, p.nChunks, staged);
  // Every piece fits its slot; the pieces cover each shard once.
  bool fits = true, covers = true;
  for (int j = 0; j < P; ++j) {
    size_t next = p.shard[j].off;
    for (size_t c = 0; c < p.nChunks; ++c) {
      const Range pc = peerPiece(p, j, c);
      if (pc.len == 0) continue;
      if (wireLayout(codec, pc.len, dtype).totalBytes > slot) fits = false;
      if (pc.off != next) covers = false;
      next = pc.off + pc.len;
    }
    if (next != p.shard[j].off + p.shard[j].len) covers = false;
  }
  TEST_ASSERT_MSG(fits, "%s P %d chunk %zu count %zu: a piece overflows its slot (%zu bytes)", spec, P, chunkBytes,
                  count, slot);
  TEST_ASSERT_MSG(covers, "%s P %d chunk %zu count %zu: the pieces do not cover the shards", spec, P, chunkBytes,
                  count);
  for (int algo : {tacoAlgoFused, tacoAlgoOneShot}) checkGeometry(codec, algo, P, scratch, count, dtype, spec);
}

// The epochs of consecutive calls of n1, n2, ... chunks (coll/peer_launch.h): every kernel of a
// call reads the word as the call's E0 (only the call's last kernel changes it; a chunk's gather
// before that stores E0 again), chunk k runs E0 + k, no epoch is skipped from one call to the
// next (so the halves alternate across calls as within one, whatever the calls' chunk counts),
// and the flags (epoch + 1) only grow, across the wrap of the 32-bit word too.
void checkEpochs(uint32_t word, std::initializer_list<int> calls) {
  uint32_t lastFlag = word;  // flags start below every epoch + 1
  uint32_t expected = word;  // the next chunk's epoch: one after the last
  for (int n : calls) {
    const uint32_t e0 = word;
    TEST_ASSERT(e0 == expected);
    for (int k = 0; k < n; ++k) {
      const uint32_t exact = peerChunkEpoch(word, k);  // every kernel of chunk k
      TEST_ASSERT(exact == e0 + (uint32_t)k);
      TEST_ASSERT(exact == expected);                  // no epoch skipped: the halves alternate
      TEST_ASSERT((int32_t)(exact + 1u - lastFlag) > 0);  // flags only grow
      lastFlag = exact + 1u;
      expected = exact + 1u;
      word = peerNextEpoch(exact, k, n);  // the gather's (or the one-shot's) last CTA
      TEST_ASSERT(word == (k == n - 1 ? e0 + (uint32_t)n : e0));
    }
  }
}

}  // namespace

int main() {
  checkEpochs(0, {1, 1, 4, 3, 2, 5, 7, 1});
  checkEpochs(0xfffffff8u, {3, 1, 4, 5, 2});
  // Every blocked codec of the registry at its default block size, and two other block sizes.
  std::vector<const char*> codecs;
  for (int id = 0; id < tacoNumCodecs; ++id)
    if (codecById(id)->blocked) codecs.push_back(codecById(id)->name);
  codecs.push_back("fp8-block:block=32");
  codecs.push_back("int8-hadamard:block=1024");
  const int ranks[] = {2, 3, 4, 8, 16};
  const size_t chunks[] = {(size_t)1 << 20, (size_t)4 << 20, (size_t)64 << 20, (size_t)256 << 20};
  for (const char* spec : codecs)
    for (int P : ranks)
      for (size_t ch : chunks)
        for (size_t count : {(size_t)1, (size_t)1000003, (size_t)128 << 20, ((size_t)1 << 27) + 5})
          for (tacoDataType_t dt : {tacoBfloat16, tacoFloat32}) checkCase(spec, P, ch, count, dt);

  // By hand: 256 MiB of bf16 per rank at P = 4, fp8-block, the default 64 MiB chunk: four
  // launches of 8 Mi elements per piece (a slot of 8 MiB held 8,259,328: five launches).
  const tacoCodec_t fp8 = parse("fp8-block");
  const size_t scratch = peerScratchBytes((size_t)64 << 20, 4, fp8);
  const PeerPlan p = peerPlan(tacoAlgoFused, fp8, (size_t)128 << 20, tacoBfloat16, 4, scratch);
  TEST_ASSERT_EQ_SIZE(p.nChunks, 4);
  TEST_ASSERT_EQ_SIZE(peerPiece(p, 0, 0).len, (size_t)8 << 20);
  // Codec none (raw one-shot only): the scratch stays two halves of chunkBytes / 2.
  TEST_ASSERT_EQ_SIZE(peerScratchBytes((size_t)64 << 20, 4, parse("none")),
                      kDataOffset + ((size_t)64 << 20) + kTailBytes);
  return TEST_REPORT();
}
