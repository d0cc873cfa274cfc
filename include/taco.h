/*
 * libtaco — compression-aware collectives on NCCL.
 *
 * The one public header. Plain C, usable from C and C++, and parsed as-is by the
 * Python binding (cffi): keep declarations free of macros other than the
 * integer #defines and the extern "C" guard below.
 *
 * Sections: version -> handles -> result codes -> enums -> codecs -> config ->
 * error queries -> codec operations -> communicators -> collectives.
 *
 * Conventions (as in nccl.h): functions return tacoResult_t and never throw,
 * abort or exit. Device operations are stream-ordered and asynchronous: they
 * validate arguments on the host, enqueue on `stream` and return. Streams are
 * CUDA runtime streams (cudaStream_t is `struct CUstream_st*`, the same type as
 * tacoStream_t); NULL is the legacy default stream.
 */
#ifndef TACO_H_
#define TACO_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */
#define TACO_MAJOR 0
#define TACO_MINOR 1
#define TACO_PATCH 0
/* TACO_VERSION_CODE = MAJOR*10000 + MINOR*100 + PATCH */
#define TACO_VERSION_CODE 100

/* Library version as MAJOR*10000 + MINOR*100 + PATCH (may differ from the header's). */
int tacoGetVersion(void);

/* ---------------------------------------------------------------- handles */
/* A communicator: one rank of a group that runs collectives together. It takes one
 * host thread's calls at a time: a call that enqueues work on it while another thread
 * is in a call on it (or has collectives of it queued in an open group) returns
 * tacoInvalidUsage, naming it (docs/api.md, "Threads"). */
typedef struct tacoComm* tacoComm_t;
/* A CUDA stream; the same type as the runtime's cudaStream_t. */
typedef struct CUstream_st* tacoStream_t;

/* ----------------------------------------------------------- result codes */
typedef enum {
  tacoSuccess = 0,
  tacoUnhandledCudaError = 1, /* a CUDA call failed (or no CUDA device) */
  tacoSystemError = 2,        /* the OS failed us: dlopen, out of host memory */
  tacoInternalError = 3,      /* a bug in libtaco */
  tacoInvalidArgument = 4,    /* a bad argument: see tacoGetLastError for which one */
  tacoInvalidUsage = 5,       /* a valid call at the wrong time (e.g. unbalanced group) */
  tacoRemoteError = 6,        /* another rank failed or disagreed (consistency check) */
  tacoNcclError = 7,          /* NCCL returned an error, or is not available */
  tacoNotSupported = 8,       /* valid, but not supported by this build or codec */
  tacoOutOfMemory = 9,        /* device or pinned memory allocation failed */
  tacoNumResults = 10
} tacoResult_t;

/* ------------------------------------------------------------------ enums */
typedef enum {
  tacoFloat32 = 0,
  tacoFloat16 = 1,
  tacoBfloat16 = 2,
  tacoNumDataTypes = 3
} tacoDataType_t;

typedef enum {
  tacoSum = 0,
  tacoNumOps = 1
} tacoRedOp_t;

/* AllReduce algorithms (docs/collectives.md). tacoAlgoAuto lets the library pick per
 * call from the size, the rank count, the dtype, the codec and the peer memory the
 * communicator has; the others force one (TACO_ALGO=auto|plain|staged|fused|oneshot|oneshot-raw).
 * A forced algorithm the communicator cannot run is tacoInvalidUsage at the call. */
typedef enum {
  tacoAlgoAuto = 0,
  tacoAlgoPlain = 1,      /* the transport's uncompressed AllReduce (NCCL's) */
  tacoAlgoStaged = 2,     /* two-shot: codec kernels around the transport's send/recv (any transport) */
  tacoAlgoFused = 3,      /* two-shot on peer memory, a kernel per phase (NVLink, loopback) */
  tacoAlgoOneShot = 4,    /* every rank sums every rank's compressed input, on peer memory */
  tacoAlgoOneShotRaw = 5, /* the same with uncompressed inputs (latency-bound sizes) */
  tacoNumAlgos = 6
} tacoAlgo_t;

/* The name of an AllReduce algorithm, as TACO_ALGO spells it ("auto", "plain", "staged",
 * "fused", "oneshot", "oneshot-raw"): a static string; NULL for a value that is not one of
 * tacoAlgoAuto .. tacoNumAlgos - 1. */
const char* tacoAlgoName(tacoAlgo_t algo);

/* ----------------------------------------------------------------- codecs */
/* Stable codec ids; they are written into every compressed buffer (docs/format.md). */
typedef enum {
  tacoCodecNone = 0,         /* raw bytes of the input dtype (collectives: plain NCCL) */
  tacoCodecBf16 = 1,         /* round to bfloat16 (halves fp32; identity for bf16) */
  tacoCodecTaco = 2,         /* ASH + dual scale, FP8 E4M3 (the TACO paper) */
  tacoCodecTacoE5M2 = 3,     /* ASH + dual scale, FP8 E5M2 */
  tacoCodecFp8Block = 4,     /* per-block absmax FP8 E4M3, no rotation (DS alone) */
  tacoCodecInt8Hadamard = 5, /* Walsh-Hadamard rotation + per-block absmax INT8 */
  tacoCodecInt8Block = 6,    /* per-block absmax INT8 */
  tacoCodecInt4Block = 7,    /* per-block absmax INT4: a deliberately lossy control */
  tacoCodecInt6Hadamard = 8, /* Walsh-Hadamard rotation + per-block absmax INT6 (3/4 byte per element) */
  tacoNumCodecs = 9
} tacoCodecId_t;

/* A codec and its parameters, passed by value. Obtain one from tacoCodecFind. */
typedef struct {
  int id;        /* tacoCodecId_t */
  int blockSize; /* elements per block: a power of two in [32, 1024]; 0 for codecs without blocks */
} tacoCodec_t;

/* What a codec is; filled by tacoCodecGetInfo. Strings are static. */
typedef struct {
  const char* name;        /* registry name, e.g. "taco" */
  const char* description; /* one line */
  int id;                  /* tacoCodecId_t */
  int blockSize;           /* as in the tacoCodec_t */
  int codeBits;            /* bits per element on the wire (8, 6, 4, 16; 0 = input width) */
  int scalesPerBlock;      /* fp32 scales stored per block */
  int rotated;             /* 1 if a Walsh-Hadamard rotation is applied */
  int formatVersion;       /* wire format version written in the header */
} tacoCodecInfo_t;

/* Bytes of the header at the start of every compressed buffer. */
#define TACO_HEADER_BYTES 16
/* Smallest and largest block size. */
#define TACO_MIN_BLOCK 32
#define TACO_MAX_BLOCK 1024
/* Most compressed inputs one decompress-accumulate call takes. */
#define TACO_MAX_ACCUM_INPUTS 64

/* Parse a codec spec: a registry name ("taco", "fp8-block", ...), optionally
 * followed by ":block=N" (e.g. "taco:block=128"). Unknown names and bad block
 * sizes are tacoInvalidArgument. */
tacoResult_t tacoCodecFind(const char* spec, tacoCodec_t* codec);
/* The codec with this id and block size (0 = the codec's default). */
tacoResult_t tacoCodecFromId(int id, int blockSize, tacoCodec_t* codec);
/* Describe a codec. */
tacoResult_t tacoCodecGetInfo(tacoCodec_t codec, tacoCodecInfo_t* info);
/* Bytes needed to compress `count` elements of `datatype`: a pure function of its
 * arguments, header included, a multiple of 16. */
tacoResult_t tacoCompressedSize(tacoCodec_t codec, size_t count, tacoDataType_t datatype, size_t* bytes);

/* ----------------------------------------------------------------- config */
#define TACO_CONFIG_MAGIC 0x7ac0c0de
#define TACO_CONFIG_UNDEF_INT (-2147483647 - 1)
#define TACO_CONFIG_UNDEF_SIZE ((size_t)-1)

/* Communicator configuration. Initialise with TACO_CONFIG_INITIALIZER, then set
 * what you need; every field left undefined takes its TACO_* environment
 * variable, else the library default (docs/tuning.md). */
typedef struct {
  size_t size;              /* sizeof(tacoConfig_t), set by the initializer */
  unsigned int magic;       /* TACO_CONFIG_MAGIC */
  unsigned int version;     /* TACO_VERSION_CODE of the header the caller built with */
  const char* codec;        /* codec spec (tacoCodecFind); NULL: TACO_CODEC, else "fp8-block" */
  size_t chunkBytes;        /* pipeline chunk, uncompressed bytes, 1..2^48; TACO_CHUNK_BYTES */
  size_t fallbackBytes;     /* messages smaller than this use plain NCCL; TACO_FALLBACK_BYTES */
  int pipelineDepth;        /* chunks in flight, 1..16 (1: no overlap); TACO_PIPELINE_DEPTH */
  int checkConsistency;     /* 1: ranks compare library version, codec, block size, chunk, fallback,
                               depth, algo, TACO_PEER_MEMORY and TACO_TUNE at creation;
                               TACO_CHECK_CONSISTENCY */
  int algo;                 /* tacoAlgo_t for AllReduce; TACO_ALGO (default tacoAlgoAuto) */
} tacoConfig_t;

#define TACO_CONFIG_INITIALIZER                                                  \
  {                                                                              \
    sizeof(tacoConfig_t), TACO_CONFIG_MAGIC, TACO_VERSION_CODE, NULL,            \
        TACO_CONFIG_UNDEF_SIZE, TACO_CONFIG_UNDEF_SIZE, TACO_CONFIG_UNDEF_INT,   \
        TACO_CONFIG_UNDEF_INT, TACO_CONFIG_UNDEF_INT                             \
  }

/* The `index`-th TACO_* environment variable the library reads (0-based): its
 * name, default and meaning (static strings), and the value set in the
 * environment or NULL. tacoInvalidArgument past the last one. */
tacoResult_t tacoGetParamInfo(int index, const char** name, const char** defaultValue, const char** meaning,
                              const char** value);

/* ---------------------------------------------------------- error queries */
/* A static string saying what a result code means. */
const char* tacoGetErrorString(tacoResult_t result);
/* The last detailed error message of the calling thread (comm NULL: the thread's
 * own buffer, overwritten by its next failing call), or of the communicator if one
 * is given and failed since (a copy, valid until the calling thread's next
 * tacoGetLastError; any thread may ask). Never NULL. */
const char* tacoGetLastError(tacoComm_t comm);

/* ------------------------------------------------------- codec operations */
/* Compress `count` elements at device pointer `x` into device buffer `out` of
 * `outBytes` (>= tacoCompressedSize). One fused kernel, enqueued on `stream`. */
tacoResult_t tacoCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t datatype,
                          void* out, size_t outBytes, tacoStream_t stream);
/* Decompress `count` elements from device buffer `in` (`inBytes` long) into `y`. */
tacoResult_t tacoDecompress(tacoCodec_t codec, const void* in, size_t inBytes, void* y, size_t count,
                            tacoDataType_t datatype, tacoStream_t stream);
/* y = sum of `nInputs` decompressed inputs (each `inBytes` long, host array of
 * device pointers) plus the optional exact input `exact` (NULL for none, same
 * dtype as y; may equal y). Summed in fp32 in a fixed order (docs/codecs.md),
 * rounded once to `datatype`. One fused kernel. */
tacoResult_t tacoDecompressAccumulate(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                      size_t inBytes, const void* exact, void* y, size_t count,
                                      tacoDataType_t datatype, tacoStream_t stream);
/* The middle of a two-shot AllReduce in one kernel: the fp32 sum as in
 * tacoDecompressAccumulate (before rounding to `datatype`), compressed into
 * `out` (`outBytes` long) exactly as tacoCompress would compress it; if `y` is
 * not NULL, also writes the decompression of `out` to `y`. For fp32 data this
 * equals tacoCompress(tacoDecompressAccumulate(...)). */
tacoResult_t tacoDecompressReduceCompress(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                          size_t inBytes, const void* exact, void* out, size_t outBytes,
                                          void* y, size_t count, tacoDataType_t datatype,
                                          tacoStream_t stream);

/* The same four on host memory, computed on the CPU, bit-identical to the GPU. */
tacoResult_t tacoHostCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t datatype,
                              void* out, size_t outBytes);
tacoResult_t tacoHostDecompress(tacoCodec_t codec, const void* in, size_t inBytes, void* y, size_t count,
                                tacoDataType_t datatype);
tacoResult_t tacoHostDecompressAccumulate(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                          size_t inBytes, const void* exact, void* y, size_t count,
                                          tacoDataType_t datatype);
tacoResult_t tacoHostDecompressReduceCompress(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                              size_t inBytes, const void* exact, void* out,
                                              size_t outBytes, void* y, size_t count,
                                              tacoDataType_t datatype);

/* --------------------------------------------------------- communicators */
#define TACO_UNIQUE_ID_BYTES 128
/* Opaque, the same bytes as an ncclUniqueId. */
typedef struct {
  char internal[TACO_UNIQUE_ID_BYTES];
} tacoUniqueId;

/* A new unique id (rank 0 creates it and sends it to the others). Needs NCCL. */
tacoResult_t tacoGetUniqueId(tacoUniqueId* uniqueId);
/* Create rank `rank` of `nranks` over NCCL, on the current CUDA device.
 * Collective: every rank calls it. `config` may be NULL. */
tacoResult_t tacoCommInitRank(tacoComm_t* comm, int nranks, tacoUniqueId uniqueId, int rank,
                              const tacoConfig_t* config);
/* Wrap an existing ncclComm_t (passed as void*). libtaco uses but never
 * destroys it. Collective over that communicator's ranks. */
tacoResult_t tacoCommFromNccl(tacoComm_t* comm, void* ncclComm, const tacoConfig_t* config);
/* Create `nranks` communicators that live in this process on the current GPU
 * (the loopback transport). Drive them from one thread inside
 * tacoGroupStart/tacoGroupEnd, one call per rank. */
tacoResult_t tacoCommInitLoopback(tacoComm_t* comms, int nranks, const tacoConfig_t* config);
/* Wait for this rank's work on the communicator, then free it. It does not synchronize the ranks:
 * between processes, destroy only once every rank's last call has completed (stream synchronize,
 * then a host barrier; docs/api.md). */
tacoResult_t tacoCommDestroy(tacoComm_t comm);
/* Free the communicator without waiting (aborts NCCL work in flight). */
tacoResult_t tacoCommAbort(tacoComm_t comm);
tacoResult_t tacoCommCount(tacoComm_t comm, int* count);
tacoResult_t tacoCommUserRank(tacoComm_t comm, int* rank);
/* The communicator's resolved configuration (every field defined). The codec
 * string stays valid as long as the communicator. A config whose size and magic
 * an older, smaller struct's initializer set gets that struct's bytes only. */
tacoResult_t tacoCommGetConfig(tacoComm_t comm, tacoConfig_t* config);
/* Device workspace bytes the communicator holds (allocated at creation): the staged
 * pipeline's slots plus, where peer memory exists, this rank's scratch and flags. */
tacoResult_t tacoCommWorkspaceBytes(tacoComm_t comm, size_t* bytes);
/* An error that happened asynchronously on the device since creation: a peer-memory
 * kernel that gave up waiting (TACO_WAIT_TIMEOUT_S) or saw tacoCommAbort, or a peer-memory
 * call whose kernels were launched in part. tacoSuccess when none; tacoRemoteError once a
 * wait failed, tacoUnhandledCudaError after a call launched in part (either way the
 * communicator must then be destroyed: its ranks no longer agree on where they are).
 * Never blocks. */
tacoResult_t tacoCommGetAsyncError(tacoComm_t comm, tacoResult_t* asyncError);
/* The AllReduce algorithm the communicator would pick for `count` elements of `datatype`
 * (tacoAlgo_t, never tacoAlgoAuto): the selection function, without running anything. */
tacoResult_t tacoCommAllReduceAlgo(tacoComm_t comm, size_t count, tacoDataType_t datatype, int* algo);
/* Measure the communicator's AllReduce table for `datatype` on its own GPUs (docs/tuning.md):
 * every algorithm it can run is first checked bit for bit against its oracle (a mismatch, an
 * error or a peer-memory timeout demotes it, with a warning), then timed at power-of-two sizes
 * from 4 KiB up to TACO_TUNE_MAX_BYTES (256 MiB; fewer where device memory is short); the ranks
 * combine their timings (the max) and compare the table's hash. Later AllReduce calls of
 * `datatype` with algo auto take the table's choice for the nearest size, and the lowest rank of
 * each host writes it to the cache (TACO_TUNE_FILE). With TACO_TUNE=auto (the default) the first eager AllReduce of
 * a datatype does this by itself where no cached table is in use. Collective: every rank calls
 * it, outside any group and graph capture; it runs on `stream` and returns when done. A one-rank
 * communicator has nothing to measure (tacoSuccess, no table). For a loopback world of several
 * ranks use tacoCommTuneLoopback. */
tacoResult_t tacoCommTune(tacoComm_t comm, tacoDataType_t datatype, tacoStream_t stream);
/* The same for every rank of a loopback world: `comms` as tacoCommInitLoopback filled it
 * (`nranks` communicators, in rank order). */
tacoResult_t tacoCommTuneLoopback(tacoComm_t* comms, int nranks, tacoDataType_t datatype, tacoStream_t stream);
/* The AllReduce table the communicator uses for `datatype`, as JSON text (docs/tuning.md: the
 * sizes, each algorithm's time in microseconds, the choices, where it came from), or NULL when it
 * has none (the built-in model decides). The text stays valid until the next call for this
 * communicator and datatype, or its destruction. */
tacoResult_t tacoCommTuneTable(tacoComm_t comm, tacoDataType_t datatype, const char** table);

/* ----------------------------------------------------------- collectives */
/* Group calls: collectives issued between start and end are launched together
 * at end (required to drive several loopback ranks from one thread). Nest freely. */
tacoResult_t tacoGroupStart(void);
tacoResult_t tacoGroupEnd(void);

/* Sum `count` elements across ranks into recvbuff on every rank, compressed
 * with the communicator's codec (two-shot, docs/collectives.md). In place when
 * sendbuff == recvbuff. Every rank's output is bit-identical. */
tacoResult_t tacoAllReduce(const void* sendbuff, void* recvbuff, size_t count, tacoDataType_t datatype,
                           tacoRedOp_t op, tacoComm_t comm, tacoStream_t stream);
/* Sum across ranks; rank r receives elements [r*recvcount, (r+1)*recvcount). */
tacoResult_t tacoReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               tacoDataType_t datatype, tacoRedOp_t op, tacoComm_t comm,
                               tacoStream_t stream);
/* Gather `sendcount` elements from every rank, in rank order, into recvbuff. */
tacoResult_t tacoAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           tacoDataType_t datatype, tacoComm_t comm, tacoStream_t stream);
/* Block j of `count` elements of sendbuff goes to rank j, landing at block r of its recvbuff. */
tacoResult_t tacoAlltoAll(const void* sendbuff, void* recvbuff, size_t count, tacoDataType_t datatype,
                          tacoComm_t comm, tacoStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TACO_H_ */
