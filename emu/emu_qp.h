#pragma once
/// \file The emulated HCA's parts, shared by its two faces: sdp::Device (emu/emu_device.cpp, the
/// `--device emu` mode) and the libibverbs / librdmacm look-alike (emu/verbs_shim/, preloaded in
/// front of rdma-core). An Hca is the adapter (one I/O thread, one PD's MR table, QP numbers);
/// a CompQueue is a CQ any number of QPs complete into; a Qp is an RC QP, created in RESET
/// without a peer and given its TCP stream either when the CM exchange (REQ / REP / RTU,
/// emu/wire.h) starts, as ibv_create_qp(3) comes before rdma_connect(3) / rdma_accept(3), or
/// at RTR from out-of-band addressing (to_rtr: the peer's LID on the emulated subnet,
/// emu/subnet.h). emu/emu_device.h describes what is emulated.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "emu/subnet.h"
#include "emu/wire.h"
#include "hca/cq.h"
#include "hca/mr.h"
#include "hca/qp.h"
#include "hca/rc.h"
#include "model/fault.h"
#include "sdp/device.h"
#include "sdp/process_memory.h"
#include "sdp/verbs.h"

namespace hcasim::emu {

/// How long a CM exchange (REQ -> REP -> RTU) may take before the side waiting gives up, ms.
inline constexpr int kCmTimeoutMs = 10000;

/// One encoded frame, shared between the write queue and the retransmission list.
using Frame = std::shared_ptr<const std::vector<uint8_t>>;

/// Reads one whole frame from `s` (blocking, not on the I/O thread) within `deadline`: the CM
/// messages, before the QP's I/O runs. Throws sdp::DeviceError naming `peer` on timeout, EOF, a socket
/// error or a malformed frame.
Packet read_frame_until(boost::asio::ip::tcp::socket& s, std::chrono::steady_clock::time_point deadline,
                        const std::string& peer);
/// Writes one whole frame to `s` (blocking). Throws sdp::DeviceError naming `peer` on a socket error.
void write_frame(boost::asio::ip::tcp::socket& s, const Packet& p, const std::string& peer);

class Qp;

/// An MR access bit beyond sdp::Access: IBV_ACCESS_REMOTE_ATOMIC (the target of CmpSwap and
/// FetchAdd), kept in the same MR table.
inline constexpr unsigned kRemoteAtomic = 8;

/// A completion as the emulated CQ holds it: sdp::Wc and what ibv_wc carries beyond it.
struct Cqe {
  /// ibv_wc_opcode beyond sdp::WcOpcode.
  enum class Kind : uint8_t { Plain, RecvRdmaWithImm, CompSwap, FetchAdd };
  sdp::Wc wc{};
  Kind kind = Kind::Plain;
  uint32_t src_qp = 0;    ///< the peer QP (receive completions)
  uint16_t slid = 0;      ///< UD receives: the sender port's LID
  bool with_imm = false;  ///< IBV_WC_WITH_IMM: imm is the sender's imm_data
  uint32_t imm = 0;
};

/// A send WR's kind beyond sdp::WrOpcode (ibv_wr_opcode): the immediate-data and atomic ops.
/// An atomic is posted as an sdp::WrOpcode::RdmaRead of the 8 bytes its SGE names (the
/// original remote value lands there) to `remote_addr` with `rkey`.
struct WrExt {
  enum class Kind : uint8_t { None, SendImm, WriteImm, CmpSwap, FetchAdd };
  Kind kind = Kind::None;
  uint32_t imm = 0;          ///< wr.imm_data, passed through as given
  uint64_t compare_add = 0;  ///< CmpSwap: the compare value; FetchAdd: the addend
  uint64_t swap = 0;         ///< CmpSwap: the swap value
  uint16_t ud_dlid = 0;      ///< UD: the address handle's port LID
  uint32_t ud_qpn = 0;       ///< UD: wr.ud.remote_qpn
  uint32_t ud_qkey = 0;      ///< UD: wr.ud.remote_qkey (high bit set: the QP's own Q_Key)
  bool atomic() const { return kind == Kind::CmpSwap || kind == Kind::FetchAdd; }
};

/// A completion queue (ibv_create_cq(3)): hca::Cq's depth and overrun under a lock of its
/// own, the arming of ibv_req_notify_cq(3) and the completion event. Any number of QPs complete
/// into it, each its send or receive side or both; completions are polled in the order they
/// were written. Lock order: a Qp's lock, then its CQs'.
class CompQueue {
 public:
  /// Called (with the CQ's lock held) for the completion event of an armed CQ. Must not call
  /// back into the CQ or a QP.
  using EventHandler = std::function<void()>;
  explicit CompQueue(uint32_t depth) : cq_(depth) {}
  /// Writes `c`; an armed CQ disarms and raises its event. False on overrun (hca::Cq::push).
  bool push(const Cqe& c);
  /// ibv_poll_cq(3): up to out.size() completions, oldest first; how many.
  int poll(std::span<Cqe> out);
  /// The same, sdp::Wc only (the sdp::Verbs face).
  int poll(std::span<sdp::Wc> out);
  /// ibv_req_notify_cq(3): the next completion raises one event. True when completions wait
  /// already (the caller polls again before it sleeps).
  bool arm();
  /// Sets the event handler (nullptr: none; wait_event still sees events).
  void set_event_handler(EventHandler h);
  /// Blocks at most timeout_ms for a completion event (taking it); false on timeout or wake().
  bool wait_event(int timeout_ms);
  /// Makes every wait_event return (a QP closed).
  void wake();
  /// Removes the completions of QP `qpn` (it went to RESET, IBA 10.3.1).
  void remove_qp(uint32_t qpn);
  uint32_t depth() const { return cq_.depth(); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  hca::BasicCq<Cqe> cq_;
  bool armed_ = false, event_ = false;
  uint64_t wakes_ = 0;
  EventHandler on_event_;
};

/// A shared receive queue (ibv_create_srq(3), IBA 10.2.9): receive WRs that any QP created on
/// it consumes in the order posted, instead of a receive queue of its own. A QP going to ERROR
/// flushes none of them (they belong to the SRQ). Lock order: a Qp's lock, then its SRQ's.
class Srq {
 public:
  explicit Srq(uint32_t max_wr) : max_wr_(max_wr) {}
  /// ibv_post_srq_recv(3): false when max_wr WRs wait already.
  bool post(const sdp::RecvWr& wr);
  /// The oldest WR, taken; nothing when none waits (the responder answers RNR NAK).
  std::optional<sdp::RecvWr> take();
  uint32_t max_wr() const { return max_wr_; }

 private:
  std::mutex m_;
  std::deque<sdp::RecvWr> q_;
  uint32_t max_wr_;
};

/// What ibv_modify_qp(3) gives at INIT -> RTR without the CM (IBA 11.2.4.2, the RC attributes).
struct RtrAttr {
  uint16_t dlid = 0;           ///< the peer port's LID on the emulated subnet (emu/subnet.h)
  uint32_t dest_qpn = 0;       ///< the peer QP
  uint32_t rq_psn = 0;         ///< the first PSN expected from it (24 bits)
  uint8_t min_rnr_timer = hca::kDefaultMinRnrTimer;  ///< IBA table 45 code, 0-31
};
/// What ibv_modify_qp(3) gives at RTR -> RTS.
struct RtsAttr {
  uint32_t sq_psn = 0;         ///< the first PSN sent (24 bits)
  uint8_t timeout = 14;        ///< local ACK timeout code: 4.096 us x 2^timeout, 0 = none
  uint8_t retry_cnt = 7;       ///< 0-7
  uint8_t rnr_retry = 7;       ///< 0-7, 7 = for ever
};

/// The adapter: the I/O thread every QP's socket runs on, the MR table of its one PD (lkey =
/// rkey; hca::MrTable, under a lock) and the QP numbers. Destroying it closes every QP still
/// open and joins the thread.
class Hca {
 public:
  /// `memory`: the arena sdp::Device's MRs must lie in and dma_mr() covers; nullptr (the verbs
  /// shim) lets an MR cover any address range of the process and has no dma_mr().
  /// `faults` and `retry` apply to every QP of the adapter (each QP draws its own fates,
  /// seeded with its QPN).
  explicit Hca(const sdp::ProcessMemory* memory, const model::FaultConfig& faults = {},
               const model::RcRetry& retry = {});
  ~Hca();
  Hca(const Hca&) = delete;
  Hca& operator=(const Hca&) = delete;

  /// Registers [addr, addr+len) with `access` (sdp::Access bits) and returns its key (ibv_reg_mr(3)).
  /// Throws sdp::VerbsError when the range is outside the arena (when there is one) or wraps
  /// past 2^64.
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access);
  /// Deregisters `key` (ibv_dereg_mr(3)); false when no MR has it.
  bool dereg_mr(uint32_t key);
  /// A key covering the whole arena (ib_get_dma_mr). Throws sdp::VerbsError without an arena.
  uint32_t dma_mr();
  /// True when `key` names an MR covering [addr, addr+len) with every access bit of `need`.
  bool mr_allows(uint32_t key, sdp::Addr addr, uint64_t len, unsigned need);
  /// A new RC QP in RESET with a CQ of its own for both queues, sized by `caps`, not yet
  /// attached to a peer (the sdp::Verbs face).
  std::shared_ptr<Qp> create_qp(const sdp::QpCaps& caps);
  /// A new RC QP in RESET completing into `send_cq` and `recv_cq` (may be one CQ; ibv_create_qp(3)).
  std::shared_ptr<Qp> create_qp(const sdp::QpCaps& caps, std::shared_ptr<CompQueue> send_cq,
                                std::shared_ptr<CompQueue> recv_cq);
  /// The LID of the adapter's port on the emulated subnet (emu/subnet.h). The first call
  /// claims it and starts accepting QP streams on a 127.0.0.1 TCP port; throws
  /// sdp::DeviceError when the subnet directory cannot be used.
  uint16_t lid();
  /// Waits at most `ms` until every QP's queued frames were written (Qp::wait_written).
  void quiesce(int ms);
  /// Gives the port's LID back to the subnet (its claim file removed; emu/subnet.h), at exit:
  /// the next process may take it without the stale-owner check.
  void release_port();
  /// The port GUID (guid_of_lid(lid())).
  uint64_t guid() { return guid_of_lid(lid()); }
  /// Sends one UD datagram (an encoded frame) to the port with `dlid`: a UDP datagram to
  /// 127.0.0.1 at that port's published port number (its datagram path, bound with lid()).
  /// False when no port has that LID or the send failed (UD: the datagram is lost).
  bool send_datagram(uint16_t dlid, const std::vector<uint8_t>& frame);
  /// The I/O context of the adapter's thread (sockets of QPs and CM streams live on it).
  boost::asio::io_context& io() { return io_; }

 private:
  const sdp::ProcessMemory* memory_;
  model::FaultConfig faults_;
  model::RcRetry retry_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
  std::mutex mr_lock_, qps_lock_;
  hca::MrTable mrs_;  // under mr_lock_
  uint32_t pd_ = 0;   // the one PD
  uint32_t next_qpn_ = 0x48;  // under qps_lock_
  std::vector<std::weak_ptr<Qp>> qps_;
  // the subnet port (lid()): its acceptor of QP streams on the I/O thread
  std::mutex port_lock_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<SubnetPort> port_;
  std::unique_ptr<boost::asio::ip::udp::socket> udp_;  // the datagram path (I/O thread)
  std::vector<uint8_t> dgram_;
  std::mutex send_lock_;
  int send_fd_ = -1;                                    // the sending side, under send_lock_
  void accept_next();
  void receive_datagram();
  /// The QP with `qpn`, or null.
  std::shared_ptr<Qp> find_qp(uint32_t qpn);
};

/// An RC QP with its own CQ, connected to one peer over one TCP stream (IBA 1.2.1 ch. 9-10;
/// the QP state machine of ibv_modify_qp(3), driven by the CM as librdmacm does).
class Qp final : public sdp::Verbs, public std::enable_shared_from_this<Qp> {
 public:
  /// The QP states the emulation goes through (ibv_qp_state; SQD and SQE are not emulated):
  /// the core's, with its transitions (hca::transition_allowed).
  using State = hca::QpState;

  /// Called (with the QP's lock held, on any thread) when a completion arrives on an armed CQ:
  /// a completion event (ibv_get_cq_event(3)). Must not call back into the QP.
  using EventHandler = std::function<void()>;
  /// Called (with the QP's lock held, on the I/O thread) when the peer went away: `orderly`
  /// when it sent a CM DREQ, false when the stream broke. Must not call back into the QP.
  using LinkHandler = std::function<void(bool orderly, const std::string& why)>;

  friend class Hca;
  /// Use Hca::create_qp. `faults`: what the QP's sending side does to its frames (seeded with
  /// the QPN); `retry`: its retry_cnt, local ACK timeout and rnr_retry.
  Qp(Hca& hca, uint32_t qpn, const sdp::QpCaps& caps, std::shared_ptr<CompQueue> send_cq,
     std::shared_ptr<CompQueue> recv_cq, const model::FaultConfig& faults = {}, const model::RcRetry& retry = {});

  // sdp::Verbs
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access) override;
  uint32_t dma_mr() override;
  void post_send(const sdp::SendWr& wr) override;
  /// post_send with an immediate-data or atomic kind (ibv_post_send(3)'s *_WITH_IMM and
  /// ATOMIC_* opcodes). Throws sdp::VerbsError as post_send, and for an atomic whose SGE is not
  /// 8 bytes or whose remote_addr is not 8-byte aligned.
  void post_send_ext(const sdp::SendWr& wr, const WrExt& x);
  void post_recv(const sdp::RecvWr& wr) override;
  int poll_cq(std::span<sdp::Wc> out) override;
  bool req_notify_cq() override;
  uint32_t qp_num() const override { return qpn_; }
  uint32_t max_send_wr() const override { return caps_.max_send_wr; }
  uint32_t max_recv_wr() const override { return caps_.max_recv_wr; }

  /// Gives the QP its stream to the peer (connected, CM not yet run). Before to_rts() only.
  void attach(boost::asio::ip::tcp::socket socket);
  /// The stream, for the CM messages before to_rts().
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  /// RESET -> INIT (receives may be posted).
  void to_init();
  /// ibv_modify_qp(3) without the CM: to RESET (the queues and the CQ empty), INIT or ERROR
  /// (as to_error_state). RTR and RTS come with the CM exchange (to_rts). Throws
  /// sdp::VerbsError for a transition hca::transition_allowed refuses, and for RTR / RTS.
  /// For a QP that has not been given a stream (tests, the verbs shim before rdma_connect).
  void modify(State next);
  /// The largest inline payload a post may carry, bytes (ibv_qp_init_attr.cap.max_inline_data;
  /// default kMaxInlineData).
  void set_max_inline_data(uint32_t bytes);
  /// mlx4's max_inline_data as perftest uses it (912 B, MAX_INLINE; the platforms'
  /// hca.max_inline_data).
  static constexpr uint32_t kMaxInlineData = 912;
  /// The min_rnr_timer code (IBA table 45) this QP's RNR NAKs carry as responder; default
  /// hca::kDefaultMinRnrTimer (0.64 ms). Throws sdp::VerbsError when > 31.
  void set_min_rnr_timer(uint8_t code);
  /// INIT -> RTR -> RTS with the peer's QPN, and the I/O starts (read loop on the I/O thread).
  /// Does nothing when the QP is in ERROR already.
  void to_rts(uint32_t remote_qpn);
  /// INIT -> RTR without the CM (ibv_modify_qp(3)): the peer is QP a.dest_qpn on the port with
  /// LID a.dlid. The side whose (LID, QPN) is the smaller of the two opens the stream (a TCP
  /// connection to the peer port's 127.0.0.1 port, then a CM REQ frame naming the peer QP in
  /// dest_qpn and itself in local_qpn); the other side takes it when its port accepts it, before
  /// or after its own RTR. Either way both may go to RTR at once. Requests arriving before the
  /// stream is read wait in it (the QP reads from RTR on). A peer port that is not on the
  /// subnet puts the QP in ERROR (reason()). Throws sdp::VerbsError when not in INIT.
  void to_rtr(const RtrAttr& a);
  /// RTR -> RTS (ibv_modify_qp(3)): the first PSN sent and the requester's retry settings.
  /// Throws sdp::VerbsError when not in RTR or for a count out of range.
  void to_rts(const RtsAttr& a);
  /// A stream the port accepted for this QP from peer QP `from_qpn` (Hca's acceptor, on the
  /// I/O thread). Closed when the QP has another peer already.
  void take_stream(boost::asio::ip::tcp::socket s, uint32_t from_qpn);
  /// The peer QP's number (0 before RTR).
  uint32_t remote_qpn();
  /// Waits until every frame queued for the wire was written (or `deadline`): ACKs and
  /// responses already generated leave before the process exits, as a real HCA's would.
  void wait_written(std::chrono::steady_clock::time_point deadline);
  /// Receives come from `srq` (ibv_qp_init_attr.srq), not from post_recv. In RESET only.
  void set_srq(std::shared_ptr<Srq> srq);
  /// Unreliable Datagram (IBV_QPT_UD, IBA 9.8.3) with Q_Key `qkey`: no stream and no peer; a
  /// SEND goes to the address of its WrExt (ud_dlid, ud_qpn, ud_qkey) through the port's
  /// datagram path and completes once sent; a receive gets 40 bytes of GRH room (zero) then the
  /// payload, src_qp and slid. In RESET only.
  void set_datagram(uint32_t qkey);
  /// The Q_Key (ibv_modify_qp's IBV_QP_QKEY).
  void set_qkey(uint32_t qkey);
  /// INIT -> RTR of a UD QP.
  void to_rtr_datagram();
  /// A datagram for this QP (Hca's datagram path, on the I/O thread): dropped unless the QP is
  /// at RTR or later, the Q_Key matches and a receive waits (IBA 9.8.3).
  void on_datagram(const Packet& p);
  /// Unreliable Connected (IBV_QPT_UC, IBA 9.8.2): no ACKs, a send completes once transmitted,
  /// a SEND without a receive or out of PSN order is dropped, no RDMA READ. In RESET only.
  void set_unreliable();
  /// Moves the QP to ERROR (ibv_modify_qp(3) to IBV_QPS_ERR): its WRs flush; the peer is not
  /// told (no DREQ). `why` is kept for error_reason().
  void to_error_state(const std::string& why);
  /// The current state.
  State state();
  /// Sets the completion event handler (nullptr: none; events are then seen by wait_cq_event only).
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
  /// The owner is done: the socket closes (on the I/O thread) and waiters return.
  void close();
  /// ibv_modify_qp's rnr_retry (0-7, 7 = for ever; hca::RnrCounter). Throws sdp::VerbsError when > 7.
  void set_rnr_retry(uint8_t n);
  /// Why the QP went to ERROR ("" while it has not).
  std::string reason();
  /// What the faults did on this QP's sending side, and its retransmissions, so far.
  model::FaultStats fault_stats();
  /// Frames this QP received and dropped for a bad ICRC (IBA 7.8.1): the peer's corrupted ones.
  uint64_t icrc_drops();

 private:
  /// A WR transmitted (or failed locally) and not yet completed, in PSN order.
  struct Outstanding {
    uint32_t psn = 0;
    sdp::SendWr wr;
    WrExt x;
    Frame frame;                              ///< kept for retransmission
    std::optional<sdp::WcStatus> local_error; ///< failed before transmission (completes in order)
  };

  // All below run with m_ held; the socket is touched on the I/O thread only.
  void pump();
  /// Puts a transport frame on the wire through the fault injector (model::FaultDraw): lost,
  /// corrupted, duplicated, held back behind the next frame, or written. Counts into stats_.
  void transmit(Frame f);
  /// Writes a frame as it is (CM DREQ; the injector's output).
  void send_frame(Frame f);
  /// Writes the frame held back by a Reorder fate, if any.
  void release_held();
  /// Starts the local ACK timer when it is not running and WRs are on the wire (IBA 9.7.6.1.3).
  void arm_ack_timer();
  /// Restarts the local ACK timer (progress was made), or stops it when nothing is on the wire.
  void restart_ack_timer();
  void stop_ack_timer();
  void on_ack_timeout();
  /// An ACK or READ response retired WRs: the retry count starts again (IBA 9.7.5.2).
  void progress();
  /// One retry (a timeout or a NAK PSN sequence error): go-back-N from the oldest unacked WR,
  /// or RETRY_EXC_ERR and ERROR once more than retry_cnt retries went by without progress.
  void retry(const std::string& cause);
  void start_write();
  void read_length();
  void read_body(uint32_t n);
  void on_packet(const Packet& p);
  /// The stream is there and the QP at RTR or later: reading starts, and sending at RTS.
  void start_io();
  void as_responder(const Packet& p);
  void as_requester(const Packet& p);
  void retire_acked(uint32_t psn);
  void retransmit_from(uint32_t psn);
  void ack(uint32_t psn, uint8_t syndrome);
  /// Completes the oldest outstanding WR with `status` and moves the QP to ERROR.
  void fail_front(sdp::WcStatus status, const std::string& why);
  void complete_send(const sdp::SendWr& wr, sdp::WcStatus status, const WrExt& x = {});
  void push_cqe(const sdp::Wc& wc);
  void push_cqe(const Cqe& c);
  /// The receive WR a SEND or RDMA WRITE with immediate consumes (the SRQ's or the QP's own).
  std::optional<sdp::RecvWr> take_recv();
  /// The responder's atomics: executes one (IBA 9.4.5), or replays the answer of a duplicate.
  void atomic_request(const Packet& p, bool duplicate);
  /// The QP goes to ERROR: the oldest WR on the wire completes with `first` when given, every
  /// other WR flushes (IBA 10.3.1), the peer is told nothing more.
  void to_error(const std::string& why, std::optional<sdp::WcStatus> first);
  void link_down(const std::string& why, bool orderly);
  bool gather(const sdp::SendWr& wr, std::vector<uint8_t>& out);
  bool scatter(const std::array<sdp::Sge, sdp::kMaxSge>& sg, uint8_t n, const std::vector<uint8_t>& data);

  Hca& hca_;
  uint32_t qpn_, remote_qpn_ = 0;
  sdp::QpCaps caps_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer rnr_timer_;
  boost::asio::steady_timer ack_timer_;      // local ACK timeout (I/O thread)
  boost::asio::steady_timer reorder_timer_;  // releases a held-back frame (I/O thread)
  std::mutex m_;
  std::condition_variable cv_;  // completion events, drain, close
  State state_ = State::Reset;
  std::string reason_;
  bool closed_ = false;
  LinkHandler on_link_;
  // requester
  struct SqWr {
    sdp::SendWr wr;
    WrExt x;
  };
  std::deque<SqWr> sq_;                 // posted, not yet transmitted
  std::deque<Outstanding> unacked_;     // transmitted, not yet completed
  uint32_t sq_outstanding_ = 0;         // posted, not yet completed
  uint32_t next_psn_ = 0;
  hca::RnrCounter rnr_;                 // qp.rnr_retry
  bool rnr_waiting_ = false;
  model::RcRetry retry_;
  hca::RetryCounter retries_;           // qp.retry_cnt: consecutive retries without progress
  uint32_t max_inline_data_ = kMaxInlineData;
  uint8_t min_rnr_timer_ = hca::kDefaultMinRnrTimer;
  bool ack_timer_running_ = false;
  uint64_t ack_timer_gen_ = 0;          // the timer's current arming; older handlers do nothing
  std::optional<uint32_t> naked_psn_;   // the NAK PSN sequence error being recovered
  std::optional<uint32_t> acked_psn_;   // the latest cumulative ACK's PSN (for WRs behind a READ)
  // fault injection
  model::FaultConfig faults_;
  model::FaultDraw draw_;
  model::FaultStats stats_;
  uint64_t icrc_drops_ = 0;
  Frame held_;                          // a frame reordered behind the next one
  // responder
  std::deque<sdp::RecvWr> rq_;
  hca::RcResponder responder_;          // expected PSN, one NAK per gap
  std::deque<std::pair<uint32_t, uint64_t>> atomic_replies_;  // PSN -> original value, the latest kRdAtom
  // CQs
  std::shared_ptr<CompQueue> scq_, rcq_;
  bool own_cq_ = false;                 // Hca::create_qp(caps): the CQ is this QP's alone
  std::shared_ptr<Srq> srq_;            // receives from it when set
  bool uc_ = false;                     // Unreliable Connected
  bool ud_ = false;                     // Unreliable Datagram
  uint32_t qkey_ = 0;
  // out-of-band connection (to_rtr)
  bool linked_ = false;                 // the stream is read (CM: from to_rts; else from RTR)
  bool oob_ = false;                    // connected by to_rtr (no CM): a vanished peer says nothing
  bool peer_gone_ = false;              // oob_: the stream ended; requests time out
  uint16_t dlid_ = 0;
  std::optional<boost::asio::ip::tcp::socket> pending_;  // accepted before RTR
  uint32_t pending_from_ = 0;
  // wire
  std::deque<Frame> wq_;
  bool writing_ = false, shutdown_after_write_ = false, close_after_write_ = false;
  std::array<uint8_t, kLengthSize> len_buf_{};
  std::vector<uint8_t> body_;
};

}  // namespace hcasim::emu
