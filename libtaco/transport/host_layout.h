// Which ranks share a host, from every rank's host name (peerHostLayout gathers the names).
// A pure function, so that host tests can check it.
#pragma once
#include <string>
#include <vector>

namespace taco {

struct HostLayout {
  int ranksOnThisHost = 0;   // ranks whose host name is this rank's, this one included
  bool oneHost = false;      // every rank is on one host (the same answer on every rank)
  bool firstOnHost = false;  // no lower rank is on this rank's host
  int mostOnOneHost = 0;     // the most ranks on one host (the same answer on every rank)
};

// `names`: every rank's host name, in rank order; `me`: this rank.
inline HostLayout hostLayoutOf(const std::vector<std::string>& names, int me) {
  HostLayout h;
  const int n = (int)names.size();
  if (me < 0 || me >= n) return h;
  h.firstOnHost = true;
  int withFirst = 0;
  for (int q = 0; q < n; ++q) {
    const bool mine = names[(size_t)q] == names[(size_t)me];
    h.ranksOnThisHost += mine;
    if (mine && q < me) h.firstOnHost = false;
    withFirst += names[(size_t)q] == names[0];
    int onHostOfQ = 0;  // n is at most a few thousand: n^2 comparisons, once per communicator
    for (int k = 0; k < n; ++k) onHostOfQ += names[(size_t)k] == names[(size_t)q];
    if (onHostOfQ > h.mostOnOneHost) h.mostOnOneHost = onHostOfQ;
  }
  h.oneHost = withFirst == n;
  return h;
}

}  // namespace taco
