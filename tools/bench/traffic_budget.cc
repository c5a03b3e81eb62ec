// The entries the traffic budget excuses from 1.5x of their minimal traffic, each with the
// bound it is held to instead and why that traffic is inherent. The report fails when an
// excused entry goes past its bound, and when an exception excuses nothing any more.
#include "tools/bench/traffic.h"

namespace verlconf::bench {

const std::vector<TrafficException>& TrafficExceptions() {
  static const std::vector<TrafficException> exceptions = {};
  return exceptions;
}

}  // namespace verlconf::bench
