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
  const Mr* m = find(key);
  if (m == nullptr || (m->mw_type == 0 && m->windows > 0)) return false;
  if (m->mw_type != 0) unbind_from_mr(*m);
  live_[key - kFirstKey] = false;
  --live_count_;
  if (reuse_) free_.push_back(key - kFirstKey);
  return true;
}

bool MrTable::rereg(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (find(key) == nullptr || find(key)->mw_type != 0 || find(key)->windows > 0) return false;
  if (!has_pd(pd)) throw sdp::VerbsError(fmt::format("rereg_mr: no PD {}", pd));
  if (len > 0 && len - 1 > UINT64_MAX - addr)
    throw sdp::VerbsError(fmt::format("rereg_mr: [{:#x}, +{}) wraps past the end of the address space", addr, len));
  mrs_[key - kFirstKey] = {pd, addr, len, access, false};
  return true;
}

uint32_t MrTable::alloc_mw(uint32_t pd, uint8_t type) {
  if (!has_pd(pd)) throw sdp::VerbsError(fmt::format("alloc_mw: no PD {}", pd));
  if (type != 1 && type != 2) throw sdp::VerbsError(fmt::format("alloc_mw: no memory window type {}", type));
  Mr w;
  w.pd = pd;
  w.mw_type = type;
  mrs_.push_back(w);
  live_.push_back(true);
  ++live_count_;
  return kFirstKey + static_cast<uint32_t>(mrs_.size() - 1);
}

MrRefusal MrTable::bind_mw(uint32_t mw_key, uint32_t mr_key, sdp::Addr addr, uint64_t len, unsigned access,
                           uint32_t qpn, uint32_t qp_pd) {
  const Mr* w = find(mw_key);
  const Mr* m = find(mr_key);
  if (w == nullptr || w->mw_type == 0 || (w->mw_type == 2 && w->bound)) return MrRefusal::UnknownKey;
  if (m == nullptr || m->mw_type != 0 || m->all_memory) return MrRefusal::UnknownKey;
  if (m->pd != qp_pd || w->pd != qp_pd) return MrRefusal::OtherPd;
  if ((m->access & kMwBind) == 0) return MrRefusal::Access;
  if ((access & (sdp::kRemoteWrite | sdp::kRemoteAtomic)) != 0 && (m->access & sdp::kLocalWrite) == 0)
    return MrRefusal::Access;
  if (len > 0 && !mr_covers(*m, addr, len)) return MrRefusal::Bounds;
  unbind_from_mr(*w);  // a type 1 window's earlier binding
  if (len > 0 || w->mw_type == 2) ++mrs_[mr_key - kFirstKey].windows;
  Mr& b = mrs_[mw_key - kFirstKey];
  b.addr = addr;
  b.len = len;
  b.access = access & kRemoteRights;
  b.bound = true;
  b.mr_key = mr_key;
  b.qpn = b.mw_type == 2 ? qpn : kNoQp;
  return MrRefusal::None;
}

MrRefusal MrTable::invalidate_mw(uint32_t key, uint32_t pd, uint32_t qpn) {
  const Mr* w = find(key);
  if (w == nullptr || w->mw_type != 2 || !w->bound) return MrRefusal::UnknownKey;
  if (w->pd != pd) return MrRefusal::OtherPd;
  if (qpn != kNoQp && w->qpn != qpn) return MrRefusal::OtherQp;
  unbind_from_mr(*w);
  Mr& b = mrs_[key - kFirstKey];
  b.bound = false;
  b.qpn = kNoQp;
  return MrRefusal::None;
}

void MrTable::unbind_from_mr(const Mr& w) {
  if (!w.bound || (w.len == 0 && w.mw_type == 1)) return;
  const uint32_t i = w.mr_key - kFirstKey;
  if (i < mrs_.size() && live_[i] && mrs_[i].windows > 0) --mrs_[i].windows;
}

const char* mr_refusal_str(MrRefusal r) {
  switch (r) {
    case MrRefusal::None: return "";
    case MrRefusal::UnknownKey: return "unknown key";
    case MrRefusal::OtherPd: return "key of another PD";
    case MrRefusal::Access: return "access flags";
    case MrRefusal::Bounds: return "out of bounds";
    case MrRefusal::OtherQp: return "a memory window bound to another QP";
  }
  return "";
}

}  // namespace hcasim::hca
