#pragma once
/// \file The HCA core's protection domains and memory-region table (IBA 1.2.1 10.6; ibv_alloc_pd(3),
/// ibv_reg_mr(3)): keys, bounds and access flags, without time. sim/ and emu/ keep one MrTable
/// each and ask it on every gather, scatter and remote access.
///
/// Keys: one key per MR, lkey = rkey (as mlx4 hands them out), from 0x100 upwards. A key names
/// an MR of one PD; an SGE or an RDMA naming a key of another PD fails like an unknown key.
/// Bounds: [addr, addr + len) must lie inside the MR, computed so that no sum can wrap past
/// 2^64 (an RDMA WRITE to remote_addr 2^64 - 8 with 16 bytes is outside every MR).
#include <cstdint>
#include <vector>

#include "sdp/verbs.h"

namespace hcasim::hca {

/// IBV_ACCESS_MW_BIND: memory windows may be bound to the MR (IBA 10.6.7.2.1).
inline constexpr unsigned kMwBind = 16;
/// The remote rights (sdp::kRemoteWrite, kRemoteRead, kRemoteAtomic): a memory window serves
/// remote accesses only (IBA 10.6.7: an R_Key, never an L_Key).
inline constexpr unsigned kRemoteRights = sdp::kRemoteWrite | sdp::kRemoteRead | sdp::kRemoteAtomic;
/// A QP number that no memory window of type 2 is bound to (MrTable::check without a QP).
inline constexpr uint32_t kNoQp = 0xFFFFFFFF;

/// One registered memory region, or one memory window (IBA 10.6.7: `mw_type` 1 or 2), which
/// once bound gives remote access to [addr, addr + len) of the MR `mr_key` with `access`.
struct Mr {
  uint32_t pd = 0;
  sdp::Addr addr = 0;
  uint64_t len = 0;
  unsigned access = 0;      ///< sdp::Access bits (local read is always allowed), kMwBind
  bool all_memory = false;  ///< ib_get_dma_mr: covers every allocated byte of the host
  uint8_t mw_type = 0;      ///< 0: an MR; 1 or 2: a memory window of that type
  bool bound = false;       ///< a window: bound (it names memory)
  uint32_t mr_key = 0;      ///< a bound window: the MR it lies in
  uint32_t qpn = kNoQp;     ///< a bound window of type 2: the one QP it serves
  /// An MR: the memory windows bound to it (a type 2 window bound, a type 1 window bound with a
  /// length). While any is, the MR is not deregistered (MrTable::dereg).
  uint32_t windows = 0;
};

/// True when [addr, addr + len) lies inside [m.addr, m.addr + m.len). No term can overflow:
/// `len <= m.len` bounds the subtraction `m.len - len`, and `addr - m.addr` follows
/// `addr >= m.addr` (the check addr + len <= m.addr + m.len wraps for addr near 2^64).
inline bool mr_covers(const Mr& m, sdp::Addr addr, uint64_t len) {
  return addr >= m.addr && len <= m.len && addr - m.addr <= m.len - len;
}

/// Why an access was refused (for messages and tests; the verbs status is the caller's:
/// LOC_PROT_ERR for a local SGE, REM_ACCESS_ERR at a responder).
enum class MrRefusal : uint8_t { None, UnknownKey, OtherPd, Access, Bounds, OtherQp };

/// The PDs and MRs of one HCA.
class MrTable {
 public:
  /// `reuse_keys`: a deregistered MR's key is handed out again (a LIFO free list), so that the
  /// table holds no more entries than MRs ever live at once (the emulator's long-lived
  /// processes); without it keys only grow (the simulator's sequential keys).
  explicit MrTable(bool reuse_keys = false) : reuse_(reuse_keys) {}
  /// ibv_alloc_pd: a new PD handle (1, 2, ...).
  uint32_t alloc_pd() { return next_pd_++; }
  /// True when `pd` was allocated.
  bool has_pd(uint32_t pd) const { return pd != 0 && pd < next_pd_; }
  /// ibv_reg_mr: registers [addr, addr + len) in `pd` with `access` and returns the key.
  /// Throws sdp::VerbsError for an unknown PD or a range that wraps past 2^64 (ibv_reg_mr
  /// fails with EINVAL); whether the memory exists is the backend's check, made before.
  uint32_t reg(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access);
  /// ib_get_dma_mr: a key of `pd` covering all of the host's allocated memory with `access`.
  uint32_t reg_all_memory(uint32_t pd, unsigned access);
  /// ibv_dereg_mr, or ibv_dealloc_mw of a window's `key`: false, changing nothing, when no MR has
  /// `key` or memory windows are bound to the MR (windows_bound(key) > 0: ConnectX's HW2SW_MPT
  /// fails with status REG_BOUND, "Memory Region has Memory Windows bound to", which
  /// mlx4_status_to_errno makes EBUSY, and mlx4_mr_free_reserved returns it to ibv_dereg_mr:
  /// drivers/net/ethernet/mellanox/mlx4/mr.c and cmd.c). A window deallocated while bound is
  /// unbound from its MR.
  bool dereg(uint32_t key);
  /// The memory windows bound to the MR of `key` (Mr::windows); 0 for any other key.
  uint32_t windows_bound(uint32_t key) const {
    const Mr* m = find(key);
    return m != nullptr && m->mw_type == 0 ? m->windows : 0;
  }
  /// ibv_rereg_mr(3): the MR of `key` takes `pd`, [addr, addr + len) and `access` in place and
  /// keeps its key, as mlx4_ib_rereg_user_mr rewrites the MPT entry (drivers/infiniband/hw/mlx4/
  /// mr.c), so every later check sees the new values. False, changing nothing, when no MR has
  /// `key` (a memory window's included) or windows are bound to it (mlx4_ib_rereg_user_mr
  /// takes the MPT entry with HW2SW_MPT first, which fails as dereg's, EBUSY); throws
  /// sdp::VerbsError as reg() for an unknown PD or a range that wraps.
  bool rereg(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access);
  /// ibv_alloc_mw(3): an unbound memory window of `type` (1 or 2) in `pd`; its key. Throws
  /// sdp::VerbsError for an unknown PD or another type.
  uint32_t alloc_mw(uint32_t pd, uint8_t type);
  /// Binds the window `mw_key` (IBA 10.6.7.2, the bind of a type 1 window through its QP's send
  /// queue or a type 2 window's Bind WR; ibv_bind_mw(3), IBV_WR_BIND_MW) to [addr, addr + len)
  /// of the MR `mr_key` with `access` (kRemote* bits), for QP `qpn` of PD `qp_pd` (a type 2
  /// window serves that QP only). Refused, changing nothing (the WR completes MW_BIND_ERR):
  /// not a window, or a type 2 window bound already (IBA 10.6.7.2.2: invalidate it first);
  /// the MR unknown, without kMwBind, or the MR's or the window's PD not the QP's; the range outside the MR; remote write or atomic rights without the MR's local
  /// write. A type 1 window bound with len 0 names no memory and is bound to no MR (IBA
  /// 10.6.7.2.4: its invalidation).
  MrRefusal bind_mw(uint32_t mw_key, uint32_t mr_key, sdp::Addr addr, uint64_t len, unsigned access, uint32_t qpn,
                    uint32_t qp_pd);
  /// Invalidates the bound type 2 window `key` for a QP of PD `pd` (IBA 10.6.7.2.4): through
  /// IBV_WR_LOCAL_INV (`qpn` kNoQp: any QP of the PD), or as the IETH R_Key of a SEND with
  /// Invalidate received on QP `qpn`, which must be the QP the window was bound through (IBA
  /// 9.4.1.3: a type 2 window is associated with one QP). Unbound, its key serves nothing until
  /// bound anew. Refused, changing nothing: UnknownKey for a key that is no window, a type 1
  /// window (IBA 10.6.7.2.4: invalidated by a zero-length bind only) or an unbound one; OtherPd;
  /// OtherQp.
  MrRefusal invalidate_mw(uint32_t key, uint32_t pd, uint32_t qpn = kNoQp);
  /// The MR of `key`, or nullptr (valid until the next reg).
  const Mr* find(uint32_t key) const {
    const uint32_t i = key - kFirstKey;  // keys below kFirstKey wrap to a large index
    return i < mrs_.size() && live_[i] ? &mrs_[i] : nullptr;
  }
  /// Why `key` does not allow [addr, addr + len) in `pd` with every bit of `need`
  /// (MrRefusal::None when it does). An all-memory MR asks `contains(addr, len)` (the host's
  /// memory: called for such MRs only, so that the common path makes no call through it).
  /// A memory window (its key is an R_Key only) is checked as the MR it lies in, within its
  /// own range and rights, for remote accesses (`need` with a kRemote* bit) of QP `qpn` when
  /// of type 2; an unbound window, or one whose MR is gone, is an unknown key.
  template <class Contains>
  MrRefusal check(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need, Contains&& contains,
                  uint32_t qpn = kNoQp) const {
    const Mr* m = find(key);
    if (m == nullptr) return MrRefusal::UnknownKey;
    if (m->mw_type != 0) [[unlikely]] {
      if (!m->bound || (need & kRemoteRights) == 0 || find(m->mr_key) == nullptr) return MrRefusal::UnknownKey;
      if (m->pd != pd) return MrRefusal::OtherPd;
      if (m->mw_type == 2 && m->qpn != qpn) return MrRefusal::OtherQp;
      if ((m->access & need) != need) return MrRefusal::Access;
      return mr_covers(*m, addr, len) ? MrRefusal::None : MrRefusal::Bounds;
    }
    if (m->pd != pd) return MrRefusal::OtherPd;
    if ((m->access & need) != need) return MrRefusal::Access;
    if (m->all_memory) [[unlikely]] return contains(addr, len) ? MrRefusal::None : MrRefusal::Bounds;
    return mr_covers(*m, addr, len) ? MrRefusal::None : MrRefusal::Bounds;
  }
  /// check() == MrRefusal::None.
  template <class Contains>
  bool allows(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need, Contains&& contains,
              uint32_t qpn = kNoQp) const {
    return check(key, pd, addr, len, need, contains, qpn) == MrRefusal::None;
  }
  /// Number of MRs registered.
  size_t size() const { return live_count_; }

  /// The first key handed out (mlx4's keys are opaque; the emulators start here).
  static constexpr uint32_t kFirstKey = 0x100;

 private:
  uint32_t next_pd_ = 1;
  /// MRs by key - kFirstKey (handed out in order; reused only with reuse_), a constant-time
  /// look-up on every gather, scatter and remote access.
  std::vector<Mr> mrs_;
  std::vector<bool> live_;
  size_t live_count_ = 0;
  bool reuse_ = false;
  std::vector<uint32_t> free_;  // reuse_: indexes of deregistered MRs
  /// The index for a new MR `m`: a freed one (reuse_) or the next.
  uint32_t place(const Mr& m);
  /// Window `w` no longer counts on its MR's Mr::windows (unbound, rebound or gone).
  void unbind_from_mr(const Mr& w);
};

/// "unknown key", "key of another PD", "access flags", "out of bounds", "" for None.
const char* mr_refusal_str(MrRefusal r);

}  // namespace hcasim::hca
