#include "model/cache.h"

#include <algorithm>

namespace hcasim::model {

double ReuseCache::read(uint64_t addr, uint64_t bytes) {
  double hit = 0;
  auto it = last_.find(addr);
  if (it != last_.end()) {
    const double distance = static_cast<double>(streamed_ - it->second);
    hit = distance <= capacity_ ? 1.0 : capacity_ / distance;
  }
  streamed_ += bytes;
  last_[addr] = streamed_;
  return hit;
}

}  // namespace hcasim::model
