#include "oracle/core/spec_util.h"

namespace verlconf::oracle {

Case NewGeneratedCase(const GenParams& p) {
  Case c;
  c.name = "generated";
  c.dtype = p.dtype;
  c.seed = static_cast<int64_t>(p.seed);
  return c;
}

}  // namespace verlconf::oracle
