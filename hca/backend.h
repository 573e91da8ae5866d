#pragma once
/// \file What a QP's transport (hca/queue_pair.h) asks of the HCA around it: memory, the CQs, the
/// wire and the timers. The core is time-free and moves no byte itself; each backend supplies
/// these: sim/ with simulated time and modelled transfers, emu/ with sockets, memcpy and wall-clock
/// timers. Every call comes from inside a QueuePair call, on the backend's own thread (emu/ holds
/// its QP lock); none may call back into the QueuePair.
#include <cstdint>
#include <string>

#include "hca/mr.h"
#include "hca/wqe.h"
#include "sdp/verbs.h"

namespace hcasim::hca {

/// Why an XRC target cannot use the XRC SRQ a request's XRCETH names (QpBackend::xrc_srq).
enum class XrcSrqRefusal : uint8_t {
  None,       ///< usable
  Unknown,    ///< no XRC SRQ has that number
  OtherXrcd,  ///< an XRC SRQ of another XRC domain than the target QP's (IBA A14)
};

class QpBackend {
 public:
  virtual ~QpBackend() = default;
  /// Why `key` does not allow [addr, addr + len) in `pd` with every bit of `need` (sdp::Access,
  /// kRemoteAtomic; local read needs none): MrTable::check on the backend's table and memory.
  virtual MrRefusal check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) = 0;
  /// Writes `len` bytes at local address `dst` (checked by the core): bytes `offset` .. offset +
  /// len of the payload of the packet being received, whose handle (`payload`) the backend gave
  /// to QueuePair::receive.
  virtual void write(sdp::Addr dst, uint64_t len, const void* payload, uint64_t offset) = 0;
  /// Writes `len` bytes the core holds (`src`: an atomic's original value, the zeros of a UD
  /// receive's GRH room) at local address `dst` (checked by the core).
  virtual void store(sdp::Addr dst, const void* src, uint64_t len) = 0;
  /// An atomic on the 8 bytes at local address `addr` (checked and 8-byte aligned): compare and
  /// swap (`compare_swap`: `compare_add` the compare value, `swap` the new one) or fetch and add
  /// (`compare_add` the addend), atomic with respect to the host's own atomics (IBV_ATOMIC_HCA and
  /// more). Returns the value before.
  virtual uint64_t atomic(sdp::Addr addr, bool compare_swap, uint64_t compare_add, uint64_t swap) = 0;
  /// Writes `c` to the QP's receive CQ (`recv`) or send CQ. False when the CQ refuses it (the
  /// overrun, hca/cq.h): the core then moves the QP to ERROR.
  virtual bool complete(const Cqe& c, bool recv) = 0;
  /// Requests (QueuePair::next_request) or responses (next_response) are waiting to be sent.
  virtual void kick() = 0;
  /// The local ACK timer (IBA 9.7.6.1.3, QpAttr::timeout; a code of 0 is no timer): `run` starts
  /// it afresh for the full timeout (a restart when it runs), !run stops it. On expiry the backend
  /// calls QueuePair::ack_timeout.
  virtual void ack_timer(bool run) = 0;
  /// The RNR NAK timer: QueuePair::rnr_timeout in `ns` (IBA table 45's value for the NAK's code).
  virtual void rnr_timer(double ns) = 0;
  /// A QP on an SRQ takes its next receive WQE from it: false when none waits.
  virtual bool take_srq_recv(sdp::RecvWr& out) {
    (void)out;
    return false;
  }
  /// XRC target (QpType::XrcRecv): the request in hand names XRC SRQ `srqn` in its XRCETH (IBA
  /// 1.2.1 annex A14). None when it is an XRC SRQ of the QP's XRC domain: `pd` is then set to the
  /// SRQ's PD (the domain of the request's R_Key and scatter checks), and take_srq_recv takes
  /// from that SRQ and receive completions go to its CQ until the next call. Else why not.
  virtual XrcSrqRefusal xrc_srq(uint32_t srqn, uint32_t& pd) {
    (void)srqn;
    (void)pd;
    return XrcSrqRefusal::Unknown;
  }
  /// A local WQE in its turn (WrExt::local(): a memory window's bind or invalidation) on the
  /// backend's memory table for QP `qpn` of PD `pd`: true when done, false when refused (the WQE
  /// then completes MW_BIND_ERR). A backend without memory windows refuses.
  virtual bool local_op(const SendWqe& w, uint32_t qpn, uint32_t pd) {
    (void)w;
    (void)qpn;
    (void)pd;
    return false;
  }
  /// The IETH R_Key `rkey` of a SEND with Invalidate that QP `qpn` of PD `pd` received whole
  /// (IBA 9.4.1.3, 10.6.7.2.4): the memory window of type 2 it names is invalidated on the
  /// backend's memory table (MrTable::invalidate_mw with the QP). MrRefusal::None when done,
  /// else why not (not a bound type 2 window, another PD's, bound through another QP); nothing
  /// changes then. A backend without memory windows refuses every key.
  virtual MrRefusal remote_invalidate(uint32_t rkey, uint32_t qpn, uint32_t pd) {
    (void)rkey;
    (void)qpn;
    (void)pd;
    return MrRefusal::UnknownKey;
  }
  /// The QP went to ERROR (its WRs flushed), for `why`.
  virtual void on_error(const std::string& why) { (void)why; }
};

}  // namespace hcasim::hca
