#pragma once
/// \file The requester of a QP's transport (IBA 1.2.1 9.7.4, 9.8; the Linux soft-RoCE driver's
/// rxe_req.c cuts the same work): send WQEs to packets. It gives each WQE its PSNs (one per packet
/// of the path MTU; an RDMA READ as many as its response has packets), checks its gather list and
/// size before the first packet leaves, holds RDMA READs and atomics to max_rd_atomic outstanding,
/// sets AckReq on the last packet of each message, goes back to an earlier PSN when the completer
/// says so (go-back-N), and waits while an RNR NAK's timer runs. Time-free: a backend asks for the
/// next packet when its wire can take one.
#include <cstdint>

#include "hca/packet.h"

namespace hcasim::hca {

class QueuePair;

class Requester {
 public:
  explicit Requester(QueuePair& qp) : qp_(qp) {}
  /// Starts at `sq_psn` (ibv_modify_qp to RTS), nothing outstanding.
  void reset(uint32_t sq_psn);
  /// True when next() has a packet: the QP is in RTS, no RNR wait, a WQE or a retransmission
  /// waits, and an RDMA READ or atomic to start fits under max_rd_atomic.
  bool ready() const;
  /// The next train of at most `max_pkts` packets (consecutive packets of one WQE; an RDMA READ
  /// request and an atomic are one packet), into `out`; false when ready() is not. A WQE that fails
  /// its checks before its first packet (an SGE outside its MR: LOC_PROT_ERR; a message over
  /// max_msg_sz, or a UD message over the port's MTU: LOC_LEN_ERR) sends nothing: it completes in
  /// order with that status and the QP goes to ERROR. UC and UD WQEs complete once sent.
  bool next(uint32_t max_pkts, Packet& out);
  /// When ready(): the seq of the WQE the next train belongs to, and true when that train will be
  /// its first (the backend times a WQE's fetch for it).
  bool peek(uint64_t& seq, bool& fresh) const;
  /// Go-back-N: the next packet is the one with `psn` (a PSN of a WQE still in the send queue) and
  /// everything after it again.
  void rewind(uint32_t psn);
  /// The WQE at the front of the send queue was retired (the send queue popped it).
  void retired_front();
  /// An RDMA READ or atomic completed: one more may start.
  void rd_atomic_done() { --rd_outstanding_; }
  /// An RNR NAK's timer runs (true) or ran out (false): nothing is sent meanwhile.
  void set_rnr_wait(bool w) { rnr_wait_ = w; }
  bool rnr_wait() const { return rnr_wait_; }
  /// The first PSN not yet used by a WQE.
  uint32_t next_psn() const { return npsn_; }
  /// The first PSN never sent: packets before it (and at or after the completer's una) are on the wire.
  uint32_t high_psn() const { return hi_psn_; }

 private:
  /// The checks of a WQE's first packet; sets its PSNs, or its local error.
  void start(size_t index);
  QueuePair& qp_;
  uint32_t npsn_ = 0, hi_psn_ = 0;
  size_t next_ = 0;      ///< index in the send queue of the WQE sent next
  uint32_t pkt_ = 0;     ///< its packet sent next
  uint32_t rd_outstanding_ = 0;
  bool rnr_wait_ = false;
  bool halted_ = false;  ///< a WQE failed its checks: nothing after it is sent
};

}  // namespace hcasim::hca
