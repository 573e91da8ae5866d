#pragma once
/// \file An emulated QP: the HCA core's transport (hca/queue_pair.h: RC, UC or UD) with what the
/// emulator gives it (hca/backend.h): the process's memory, the CQs of emu/queues.h, a TCP stream
/// to the peer QP's process carrying one frame per packet (emu/wire.h; UD datagrams over the
/// adapter's UDP socket instead), the faults injected on what it sends (hca/wire_faults.h), and
/// Asio steady timers for the local ACK, RNR and reorder timers.
///
/// A QP is created in RESET without a peer and gets its stream either from the CM exchange
/// (attach before to_rts(remote_qpn): rdma_connect(3) / rdma_accept(3), sdp::Device), or at RTR
/// from out-of-band addressing (modify to RTR with the peer's LID on the emulated subnet and its
/// QPN: emu/subnet.h). Every call is serialised by the QP's lock; the socket and the timers live
/// on the adapter's I/O thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "emu/adapter.h"
#include "emu/queues.h"
#include "emu/wire.h"
#include "hca/queue_pair.h"
#include "hca/wire_faults.h"
#include "sdp/fifo.h"
#include "sdp/verbs.h"

namespace hcasim::emu {

/// How long a UC QP's requests wait for the peer's stream on the side that waits for it, ms,
/// before they go nowhere and complete as sent (UC has no ACK timer to bound the wait).
inline constexpr int kUcStreamWaitMs = 2000;

/// One encoded frame, shared between the write queue and the fault injector's held packet.
using Frame = std::shared_ptr<const std::vector<uint8_t>>;

class Qp final : public sdp::Verbs, public hca::QpBackend, public std::enable_shared_from_this<Qp> {
 public:
  using State = hca::QpState;
  /// Called (with the QP's lock held, on any thread) when a completion arrives on an armed CQ.
  /// Must not call back into the QP.
  using EventHandler = std::function<void()>;
  /// Called (with the QP's lock held, on the I/O thread) when the peer went away: `orderly`
  /// when it sent a CM DREQ, false when the stream broke. Must not call back into the QP.
  using LinkHandler = std::function<void(bool orderly, const std::string& why)>;

  /// Use Hca::create_qp.
  Qp(Hca& hca, hca::QpType type, uint32_t qpn, uint32_t pd, const sdp::QpCaps& caps,
     std::shared_ptr<CompQueue> send_cq, std::shared_ptr<CompQueue> recv_cq);
  ~Qp() override;

  // ---- sdp::Verbs ------------------------------------------------------------------------------
  /// reg_mr / dma_mr in the QP's PD.
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access) override;
  uint32_t dma_mr() override;
  /// post(): throws sdp::VerbsError (hca::post_error_text) when refused.
  void post_send(const sdp::SendWr& wr) override;
  void post_recv(const sdp::RecvWr& wr) override;
  int poll_cq(std::span<sdp::Wc> out) override;
  bool req_notify_cq() override;
  /// The HCA the QP belongs to.
  const Hca& hca() const { return hca_; }
  uint32_t qp_num() const override { return qpn_; }
  uint32_t max_send_wr() const override { return caps_.max_send_wr; }
  uint32_t max_recv_wr() const override { return caps_.max_recv_wr; }

  // ---- verbs with their errno (the verbs shim) ------------------------------------------------
  /// ibv_post_send(3) of `w` (SEND, WRITE, READ, the immediate and atomic kinds, UD with its
  /// address): 0, or the errno of the core's refusal (hca::post_errno). Inline data is copied now
  /// (IBV_SEND_INLINE: the buffer may be reused once the verb returns).
  int post(const hca::SendWqe& w);
  /// ibv_post_recv(3): 0 or the errno of the refusal.
  int post_receive(const sdp::RecvWr& wr);
  /// ibv_modify_qp(3) through the core's table (hca::QueuePair::modify): 0 or EINVAL, the QP then
  /// unchanged. Going to RESET removes the QP's CQEs from its CQs; to RTR (RC, UC) joins or opens
  /// the stream to the peer at `a.dlid` (the side with the smaller (LID, QPN) connects; a peer port
  /// not on the subnet moves the QP to ERROR, reason()); to RTR (UD) brings the port's datagram
  /// path up; to RTS starts sending.
  int modify(const hca::QpAttr& a, unsigned mask);
  /// modify() to `next` with the attributes the transition requires taken from the QP's (tests,
  /// and a QP without a stream). Throws sdp::VerbsError when refused.
  void modify(State next);
  /// The attributes (ibv_query_qp(3)), the state among them.
  hca::QpAttr attr();
  /// Receives come from `srq` (ibv_qp_init_attr.srq), not from post_recv. In RESET only.
  void set_srq(std::shared_ptr<Srq> srq);
  /// XRC target (hca::QpType::XrcRecv): its XRC domain `xrcd` (Hca::alloc_xrcd); each request's
  /// receive comes from the XRC SRQ of that domain its XRCETH names (hca::QpBackend::xrc_srq).
  /// In RESET only.
  void set_xrcd(uint32_t xrcd);
  /// The largest inline payload a post may carry, bytes (ibv_qp_init_attr.cap.max_inline_data).
  void set_max_inline_data(uint32_t bytes);
  /// rnr_retry as requester (0-7, 7 = for ever): the SDP programs keep 7, as ib_sdp does; the CM
  /// sets conn_param's. Throws sdp::VerbsError when > 7.
  void set_rnr_retry(uint8_t n);
  /// mlx4's max_inline_data as perftest uses it (912 B, MAX_INLINE; the platforms'
  /// hca.max_inline_data).
  static constexpr uint32_t kMaxInlineData = 912;

  // ---- the stream ------------------------------------------------------------------------------
  /// Gives the QP its stream to the peer (connected, CM not yet run). Before to_rts() only.
  void attach(boost::asio::ip::tcp::socket socket);
  /// The stream, for the CM messages before to_rts().
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  /// The adapter the QP belongs to (its PDs and MRs).
  Hca& adapter() { return hca_; }
  /// RESET -> INIT (receives may be posted), with all remote access (the CM sets them so when
  /// responder resources are offered: ib_cm's init_qp_attr). Throws sdp::VerbsError from another
  /// state than RESET.
  void to_init();
  /// The CM's RTR and RTS: the peer is QP `remote_qpn` on the attached stream, PSNs start at 0,
  /// the path MTU is the port's 2048 B, the adapter's retry attributes (the local ACK timeout
  /// `ack_timeout` when given: rdma_set_option's RDMA_OPTION_ID_ACK_TIMEOUT); the I/O starts.
  /// Does nothing when the QP is in ERROR already; throws sdp::VerbsError from another state
  /// than INIT, or for an ack_timeout over 31.
  void to_rts(uint32_t remote_qpn, std::optional<uint8_t> ack_timeout = std::nullopt);
  /// A stream the port accepted and authenticated for this QP from peer QP `from_qpn` of the
  /// port with LID `from_lid` (Hca's acceptor, on the I/O thread). In RTR or RTS: closed unless
  /// that is the QP's peer (its dest_qp_num and DLID) and the QP has no stream yet. In RESET,
  /// INIT or ERROR: kept for the next RTR, which takes it when it names that peer (a peer reset
  /// and connected anew while this QP is still in ERROR).
  void take_stream(boost::asio::ip::tcp::socket s, uint32_t from_qpn, uint16_t from_lid);
  /// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (ibv_create_qp_ex(3)): the QP's own multicast sends
  /// are not looped back to it (mlx4's MLX4_IB_QP_BLOCK_MULTICAST_LOOPBACK); other QPs of the
  /// port attached to the group still get them.
  void block_self_multicast() { block_self_mcast_ = true; }
  bool blocks_self_multicast() const { return block_self_mcast_.load(); }
  /// UD: sends the requests posted and not yet sent, now (the QP is about to be destroyed:
  /// an HCA has sent them by then). Nothing for another type or a QP not in RTS. close() does it too.
  void flush_datagrams();
  /// A UD datagram for this QP (Hca's datagram path, on the I/O thread); `grh`: the packet's
  /// GRH (hca::kGrhBytes, a multicast packet's), or null.
  void on_datagram(const Packet& f, const uint8_t* grh = nullptr);
  /// The peer QP's number (0 before RTR).
  uint32_t remote_qpn();
  /// Waits until every frame queued for the wire was written (or `deadline`): ACKs and
  /// responses already generated leave before the process exits, as a real HCA's would.
  void wait_written(std::chrono::steady_clock::time_point deadline);

  // ---- state, events, teardown ---------------------------------------------------------------
  /// Moves the QP to ERROR (ibv_modify_qp(3) to IBV_QPS_ERR): its WRs flush; the peer is not
  /// told (no DREQ). `why` is kept for reason().
  void to_error_state(const std::string& why);
  State state();
  /// Sets the completion event handler of the send CQ (nullptr: none).
  void set_event_handler(EventHandler h);
  /// Sets the link handler (nullptr: none).
  void set_link_handler(LinkHandler h);
  /// Blocks at most timeout_ms for a completion event; true when one came.
  bool wait_cq_event(int timeout_ms);
  /// Waits at most timeout_ms until every send WR completed; false on timeout or ERROR.
  bool drain(int timeout_ms);
  /// Moves the QP to ERROR at once (its WRs flush) and, when it was connected, sends the CM
  /// DREQ (rdma_disconnect(3)); close() waits for the DREQ to leave before closing the socket.
  void disconnect();
  /// The owner is done (ibv_destroy_qp(3)): the QP's CQEs leave its CQs (the other QPs' stay, in
  /// order), it writes no more, the socket closes (on the I/O thread, after what is queued) and
  /// waiters return.
  void close();
  /// Why the QP went to ERROR ("" while it has not).
  std::string reason();
  /// What the faults did on this QP's sending side, and its retransmissions, so far.
  model::FaultStats fault_stats();
  /// Frames this QP received and dropped for a bad ICRC (IBA 7.8.1): the peer's corrupted ones.
  uint64_t icrc_drops();
  /// Frames and datagrams this QP received and dropped silently for failing a header check
  /// (IBA 9.6: the BTH's destination QP is another QP's; a UD datagram for a QP that is not UD).
  /// Those failing the P_Key check are the port's count (Hca::pkey_violations).
  uint64_t header_drops();
  /// The payload this QP's packets carried, bytes: `sent`, of the packets it put on the wire
  /// (requests, RDMA READ responses; retransmissions included, faults' drops too), and
  /// `received`, of the packets it took from the wire (after the ICRC, header and P_Key checks),
  /// with their counts. Headers and ACKs carry no payload.
  struct PayloadStats {
    uint64_t sent = 0;              ///< payload bytes sent
    uint64_t received = 0;          ///< payload bytes received
    uint64_t packets_received = 0;  ///< packets received (the sent ones: fault_stats().packets)
  };
  PayloadStats payload_stats();

 private:
  /// post(): the core's check of `w` (and the inline copy when accepted), under m_.
  hca::PostCheck post_checked(const hca::SendWqe& w);
  friend class Hca;

  // hca::QpBackend (called with m_ held)
  hca::MrRefusal check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) override;
  bool local_op(const hca::SendWqe& w, uint32_t qpn, uint32_t pd) override;
  hca::MrRefusal remote_invalidate(uint32_t rkey, uint32_t qpn, uint32_t pd) override;
  void write(sdp::Addr dst, uint64_t len, const void* payload, uint64_t offset) override;
  void store(sdp::Addr dst, const void* src, uint64_t len) override;
  uint64_t atomic(sdp::Addr addr, bool compare_swap, uint64_t compare_add, uint64_t swap) override;
  bool complete(const hca::Cqe& c, bool recv) override;
  void kick() override;
  void ack_timer(bool run) override;
  void rnr_timer(double ns) override;
  bool take_srq_recv(sdp::RecvWr& out) override;
  hca::XrcSrqRefusal xrc_srq(uint32_t srqn, uint32_t& pd) override;
  void on_error(const std::string& why) override;

  // All below run with m_ held; the socket and the timers are touched on the I/O thread only.
  bool on_io_thread();
  /// Runs `f` on the I/O thread, with m_ held.
  template <class F>
  void on_io(F f);
  /// Sends what the core has: responses first, then requests, while the write queue has room.
  void pump();
  /// Arms link_timer_ for requests waiting for the peer's stream: RETRY_EXC_ERR if it has not come
  /// after timeout x (retry_cnt + 1).
  void wait_for_link();
  /// flush_datagrams, with m_ held.
  void send_posted_datagrams();
  std::atomic<bool> block_self_mcast_{false};
  /// One packet of the core onto the wire, through the fault injector.
  void send_packet(const hca::Packet& p);
  /// The payload of request `p`: its gather list (or the inline copy) from its message offset.
  void gather(const hca::Packet& p, std::vector<uint8_t>& out);
  /// Writes a frame as it is (CM DREQ; the injector's output).
  void send_frame(Frame f);
  void start_write();
  void start_read();
  void on_frame(std::span<const uint8_t> body);
  /// The P_Key check of a received packet: false (the packet dropped and counted by the
  /// adapter) when `f`'s P_Key does not match the QP's.
  bool pkey_ok(const Packet& f);
  /// Adds a packet that passed the checks to payload_ (under m_).
  void count_received(const Packet& f);
  /// The stream is there and the QP at RTR or later: reading starts, and sending at RTS.
  /// A connected QP gone to RESET leaves its stream (IBA 10.3.1: RESET forgets the peer): the
  /// socket closes, the write queue and the read buffer empty, and the next RTR connects anew.
  /// On the I/O thread, under the lock.
  void reset_stream();
  void start_io();
  /// Connects the out-of-band stream to the peer at `dlid` (the smaller (LID, QPN) does), through
  /// the subnet's handshake (emu/auth.h).
  void open_stream(uint16_t dlid, uint32_t rq_psn);
  void link_down(const std::string& why, bool orderly);
  /// No stream to the peer (no port with its LID, no answer, not the subnet's, or none came in
  /// time on the waiting side): RC goes to ERROR with `why`; UC sends on into nothing (uc_void_).
  void no_stream(const std::string& why);
  void arm_reorder();

  Hca& hca_;
  hca::QpType type_;
  uint32_t qpn_;
  uint32_t pd_;
  sdp::QpCaps caps_;
  std::shared_ptr<CompQueue> scq_, rcq_;
  bool own_cq_ = false;  // Hca::create_qp(caps): the CQ is this QP's alone
  std::shared_ptr<Srq> srq_;
  uint32_t xrcd_ = 0;           // XRC target: its XRC domain
  std::shared_ptr<Srq> xsrq_;   // XRC target: the XRC SRQ of the request in hand (xrc_srq)
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer ack_timer_, rnr_timer_, reorder_timer_;
  boost::asio::steady_timer link_timer_;  // wait_for_link
  AccessLock m_{hca_};  // the QP's lock: its MR accesses hold their MRs (Hca::dereg_mr)
  std::condition_variable_any cv_;  // drain, close, wait_written
  hca::QueuePair core_;
  hca::WireFaults<Frame> faults_;
  std::string reason_;
  bool closed_ = false;
  LinkHandler on_link_;
  /// Inline payloads, copied at post, by WQE seq (dropped once the core has retired the WQE).
  sdp::Fifo<std::pair<uint64_t, std::vector<uint8_t>>> inline_;
  uint64_t icrc_drops_ = 0;
  uint64_t header_drops_ = 0;
  PayloadStats payload_;
  // timers (generation counters: a handler of an older arming does nothing)
  bool ack_running_ = false;
  uint64_t ack_gen_ = 0, rnr_gen_ = 0;
  bool pump_scheduled_ = false;
  // the stream
  bool linked_ = false;     // the stream is read (CM: from to_rts; else from RTR)
  bool oob_ = false;        // connected at RTR (no CM): a vanished peer says nothing
  bool peer_gone_ = false;  // oob_: the stream ended; requests time out
  /// The stream's generation: a QP reset to RESET drops its stream (reset_stream) and the
  /// handlers of the old one's reads and writes, which carry their generation, do nothing.
  uint64_t stream_gen_ = 0;
  bool link_wait_ = false;  // link_timer_ runs: requests wait for a stream that may never come
  bool uc_void_ = false;    // UC without a stream (none came, or none can): frames dropped, sends complete
  std::optional<boost::asio::ip::tcp::socket> pending_;  // accepted before RTR
  uint32_t pending_from_ = 0;
  uint16_t pending_lid_ = 0;
  // the wire
  sdp::Fifo<Frame> wq_;
  std::vector<Frame> batch_;  // frames being written
  size_t wq_bytes_ = 0;
  bool writing_ = false, shutdown_after_write_ = false, close_after_write_ = false;
  std::vector<uint8_t> rbuf_;
  size_t rlen_ = 0;
  std::vector<uint8_t> scratch_;  // a packet's payload being encoded
};

}  // namespace hcasim::emu
