// Which loaded NCCL the nccl-symmetric peer-memory route accepts, against the NCCL headers
// libtaco was compiled with (libtaco/transport/nccl_symmetric_version.h). A pure function:
// the decision, and that every refusal says why.
#include <cstring>

#include "../../libtaco/transport/nccl_symmetric_version.h"
#include "check.h"

namespace {

constexpr int v(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }

// Refused, with a reason that contains `word`.
bool refusedFor(int runtime, int compiled, const char* word) {
  const char* why = taco::ncclSymmetricVersionRefusal(runtime, compiled);
  return why != nullptr && strstr(why, word) != nullptr;
}

}  // namespace

int main() {
  using taco::ncclSymmetricUsable;
  // Built without nccl_device.h: closed whatever is loaded.
  TEST_ASSERT(refusedFor(v(2, 28, 3), 0, "without nccl_device.h"));
  TEST_ASSERT(refusedFor(v(2, 32, 3), 0, "without nccl_device.h"));
  TEST_ASSERT(refusedFor(v(2, 27, 7), v(2, 27, 7), "older than 2.28"));

  // A library without symmetric memory.
  TEST_ASSERT(refusedFor(v(2, 27, 7), v(2, 28, 3), "older than 2.28"));
  TEST_ASSERT(refusedFor(v(2, 21, 5), v(2, 32, 3), "older than 2.28"));
  TEST_ASSERT(refusedFor(0, v(2, 28, 3), "older than 2.28"));

  // 2.28: unversioned structs whose layout changed between patch releases: the very version only.
  TEST_ASSERT(ncclSymmetricUsable(v(2, 28, 3), v(2, 28, 3)));
  TEST_ASSERT(ncclSymmetricUsable(v(2, 28, 9), v(2, 28, 9)));
  TEST_ASSERT(refusedFor(v(2, 28, 9), v(2, 28, 3), "very version"));
  TEST_ASSERT(refusedFor(v(2, 28, 3), v(2, 28, 9), "very version"));
  TEST_ASSERT(refusedFor(v(2, 29, 2), v(2, 28, 9), "very version"));  // no magic for 2.29 to read
  TEST_ASSERT(refusedFor(v(2, 32, 3), v(2, 28, 3), "very version"));

  // 2.29 on: versioned structs that newer libraries translate; never an older library.
  TEST_ASSERT(ncclSymmetricUsable(v(2, 29, 2), v(2, 29, 2)));
  TEST_ASSERT(ncclSymmetricUsable(v(2, 29, 7), v(2, 29, 2)));
  TEST_ASSERT(ncclSymmetricUsable(v(2, 32, 3), v(2, 30, 7)));
  TEST_ASSERT(ncclSymmetricUsable(v(2, 32, 3), v(2, 32, 3)));
  TEST_ASSERT(refusedFor(v(2, 29, 2), v(2, 29, 7), "older than the headers"));
  TEST_ASSERT(refusedFor(v(2, 28, 9), v(2, 32, 3), "older than the headers"));
  TEST_ASSERT(refusedFor(v(2, 30, 7), v(2, 32, 3), "older than the headers"));

  // Another major version: nothing is known about its structs.
  TEST_ASSERT(refusedFor(v(3, 0, 0), v(2, 32, 3), "major"));
  TEST_ASSERT(refusedFor(v(3, 1, 0), v(2, 28, 3), "major"));

  // The boundaries the decision is built on.
  TEST_ASSERT(taco::kNcclSymmetricFirst == v(2, 28, 0));
  TEST_ASSERT(taco::kNcclVersionedStructs == v(2, 29, 0));
  return TEST_REPORT();
}
