#pragma once
/// \file The SDP engine: one SDP socket over an RC QP, as the OFED 1.3 ib_sdp driver (2008)
/// runs it: BSDH on every message, credit flow control, bcopy and bzcopy sends, receive
/// buffers grown by ChRcvBuf/ChRcvBufAck, orderly close by DisConn.
///
/// The engine is real protocol code with no SimGrid and no rdma-core in it: it moves bytes
/// and headers through a Verbs object and asks a Host for memory, CPU time and sleeping.
/// Methods named after system calls (send, recv, close) run in process context (the
/// application's thread); on_cq_event() runs in interrupt/work-queue context.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sdp/bsdh.h"
#include "sdp/fifo.h"
#include "sdp/host.h"
#include "sdp/verbs.h"

namespace hcasim::sdp {

/// Engine parameters (platform file section [sdp]; OFED 1.3 ib_sdp defaults in brackets).
struct SdpConfig {
  uint32_t tx_ring = 64;                 ///< SDP_TX_SIZE [64]
  uint32_t rx_ring = 64;                 ///< SDP_RX_SIZE [64]
  uint32_t initial_recv_size = 2048;     ///< payload bytes of the first receive buffers [2 KB]
  uint32_t max_recv_size = 32768;        ///< payload bytes after ChRcvBuf [32 KB]
  uint32_t min_credits = 2;              ///< data is sent only while credits > this [2]
  uint64_t zcopy_thresh = 65536;         ///< sdp_zcopy_thresh; 0 = bzcopy off [65536]
  uint32_t page_size = 4096;             ///< bytes per page pinned by get_user_pages
  double recv_poll_ns = 0;               ///< recv() busy-polls the CQ this long before sleeping
  double bzcopy_poll_ns = 0;             ///< a bzcopy send busy-polls for its SENDs this long, then sleeps
  uint32_t socket_lines = 0;             ///< cache lines of socket state every entry touches (lock, queues, credits)
  uint32_t skb_lines = 0;                ///< cache lines of one buffer's sk_buff + skb_shared_info; its pages add
                                         ///< one struct page line each
};

/// Counters of one socket (for tests and --stats).
struct SdpStats {
  uint64_t msgs_sent = 0, data_msgs_sent = 0, credit_updates_sent = 0;
  uint64_t msgs_received = 0, bytes_sent = 0, bytes_received = 0;
  uint64_t resize_requests = 0, bzcopy_calls = 0, pages_pinned = 0;
  uint64_t sleeps = 0, cq_events = 0, cqes = 0;
};

/// One end of an SDP connection.
class SdpSocket {
 public:
  enum class State { Idle, Established, Closing, Closed, Aborted };

  /// Allocates and registers the SDP buffers and posts the first receives. `name` labels
  /// errors.
  SdpSocket(Host& host, Verbs& verbs, const SdpConfig& config, std::string name);
  ~SdpSocket();
  SdpSocket(const SdpSocket&) = delete;
  SdpSocket& operator=(const SdpSocket&) = delete;

  /// Active side: the Hello message (BSDH + HH) for the CM REQ private data.
  std::vector<uint8_t> hello(uint16_t port);
  /// Passive side: takes the peer's Hello and returns the HelloAck (BSDH + HAH) for the REP.
  /// Throws ProtocolError on a malformed Hello.
  std::vector<uint8_t> accept_hello(std::span<const uint8_t> hello_bytes);
  /// Active side: takes the HelloAck. Throws ProtocolError when malformed.
  void hello_ack(std::span<const uint8_t> ack_bytes);

  /// send(2): queues len bytes from the user buffer at `user`. bcopy copies into SDP
  /// buffers and returns once all is queued; bzcopy (len >= zcopy_thresh > 0) pins the user
  /// pages, posts SENDs from them and returns when they all completed. Returns bytes sent.
  uint64_t send(Addr user, uint64_t len);
  /// recv(2): copies at most len bytes into `user`; blocks until at least one byte or the
  /// peer's DisConn; returns 0 at end of stream.
  uint64_t recv(Addr user, uint64_t len);
  /// setsockopt(TCP_NODELAY): with it on, a partial skb is posted at the end of every send();
  /// off (the default, as netperf leaves it without -D), the Nagle rule holds it while a SEND is
  /// in flight (nagle_off).
  void set_nodelay(bool on);
  /// Calls `fn(stream_offset, bytes)` for every data message this socket posts from now on: the
  /// stream bytes [stream_offset, stream_offset + bytes) its payload carries (for a trace of the
  /// messages; none by default).
  void set_message_observer(std::function<void(uint64_t, uint64_t)> fn) { on_data_message_ = std::move(fn); }
  /// shutdown(SHUT_WR)/close: sends DisConn after the queued data.
  void close();
  /// The CQ's completion event (interrupt, then sdp_work): poll, re-arm, poll.
  void on_cq_event();
  /// A CQE landed (wakes a bzcopy sender busy-polling the CQ).
  void on_cqe();

  State state() const { return state_; }
  const SdpStats& stats() const { return stats_; }
  /// Why the socket aborted (empty otherwise).
  const std::string& error() const { return error_; }
  /// Current SEND payload goal (peer's receive buffer size), bytes.
  uint32_t xmit_size_goal() const { return xmit_goal_; }
  /// tx credits as computed from the last BSDH received.
  int64_t tx_credits() const { return tx_credits_; }

 private:
  struct Buf {            // one SDP buffer: a 16 B header region + a payload region
    Addr hdr = 0;
    Addr payload = 0;
    uint32_t capacity = 0;  // payload bytes
  };
  struct Skb {            // a queued or posted SEND
    int buf = -1;           // index in tx_bufs_, -1 for a bzcopy SEND from user memory
    Mid mid = Mid::Data;
    uint32_t len = 0;       // payload bytes
    Addr user = 0;          // bzcopy: user address of the payload
    uint32_t extra = 0;     // ChRcvBuf/ChRcvBufAck size
    bool bz = false;
  };
  struct RxData {
    int buf;
    uint32_t off, len;
  };

  void poll_cq();                         // process every waiting CQE (caller holds the socket lock)
  void handle_wc(const Wc& wc);
  void handle_recv(const Wc& wc);
  void handle_send_done(const Wc& wc);
  void post_sends();                      // sdp_post_sends: data while credits allow, then controls (lock held)
  std::optional<Skb> next_to_post(bool take);  // the next message the rules allow (take: commit)
  void post_now(const Skb& skb);          // header, ring and counters, then ibv_post_send
  void post_recv_buf(int buf);
  void repost_or_grow(int buf);
  bool can_post_data() const;
  /// The last skb of the write queue when send() may append to it: bcopy data, unposted, below
  /// the size goal; else null.
  Skb* appendable_tail();
  /// Whether the skb at the head of the write queue may be posted now (the Nagle rule).
  bool nagle_off(const Skb& s) const;
  bool ring_full() const;
  bool tx_ring_busy() const;              // at least half the tx ring in flight
  void wait(WaitQueue& q, const std::function<bool()>& ready);
  /// sk_stream_wait_memory: sleeps, socket released, until ready(); process context polls the
  /// CQ first only while tx_ring_busy(), else it leaves the completions to the completion work
  /// (on_cq_event).
  void wait_memory(const std::function<bool()>& ready);
  /// lock_sock / release_sock: the socket belongs to one context at a time, the application's
  /// system call or the completion work; the other sleeps until it is released.
  void lock_sock();
  void release_sock();
  class Lock;
  uint64_t send_bzcopy(Addr user, uint64_t len);
  void abort(const std::string& why);
  void check_usable() const;
  Buf make_buf(uint32_t capacity);
  /// Cache lines of buffer metadata: the skb and, with `pages`, the struct page of every page
  /// holding `len` payload bytes.
  uint32_t skb_lines(uint32_t len, bool pages) const;

  Host& host_;
  Verbs& verbs_;
  SdpConfig cfg_;
  std::string name_;
  State state_ = State::Idle;
  uint32_t lkey_ = 0;

  // transmit side
  std::vector<Buf> tx_bufs_;
  std::vector<int> tx_free_;              // free tx buffers
  Fifo<Skb> tx_queue_;                     // written, not yet posted
  std::vector<Skb> tx_ring_;              // posted, by mseq % tx_ring
  bool nodelay_ = false;                  // TCP_NODELAY (sdp_sock nonagle & TCP_NAGLE_OFF)
  uint32_t tx_head_ = 0;                  // mseq of the next message
  uint32_t tx_tail_ = 0;                  // messages completed
  int64_t tx_credits_ = 0;
  uint32_t xmit_goal_ = 0;                // payload bytes per SEND
  bool resize_requested_ = false;
  bool want_resize_ = false;             // a send needed more than one peer buffer
  uint64_t bz_busy_ = 0;                  // bzcopy SENDs of the current call not completed
  bool disconnect_wanted_ = false, disconnect_sent_ = false;

  // receive side
  std::vector<Buf> rx_bufs_;
  Fifo<int> rx_posted_;                   // posted receive buffers in posting order
  Fifo<RxData> rx_queue_;                 // received data not yet read
  uint32_t rx_size_ = 0;                  // payload size of receive buffers being posted
  uint32_t rx_last_mseq_ = 0;             // mseq of the last message received
  int64_t remote_credits_ = 0;            // bufs we last advertised, minus messages since
  bool resize_ack_pending_ = false;
  bool peer_disconnected_ = false;

  bool owned_ = false;                    // lock_sock held (by a system call or the completion work)
  bool verbs_has_cqe_ = false;            // a CQE landed since the spinner last looked
  // poll_cq's batch (SDP_NUM_WC entries), kept rather than built (zeroed) on every call: poll_cq
  // runs under the socket lock, so one context at a time uses it, even across its sleeps.
  static constexpr int kPollBatch = 16;   // CQEs per ib_poll_cq call (SDP_NUM_WC in OFED 1.3 sdp.h)
  std::array<Wc, kPollBatch> wc_batch_;
  std::string error_;                     // why the socket aborted
  std::unique_ptr<WaitQueue> tx_wq_, rx_wq_, cq_wq_, lock_wq_;
  // The last writers of the socket's state and of each buffer's skb (Host::share). A buffer
  // regrown by ChRcvBuf (repost_or_grow) is the same skb slot: it keeps its owner.
  LineOwner sock_owner_;
  std::vector<LineOwner> tx_owner_, rx_owner_;  // by buffer index
  SdpStats stats_;
  std::function<void(uint64_t, uint64_t)> on_data_message_;  // set_message_observer
};

}  // namespace hcasim::sdp
