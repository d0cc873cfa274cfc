// NCCL transport: the production path. libnccl is opened at run time so that
// libtaco loads (and its codecs work) on machines without NCCL, and shares the
// copy a framework already loaded. Search order:
//   1. a libnccl.so.2 already loaded in the process (e.g. by PyTorch): RTLD_NOLOAD
//   2. TACO_NCCL_LIBRARY (taco::envParams().ncclLibrary)
//   3. libnccl.so.2, then libnccl.so, through the dynamic linker's search path
// Only the few NCCL types used here are declared (ABI-stable since NCCL 2.0),
// so the build needs no nccl.h.
#include <dlfcn.h>

#include <cstring>
#include <cstdio>
#include <mutex>
#include <new>

#include "core/check.h"
#include "core/dtype.h"
#include "core/params.h"
#include "transport/nccl_symmetric.h"
#include "transport/transport.h"

namespace taco {
namespace {

// ---- the NCCL ABI subset we use
typedef struct ncclComm* ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
typedef int ncclResult_t;  // ncclSuccess = 0, ncclInProgress = 7
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
constexpr ncclDataType_t kNcclUint8 = 1, kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclBfloat16 = 9;
constexpr ncclRedOp_t kNcclSum = 0;
static_assert(sizeof(ncclUniqueId) == TACO_UNIQUE_ID_BYTES, "tacoUniqueId must hold an ncclUniqueId");

struct NcclApi {
  void* handle = nullptr;
  char path[512] = "";
  int version = 0;
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*commAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t) = nullptr;
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  const char* (*getErrorString)(ncclResult_t) = nullptr;
  const char* (*getLastError)(ncclComm_t) = nullptr;
  ncclResult_t (*commCount)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*commUserRank)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*getVersion)(int*) = nullptr;
};

NcclApi gNccl;
NcclSymmetricApi gNcclSymmetric;  // optional: NCCL >= 2.28 (peer_memory_nccl.cc)
std::mutex gNcclMu;
tacoResult_t gNcclStatus = tacoInternalError;  // tacoInternalError: not tried yet
char gNcclError[768] = "";

template <typename F>
bool resolve(void* h, const char* sym, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(h, sym));
  return *fn != nullptr;
}

// The symmetric-memory functions (NCCL >= 2.28), optional: their absence closes one
// peer-memory route only (peer_memory_nccl.cc).
void resolveSymmetric(const NcclApi& a) {
  NcclSymmetricApi& sym = gNcclSymmetric;
#define TACO_NCCL_SYM_OPT(field, name) \
  if (!resolve(a.handle, name, &sym.field) && sym.missing == nullptr) sym.missing = name;
  TACO_NCCL_SYM_OPT(memAlloc, "ncclMemAlloc")
  TACO_NCCL_SYM_OPT(memFree, "ncclMemFree")
  TACO_NCCL_SYM_OPT(windowRegister, "ncclCommWindowRegister")
  TACO_NCCL_SYM_OPT(windowDeregister, "ncclCommWindowDeregister")
  TACO_NCCL_SYM_OPT(devCommCreate, "ncclDevCommCreate")
  TACO_NCCL_SYM_OPT(devCommDestroy, "ncclDevCommDestroy")
#undef TACO_NCCL_SYM_OPT
  sym.version = a.version;
  sym.path = a.path;
  sym.errorString = a.getErrorString;
  sym.lastError = reinterpret_cast<const char* (*)(void*)>(a.getLastError);
}

tacoResult_t loadLocked() {
  void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  const char* how = "already loaded";
  const char* tried = "libnccl.so.2 (loaded)";
  char errs[512] = "";
  if (h == nullptr) {
    const char* env = envParams().ncclLibrary;
    const char* candidates[] = {env, "libnccl.so.2", "libnccl.so"};
    for (const char* c : candidates) {
      if (c == nullptr || *c == '\0') continue;
      h = dlopen(c, RTLD_NOW | RTLD_LOCAL);
      if (h != nullptr) {
        how = "dlopen";
        tried = c;
        break;
      }
      const char* e = dlerror();
      size_t len = strlen(errs);
      snprintf(errs + len, sizeof(errs) - len, "%s%s", len ? "; " : "", e ? e : c);
    }
  }
  if (h == nullptr) {
    snprintf(gNcclError, sizeof(gNcclError),
             "NCCL is not available: no libnccl.so.2 is loaded and dlopen failed (%s). Install NCCL or set "
             "TACO_NCCL_LIBRARY to its path; the codecs and the loopback transport work without it",
             errs);
    return tacoNcclError;
  }
  NcclApi& a = gNccl;
  a.handle = h;
  const char* missing = nullptr;
#define TACO_NCCL_SYM(field, sym) \
  if (!resolve(h, sym, &a.field) && missing == nullptr) missing = sym;
  TACO_NCCL_SYM(getUniqueId, "ncclGetUniqueId")
  TACO_NCCL_SYM(commInitRank, "ncclCommInitRank")
  TACO_NCCL_SYM(commDestroy, "ncclCommDestroy")
  TACO_NCCL_SYM(commAbort, "ncclCommAbort")
  TACO_NCCL_SYM(groupStart, "ncclGroupStart")
  TACO_NCCL_SYM(groupEnd, "ncclGroupEnd")
  TACO_NCCL_SYM(send, "ncclSend")
  TACO_NCCL_SYM(recv, "ncclRecv")
  TACO_NCCL_SYM(allReduce, "ncclAllReduce")
  TACO_NCCL_SYM(reduceScatter, "ncclReduceScatter")
  TACO_NCCL_SYM(allGather, "ncclAllGather")
  TACO_NCCL_SYM(getErrorString, "ncclGetErrorString")
  TACO_NCCL_SYM(commCount, "ncclCommCount")
  TACO_NCCL_SYM(commUserRank, "ncclCommUserRank")
  TACO_NCCL_SYM(getVersion, "ncclGetVersion")
#undef TACO_NCCL_SYM
  // Optional (newer NCCL).
  resolve(h, "ncclGetLastError", &a.getLastError);
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(a.getUniqueId), &info) && info.dli_fname)
    snprintf(a.path, sizeof(a.path), "%s", info.dli_fname);
  else
    snprintf(a.path, sizeof(a.path), "%s", tried);
  if (missing != nullptr) {
    snprintf(gNcclError, sizeof(gNcclError), "NCCL library %s lacks %s (NCCL >= 2.7 is required)", a.path,
             missing);
    return tacoNcclError;
  }
  a.getVersion(&a.version);
  if (a.version < 2700) {
    snprintf(gNcclError, sizeof(gNcclError), "NCCL %d at %s is too old: libtaco needs >= 2.7 (send/recv)",
             a.version, a.path);
    return tacoNcclError;
  }
  resolveSymmetric(a);
  TACO_INFO("NCCL %d from %s (%s)", a.version, a.path, how);
  return tacoSuccess;
}

tacoResult_t ncclLoad() {
  std::lock_guard<std::mutex> lock(gNcclMu);
  if (gNcclStatus == tacoInternalError) gNcclStatus = loadLocked();
  if (gNcclStatus != tacoSuccess) return setError(gNcclStatus, "%s", gNcclError);
  return tacoSuccess;
}

tacoResult_t ncclErr(ncclResult_t r, ncclComm_t comm, const char* what) {
  const char* detail = (comm && gNccl.getLastError) ? gNccl.getLastError(comm) : "";
  return setError(tacoNcclError, "%s failed: NCCL error %d '%s'%s%s", what, (int)r,
                  gNccl.getErrorString ? gNccl.getErrorString(r) : "?", detail && *detail ? ": " : "",
                  detail ? detail : "");
}

#define NCCL_CALL(comm, call)                                               \
  do {                                                                      \
    ncclResult_t nr_ = (call);                                              \
    if (nr_ != 0 && nr_ != 7) return ncclErr(nr_, (comm), #call);           \
  } while (0)

ncclDataType_t ncclType(tacoDataType_t t) {
  switch (t) {
    case tacoFloat32: return kNcclFloat32;
    case tacoFloat16: return kNcclFloat16;
    case tacoBfloat16: return kNcclBfloat16;
    default: return kNcclUint8;
  }
}

class NcclTransport : public Transport {
 public:
  NcclTransport(ncclComm_t c, bool owned, int n, int r) : comm_(c), owned_(owned), n_(n), r_(r) {}
  const char* name() const override { return "nccl"; }
  int nranks() const override { return n_; }
  int rank() const override { return r_; }
  tacoResult_t groupStart() override {
    NCCL_CALL(comm_, gNccl.groupStart());
    return tacoSuccess;
  }
  tacoResult_t groupEnd() override {
    NCCL_CALL(comm_, gNccl.groupEnd());
    return tacoSuccess;
  }
  tacoResult_t send(const void* buf, size_t bytes, int peer, cudaStream_t s) override {
    NCCL_CALL(comm_, gNccl.send(buf, bytes, kNcclUint8, peer, comm_, s));
    return tacoSuccess;
  }
  tacoResult_t recv(void* buf, size_t bytes, int peer, cudaStream_t s) override {
    NCCL_CALL(comm_, gNccl.recv(buf, bytes, kNcclUint8, peer, comm_, s));
    return tacoSuccess;
  }
  tacoResult_t allReduce(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    NCCL_CALL(comm_, gNccl.allReduce(sb, rb, n, ncclType(dt), kNcclSum, comm_, s));
    return tacoSuccess;
  }
  tacoResult_t reduceScatter(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    NCCL_CALL(comm_, gNccl.reduceScatter(sb, rb, n, ncclType(dt), kNcclSum, comm_, s));
    return tacoSuccess;
  }
  tacoResult_t allGather(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    NCCL_CALL(comm_, gNccl.allGather(sb, rb, n, ncclType(dt), comm_, s));
    return tacoSuccess;
  }
  tacoResult_t alltoAll(const void* sb, void* rb, size_t n, tacoDataType_t dt, cudaStream_t s) override {
    if (sb == rb)
      return setError(tacoNotSupported, "tacoAlltoAll: in-place is not supported by the uncompressed NCCL path");
    const size_t bytes = n * dtypeBytes(dt);
    const char* in = static_cast<const char*>(sb);
    char* out = static_cast<char*>(rb);
    TACO_CUDA_CHECK(cudaMemcpyAsync(out + r_ * bytes, in + r_ * bytes, bytes, cudaMemcpyDeviceToDevice, s));
    NCCL_CALL(comm_, gNccl.groupStart());
    for (int p = 0; p < n_; ++p) {
      if (p == r_) continue;
      NCCL_CALL(comm_, gNccl.send(in + p * bytes, bytes, kNcclUint8, p, comm_, s));
      NCCL_CALL(comm_, gNccl.recv(out + p * bytes, bytes, kNcclUint8, p, comm_, s));
    }
    NCCL_CALL(comm_, gNccl.groupEnd());
    return tacoSuccess;
  }
  bool alltoAllInPlace() const override { return false; }

  tacoResult_t hostAllGather(const void* mine, void* all, size_t bytes) override {
    char* dev = nullptr;
    cudaStream_t s = nullptr;
    tacoResult_t res = tacoSuccess;
    cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&dev), bytes * n_);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMemcpy(dev + r_ * bytes, mine, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      res = setError(tacoUnhandledCudaError, "consistency check: CUDA error '%s'", cudaGetErrorString(e));
    } else {
      ncclResult_t nr = gNccl.allGather(dev + r_ * bytes, dev, bytes, kNcclUint8, comm_, s);
      if (nr != 0 && nr != 7) res = ncclErr(nr, comm_, "consistency check ncclAllGather");
      if (res == tacoSuccess && (e = cudaStreamSynchronize(s)) == cudaSuccess)
        e = cudaMemcpy(all, dev, bytes * n_, cudaMemcpyDeviceToHost);
      if (res == tacoSuccess && e != cudaSuccess)
        res = setError(tacoUnhandledCudaError, "consistency check: CUDA error '%s'", cudaGetErrorString(e));
    }
    if (s) cudaStreamDestroy(s);
    if (dev) cudaFree(dev);
    return res;
  }
  void* ncclComm() const override { return comm_; }
  tacoResult_t finalize() override {
    if (owned_ && comm_) {
      ncclComm_t c = comm_;
      comm_ = nullptr;
      NCCL_CALL(nullptr, gNccl.commDestroy(c));
    }
    return tacoSuccess;
  }
  tacoResult_t abort() override {
    if (owned_ && comm_) {
      ncclComm_t c = comm_;
      comm_ = nullptr;
      NCCL_CALL(nullptr, gNccl.commAbort(c));
    }
    return tacoSuccess;
  }

 private:
  ncclComm_t comm_;
  bool owned_;
  int n_, r_;
};

}  // namespace

tacoResult_t ncclSymmetricApi(const NcclSymmetricApi** out) {
  *out = nullptr;
  TACO_CHECK(ncclLoad());
  *out = &gNcclSymmetric;
  return tacoSuccess;
}

tacoResult_t ncclGetUniqueIdBytes(void* id128) {
  TACO_CHECK(ncclLoad());
  ncclUniqueId id;
  NCCL_CALL(nullptr, gNccl.getUniqueId(&id));
  memcpy(id128, &id, sizeof(id));
  return tacoSuccess;
}

tacoResult_t ncclTransportCreate(const void* id128, int nranks, int rank, Transport** out) {
  TACO_CHECK(ncclLoad());
  ncclUniqueId id;
  memcpy(&id, id128, sizeof(id));
  ncclComm_t c = nullptr;
  NCCL_CALL(nullptr, gNccl.commInitRank(&c, nranks, id, rank));
  *out = new (std::nothrow) NcclTransport(c, true, nranks, rank);
  if (*out == nullptr) {
    gNccl.commDestroy(c);
    return setError(tacoSystemError, "tacoCommInitRank: out of host memory");
  }
  return tacoSuccess;
}

tacoResult_t ncclTransportWrap(void* ncclCommPtr, Transport** out) {
  TACO_CHECK(ncclLoad());
  ncclComm_t c = static_cast<ncclComm_t>(ncclCommPtr);
  int n = 0, r = 0;
  NCCL_CALL(c, gNccl.commCount(c, &n));
  NCCL_CALL(c, gNccl.commUserRank(c, &r));
  *out = new (std::nothrow) NcclTransport(c, false, n, r);
  if (*out == nullptr) return setError(tacoSystemError, "tacoCommFromNccl: out of host memory");
  return tacoSuccess;
}

}  // namespace taco
