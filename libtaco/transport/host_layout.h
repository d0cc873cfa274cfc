// Which ranks share a host, from every rank's host name (peerHostLayout gathers the names).
// A pure function, so that host tests can check it.
#pragma once
#include <map>
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
  std::map<std::string, int> perHost;
  for (int q = 0; q < n; ++q) {
    const int onHost = ++perHost[names[(size_t)q]];
    if (onHost > h.mostOnOneHost) h.mostOnOneHost = onHost;
    if (q < me && names[(size_t)q] == names[(size_t)me]) h.firstOnHost = false;
  }
  h.ranksOnThisHost = perHost[names[(size_t)me]];
  h.oneHost = perHost.size() == 1;
  return h;
}

}  // namespace taco
