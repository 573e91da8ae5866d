#include <fmt/format.h>

#include "hca/mr.h"

namespace hcasim::hca {

uint32_t MrTable::reg(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (!has_pd(pd)) throw sdp::VerbsError(fmt::format("reg_mr: no PD {}", pd));
  if (len > 0 && len - 1 > UINT64_MAX - addr)  // the last byte, addr + len - 1, past 2^64 - 1
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) wraps past the end of the address space", addr, len));
  return kFirstKey + place({pd, addr, len, access, false});
}

uint32_t MrTable::place(const Mr& m) {
  ++live_count_;
  if (!free_.empty()) {
    const uint32_t i = free_.back();
    free_.pop_back();
    mrs_[i] = m;
    live_[i] = true;
    return i;
  }
  mrs_.push_back(m);
  live_.push_back(true);
  return static_cast<uint32_t>(mrs_.size() - 1);
}

uint32_t MrTable::reg_all_memory(uint32_t pd, unsigned access) {
  if (!has_pd(pd)) throw sdp::VerbsError(fmt::format("dma_mr: no PD {}", pd));
  return kFirstKey + place({pd, 0, 0, access, true});
}

bool MrTable::dereg(uint32_t key) {
  if (find(key) == nullptr) return false;
  live_[key - kFirstKey] = false;
  --live_count_;
  if (reuse_) free_.push_back(key - kFirstKey);
  return true;
}

const char* mr_refusal_str(MrRefusal r) {
  switch (r) {
    case MrRefusal::None: return "";
    case MrRefusal::UnknownKey: return "unknown key";
    case MrRefusal::OtherPd: return "key of another PD";
    case MrRefusal::Access: return "access flags";
    case MrRefusal::Bounds: return "out of bounds";
  }
  return "";
}

}  // namespace hcasim::hca
