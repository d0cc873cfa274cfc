// Which ranks share a host (libtaco/transport/host_layout.h), by host name and boot id: the
// ranks on this rank's host, whether peer memory may exist (one host), the rank of each host that
// writes the tuning cache (the lowest: every host's cache gets the tables), and the most ranks on
// one host (what the tuning key records: the same on every rank).
#include <string>
#include <vector>

#include "transport/host_layout.h"
#include "check.h"

using taco::hostLayoutOf;

int main() {
  // One host: every rank counts them all; only rank 0 is first.
  const std::vector<std::string> one = {"a", "a", "a", "a"};
  for (int r = 0; r < 4; ++r) {
    const taco::HostLayout h = hostLayoutOf(one, r);
    TEST_ASSERT_EQ_INT(h.ranksOnThisHost, 4);
    TEST_ASSERT(h.oneHost);
    TEST_ASSERT(h.firstOnHost == (r == 0));
    TEST_ASSERT_EQ_INT(h.mostOnOneHost, 4);
  }
  // Two hosts of two ranks, interleaved (a rank order that does not follow the hosts): the
  // lowest rank of each host is first; nobody is on one host.
  const std::vector<std::string> two = {"a", "b", "a", "b"};
  const bool first2[] = {true, true, false, false};
  for (int r = 0; r < 4; ++r) {
    const taco::HostLayout h = hostLayoutOf(two, r);
    TEST_ASSERT_EQ_INT(h.ranksOnThisHost, 2);
    TEST_ASSERT(!h.oneHost);
    TEST_ASSERT_MSG(h.firstOnHost == first2[r], "rank %d", r);
    TEST_ASSERT_EQ_INT(h.mostOnOneHost, 2);
  }
  // Uneven hosts: 3 on "x", 1 on "y" (rank 3); the answer on one host does not depend on rank 0's.
  const std::vector<std::string> uneven = {"x", "x", "x", "y"};
  TEST_ASSERT_EQ_INT(hostLayoutOf(uneven, 1).ranksOnThisHost, 3);
  TEST_ASSERT_EQ_INT(hostLayoutOf(uneven, 3).ranksOnThisHost, 1);
  TEST_ASSERT(hostLayoutOf(uneven, 3).firstOnHost);
  TEST_ASSERT(!hostLayoutOf(uneven, 2).firstOnHost);
  TEST_ASSERT(!hostLayoutOf(uneven, 0).oneHost && !hostLayoutOf(uneven, 3).oneHost);
  // The most ranks on one host is every rank's answer alike (the tuning key's, so that uneven
  // hosts share one key): 3 on rank 3's host of one rank too.
  for (int r = 0; r < 4; ++r) TEST_ASSERT_EQ_INT(hostLayoutOf(uneven, r).mostOnOneHost, 3);
  // Every host has exactly one first rank, whatever the names.
  const std::vector<std::string> many = {"h3", "h1", "h3", "h2", "h1", "h1", "h2", "h4"};
  int firsts = 0;
  for (int r = 0; r < (int)many.size(); ++r) firsts += hostLayoutOf(many, r).firstOnHost;
  TEST_ASSERT_EQ_INT(firsts, 4);
  for (int r = 0; r < (int)many.size(); ++r) TEST_ASSERT_EQ_INT(hostLayoutOf(many, r).mostOnOneHost, 3);  // h1
  // Two machines that share a name ("localhost" in two containers) differ by their boot ids: each
  // is a host of its own, with a first rank that writes its cache; one machine's ranks agree.
  using taco::hostIdentityOf;
  const std::string bootA = "0f5c2e1a-1111-4c1e-9a4e-3b6f0d6a8c01", bootB = "7d2a9b44-2222-4f0b-8e3c-5a1d7c9e2b02";
  const std::vector<std::string> cloned = {hostIdentityOf("localhost", bootA), hostIdentityOf("localhost", bootA),
                                           hostIdentityOf("localhost", bootB), hostIdentityOf("localhost", bootB)};
  TEST_ASSERT(cloned[0] == cloned[1] && cloned[0] != cloned[2]);
  for (int r = 0; r < 4; ++r) {
    TEST_ASSERT(!hostLayoutOf(cloned, r).oneHost);
    TEST_ASSERT_EQ_INT(hostLayoutOf(cloned, r).ranksOnThisHost, 2);
    TEST_ASSERT_MSG(hostLayoutOf(cloned, r).firstOnHost == (r == 0 || r == 2), "rank %d", r);
  }
  // Without a boot id (no /proc) the name alone, as it was; and the identity fits what a rank sends.
  TEST_ASSERT(hostIdentityOf("node7", "") == "node7");
  TEST_ASSERT(hostIdentityOf(std::string(64, 'n'), bootA).size() < taco::kHostIdentityBytes);
  // One rank; a rank outside the list gives nothing (no first rank, no host).
  TEST_ASSERT(hostLayoutOf({"solo"}, 0).firstOnHost && hostLayoutOf({"solo"}, 0).oneHost);
  TEST_ASSERT(!hostLayoutOf(one, 4).firstOnHost && hostLayoutOf(one, 4).ranksOnThisHost == 0);
  TEST_ASSERT(!hostLayoutOf(one, -1).firstOnHost);
  return TEST_REPORT();
}
