// The tuner's entry points (tacoCommTune, tacoCommTuneLoopback, tacoCommTuneTable) on bad
// arguments: each is refused with tacoInvalidArgument and a message naming the function and
// the argument, before any CUDA call. No GPU needed.
#include <cstdint>

#include "check.h"
#include "taco.h"

int main() {
  TEST_ASSERT_EQ_INT(tacoCommTune(nullptr, tacoBfloat16, nullptr), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "tacoCommTune: comm");
  // Not a communicator: a pointer to memory that does not hold a live one.
  uint64_t notAComm[64] = {0};
  TEST_ASSERT_EQ_INT(tacoCommTune(reinterpret_cast<tacoComm_t>(notAComm), tacoBfloat16, nullptr), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "tacoCommTune");

  TEST_ASSERT_EQ_INT(tacoCommTuneLoopback(nullptr, 2, tacoFloat32, nullptr), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "tacoCommTuneLoopback: comms argument is NULL");
  tacoComm_t comms[2] = {nullptr, nullptr};
  TEST_ASSERT_EQ_INT(tacoCommTuneLoopback(comms, 0, tacoFloat32, nullptr), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "tacoCommTuneLoopback: nranks 0");
  TEST_ASSERT_EQ_INT(tacoCommTuneLoopback(comms, 2, tacoFloat32, nullptr), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "tacoCommTuneLoopback: comms[0] is NULL");
  comms[0] = reinterpret_cast<tacoComm_t>(notAComm);
  TEST_ASSERT_EQ_INT(tacoCommTuneLoopback(comms, 2, tacoFloat32, nullptr), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "comms[0] is not a live communicator");

  const char* table = reinterpret_cast<const char*>(1);
  TEST_ASSERT_EQ_INT(tacoCommTuneTable(nullptr, tacoFloat16, &table), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "tacoCommTuneTable: comm");
  return TEST_REPORT();
}
