// Communicator and collective argument checks that need no GPU: every bad
// argument is rejected with the right code and a message naming it, before any
// CUDA or NCCL call.
#include <cstddef>
#include <cstdlib>

#include "check.h"
#include "taco.h"

int main() {
  // Before the first library call: the environment is read once.
  setenv("TACO_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  setenv("TACO_CODEC", "env-codec", 1);       // parses (any text), refused at creation
  setenv("TACO_PIPELINE_DEPTH", "0", 1);      // parses, refused at creation
  tacoComm_t comms[4];
  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;

  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(NULL, 2, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "comms argument is NULL");
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 0, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "nranks");
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 65, NULL), tacoInvalidArgument);

  cfg.codec = "no-such-codec";
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &cfg), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "unknown codec 'no-such-codec'");
  cfg.codec = "taco:block=100";
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &cfg), tacoInvalidArgument);
  cfg.codec = "taco:blk=128";
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &cfg), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "blk=128");
  cfg.codec = "taco";
  cfg.pipelineDepth = 0;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &cfg), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "pipelineDepth");
  cfg.pipelineDepth = 2;
  cfg.chunkBytes = 0;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &cfg), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "chunkBytes");
  // 256 TiB is the most: beyond it the workspace's size in bytes could wrap (it did at 2^63 - 2^60).
  cfg.chunkBytes = ((size_t)1 << 48) + 1;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &cfg), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "config chunkBytes 281474976710657 is larger than");
  cfg.chunkBytes = TACO_CONFIG_UNDEF_SIZE;
  tacoConfig_t bad = TACO_CONFIG_INITIALIZER;
  // A size that ends inside a field (here half of the codec pointer) is no version of the struct:
  // refused, where it copied half a pointer and crashed reading the codec spec.
  bad.codec = "taco";
  bad.size = offsetof(tacoConfig_t, codec) + 4;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "config size 20 ends inside a field of tacoConfig_t");
  bad.size = offsetof(tacoConfig_t, chunkBytes) + 4;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  // An older, smaller struct (one that ends at a field: here at pipelineDepth, with and without its
  // padding, and the one before `algo`) is a valid config; its missing fields take the environment.
  bad.size = offsetof(tacoConfig_t, pipelineDepth) + sizeof(int);
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "TACO_PIPELINE_DEPTH 0 is outside [1, 16]");  // from env, set above
  bad.size = offsetof(tacoConfig_t, algo);
  bad.pipelineDepth = 17;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "config pipelineDepth 17 is outside");  // copied
  bad = TACO_CONFIG_INITIALIZER;
  bad.magic = 0;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "config");
  const tacoConfig_t fresh = TACO_CONFIG_INITIALIZER;
  bad = fresh;
  bad.version = 0;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "config version 0 is not a TACO_VERSION_CODE");
  bad.version = 0xdeadbeefu;
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  // A value the config leaves unset comes from the environment, and the error names the variable.
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "TACO_CODEC argument 'env-codec'");
  bad = fresh;
  bad.codec = "taco";
  TEST_ASSERT_EQ_INT(tacoCommInitLoopback(comms, 2, &bad), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "TACO_PIPELINE_DEPTH 0 is outside [1, 16]");
  TEST_ASSERT_EQ_INT(tacoCommInitRank(comms, 2, tacoUniqueId(), 2, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "rank 2");
  TEST_ASSERT_EQ_INT(tacoCommInitRank(NULL, 2, tacoUniqueId(), 0, NULL), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCommFromNccl(comms, NULL, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "ncclComm argument is NULL");
  TEST_ASSERT_EQ_INT(tacoGetUniqueId(NULL), tacoInvalidArgument);

  // Communicator queries and lifecycle with NULL.
  int n = 0;
  size_t ws = 0;
  TEST_ASSERT_EQ_INT(tacoCommCount(NULL, &n), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCommUserRank(NULL, &n), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCommGetConfig(NULL, &cfg), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCommWorkspaceBytes(NULL, &ws), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCommDestroy(NULL), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCommAbort(NULL), tacoInvalidArgument);

  // Collectives with a NULL communicator name it.
  TEST_ASSERT_EQ_INT(tacoAllReduce(NULL, NULL, 10, tacoFloat32, tacoSum, NULL, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "tacoAllReduce: comm argument is NULL");
  TEST_ASSERT_EQ_INT(tacoReduceScatter(NULL, NULL, 10, tacoFloat32, tacoSum, NULL, NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "tacoReduceScatter: comm");
  TEST_ASSERT_EQ_INT(tacoAllGather(NULL, NULL, 10, tacoFloat32, NULL, NULL), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoAlltoAll(NULL, NULL, 10, tacoFloat32, NULL, NULL), tacoInvalidArgument);

  // Groups: an unbalanced end is invalid usage; balanced empty groups are fine.
  TEST_ASSERT_EQ_INT(tacoGroupEnd(), tacoInvalidUsage);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "GroupEnd");
  TEST_ASSERT_EQ_INT(tacoGroupStart(), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoGroupStart(), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoGroupEnd(), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoGroupEnd(), tacoSuccess);

  // NCCL missing (the library named by TACO_NCCL_LIBRARY does not exist and no
  // system copy may be there): either NCCL is found, or the error says what to do.
  tacoUniqueId id;
  tacoResult_t r = tacoGetUniqueId(&id);
  TEST_ASSERT(r == tacoSuccess || r == tacoNcclError || r == tacoSystemError);
  if (r == tacoNcclError) TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "TACO_NCCL_LIBRARY");
  return TEST_REPORT();
}
