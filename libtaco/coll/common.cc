#include "coll/coll.h"
#include "core/check.h"
#include "core/dtype.h"

namespace taco {

size_t wireBytes(const tacoComm* c, size_t n, tacoDataType_t dtype) {
  return n == 0 ? 0 : wireLayout(c->codec, n, dtype).totalBytes;
}

bool usePlain(const tacoComm* c, size_t bytes) { return !c->compressed || bytes < c->config.fallbackBytes; }

size_t chunkPieceElems(const tacoComm* c, tacoDataType_t dtype) {
  return pieceElems(c->config.chunkBytes, c->nranks, dtypeBytes(dtype), planGranule(c->codec));
}

const char* elemPtr(const void* base, size_t elem, tacoDataType_t dtype) {
  return static_cast<const char*>(base) + elem * dtypeBytes(dtype);
}
char* elemPtr(void* base, size_t elem, tacoDataType_t dtype) { return static_cast<char*>(base) + elem * dtypeBytes(dtype); }

Step stepFork(cudaStream_t user) {
  Step s;
  s.kind = kStepFork;
  s.user = user;
  return s;
}
Step stepJoin(cudaStream_t user) {
  Step s;
  s.kind = kStepJoin;
  s.user = user;
  return s;
}
Step stepCompress(int stream, const void* in, size_t count, tacoDataType_t dt, void* out) {
  Step s;
  s.kind = kStepCompress;
  s.stream = stream;
  s.in = in;
  s.count = count;
  s.dtype = dt;
  s.out = out;
  return s;
}
Step stepDecompress(int stream, const void* in, void* y, size_t count, tacoDataType_t dt) {
  Step s;
  s.kind = kStepDecompress;
  s.stream = stream;
  s.in = in;
  s.y = y;
  s.count = count;
  s.dtype = dt;
  return s;
}
Step stepSumOfPeers(StepKind kind, tacoComm* c, int slot, const void* exact, void* out, void* y, size_t count,
                    tacoDataType_t dt) {
  Step s;
  s.kind = kind;
  s.stream = slot;
  s.inputs.n = 0;
  for (int j = 0; j < c->nranks; ++j)
    if (j != c->rank) s.inputs.ptr[s.inputs.n++] = incomingPiece(c, slot, j);
  s.exact = exact;
  s.out = out;
  s.y = y;
  s.count = count;
  s.dtype = dt;
  return s;
}
Step stepPlain(PlainKind k, cudaStream_t user, const void* in, void* y, size_t count, tacoDataType_t dt) {
  Step s;
  s.kind = kStepPlain;
  s.plain = k;
  s.user = user;
  s.in = in;
  s.y = y;
  s.count = count;
  s.dtype = dt;
  return s;
}

}  // namespace taco
