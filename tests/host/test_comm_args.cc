// Communicator and collective argument checks that need no GPU: every bad
// argument is rejected with the right code and a message naming it, before any
// CUDA or NCCL call.
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
  tacoConfig_t bad = TACO_CONFIG_INITIALIZER;
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
