#pragma once
/// \file The responder of a QP's transport (IBA 1.2.1 9.7.5, 9.8; rxe_resp.c cuts the same work
/// into its RESPST_* states): request packets in, responses out. In order, for each request: its
/// PSN against the expected one (execute, a duplicate, or a gap: one NAK PSN sequence error, then
/// silence until the gap closes, IBA 9.7.5.1.1), the opcode's place in its message, the QP's access
/// flags, the resources (a receive WQE for a SEND and a WRITE with immediate: RNR NAK without one;
/// the RDMA READ and atomic slots of max_dest_rd_atomic), the lengths (every packet but the last
/// one full MTU; the message within the receive WQE or the RETH's length), the R_Key (its MR in the
/// QP's PD, with the access, covering the range), then the execution (scatter, write, read,
/// atomic), the receive completion and the acknowledgement. A duplicate SEND or WRITE is ACKed
/// again, a duplicate RDMA READ executed again (reads are idempotent) and a duplicate atomic
/// answered with its saved result (IBA 9.7.5.1.2, 9.4.5). Errors are the IBA's classes: a class B
/// error answers NAK and drops the packet, a class C error answers NAK (invalid request, remote
/// access error or remote operational error) and moves the QP to ERROR (IBA 9.9.3.1); UC and UD
/// drop in silence (class D, IBA 9.8.2, 9.8.3), but a UD datagram its receive WQE cannot hold
/// (LOC_LEN_ERR) or write (LOC_PROT_ERR) completes that WQE in error and moves the QP to ERROR
/// (IBA 1.3 10.3.1).
///
/// Responses leave in PSN order through one queue (next_response): ACKs and NAKs, RDMA READ
/// responses packet by packet, atomic ACKs. An ACK queued behind an unsent ACK replaces it (ACKs
/// are cumulative, IBA 9.7.5.1.1).
#include <cstdint>
#include <optional>
#include <string>

#include "hca/packet.h"
#include "sdp/fifo.h"
#include "sdp/verbs.h"

namespace hcasim::hca {

class QueuePair;

class Responder {
 public:
  explicit Responder(QueuePair& qp) : qp_(qp) {}
  /// Expects `rq_psn` next (ibv_modify_qp to RTR), nothing in progress, nothing queued.
  void reset(uint32_t rq_psn);
  /// One request train (or a UD datagram) whose payload handle is `payload`.
  void receive(const Packet& p, const void* payload);
  /// True when a response waits.
  bool has_response() const { return !out_.empty(); }
  /// The next response train of at most `max_pkts` packets into `out` (an RDMA READ response may
  /// take several calls); false when none waits. Its `va` is the local address its payload is read
  /// from (READ responses).
  bool next_response(uint32_t max_pkts, Packet& out);
  /// The QP went to ERROR: RDMA READ responses not yet sent are dropped (an ACK or NAK already
  /// queued still leaves), the receive WQE in progress is handed back for its flush.
  std::optional<sdp::RecvWr> on_error();
  /// The expected PSN.
  uint32_t epsn() const { return epsn_; }


 private:
  /// An RDMA READ or atomic the responder answered, kept for duplicates (IBA 9.7.5.1.2: up to
  /// max_dest_rd_atomic of them).
  struct Resource {
    bool read = true;
    uint32_t first_psn = 0, last_psn = 0;
    sdp::Addr va = 0;
    uint32_t rkey = 0;
    uint32_t len = 0;
    uint64_t orig = 0;  ///< atomics: the value before
    uint32_t pd = 0;    ///< the PD its R_Key was checked in (an XRC target's: its XRC SRQ's)
  };
  /// A response waiting to leave.
  struct Response {
    enum class Kind : uint8_t { Ack, Read, AtomicAck } kind = Kind::Ack;
    uint32_t psn = 0;
    uint8_t syndrome = 0;
    uint32_t msn = 0;
    // Read: the remote buffer and the next packet of npkts
    sdp::Addr va = 0;
    uint32_t rkey = 0;
    uint32_t len = 0;
    uint32_t npkts = 0, next = 0;
    uint64_t orig = 0;  ///< AtomicAck
    uint32_t pd = 0;    ///< Read: the PD its R_Key is checked in again for every packet
  };
  /// RC: the PSN check. True when `p` (shortened to start at the expected PSN when its first
  /// packets are duplicates: `poff` is then the payload bytes skipped) is to be executed.
  bool check_psn(Packet& p, uint64_t& poff);
  void duplicate(const Packet& p);
  /// Executes `p`, whose payload starts `poff` bytes into the payload of `payload`.
  void execute(const Packet& p, const void* payload, uint64_t poff);
  void execute_send(const Packet& p, const void* payload, uint64_t poff);
  void execute_write(const Packet& p, const void* payload, uint64_t poff);
  void execute_read(const Packet& p);
  /// Queues the READ response to request `p` (npkts packets), for the PSNs it asked.
  void queue_read_response(const Packet& p, uint32_t npkts, uint32_t pd);
  /// XRC target: the XRC SRQ `p`'s XRCETH names (QpBackend::xrc_srq), whose PD the memory
  /// accesses of the request use and whose receive WQEs and CQ its receive takes (IBA A14).
  /// False when refused: a request in sequence gets NAK Invalid Request and the QP goes to ERROR
  /// (class C, IBA 9.9.3.1.3); others are dropped.
  bool xrc_select(const Packet& p);
  /// The PD the responder's memory accesses are checked in: the QP's; an XRC target's is the PD
  /// of the XRC SRQ the request in hand names (xrc_select).
  uint32_t mem_pd() const;
  void execute_atomic(const Packet& p);
  void execute_ud(const Packet& p, const void* payload);
  /// The receive WQE of a SEND or a WRITE with immediate: the QP's own or its SRQ's.
  bool take_recv();
  /// Scatters the train's payload (from `poff` of `payload`) at message offset msg_off_ of the
  /// receive WQE; false (nothing written) when an SGE's key refuses it.
  bool scatter(const Packet& p, const void* payload, uint64_t poff);
  void ack(uint32_t psn, uint8_t syndrome);
  /// A class C error (IBA 9.9.3.1.3): NAK with `syndrome` (RC only), the receive WQE in progress
  /// (if any) completes with `recv_status`, the QP goes to ERROR for `why`.
  void fatal(uint32_t psn, uint8_t syndrome, sdp::WcStatus recv_status, const std::string& why);
  /// A UC or UD packet that cannot be executed: the message it belongs to is dropped.
  void drop_message();
  void complete_recv(sdp::WcStatus status, uint32_t byte_len, const Packet* p);
  void add_resource(const Resource& r);
  const Resource* find_resource(uint32_t psn) const;

  QueuePair& qp_;
  uint32_t epsn_ = 0;
  uint32_t xrc_pd_ = 0;       ///< XRC target: the PD of the XRC SRQ of the request in hand
  bool nak_sent_ = false;  ///< a NAK (or RNR NAK) for the current gap went out
  uint32_t msn_ = 0;       ///< messages completed (AETH MSN, 24 bits)
  // the message in progress
  bool in_msg_ = false;
  OpKind msg_kind_ = OpKind::Send;
  std::optional<sdp::RecvWr> rwqe_;  ///< SEND / WRITE with immediate: the receive WQE taken
  uint64_t msg_off_ = 0;             ///< bytes of the message executed so far
  sdp::Addr wva_ = 0;                ///< WRITE: the RETH's address, key and length
  uint32_t wrkey_ = 0;
  uint64_t wlen_ = 0;
  bool drop_msg_ = false;            ///< UC: the rest of the message is dropped
  sdp::Fifo<Resource> res_;
  sdp::Fifo<Response> out_;
};

}  // namespace hcasim::hca
