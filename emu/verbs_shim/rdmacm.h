#pragma once
// The emulated RDMA CM's ids and event channels, shared by the two halves of the shim's
// librdmacm (emu/verbs_shim/rdmacm.cpp: ids, addresses, connections; rdmacm_events.cpp: event
// channels and events). Internal to the shim.
#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "emu/verbs_shim/shim.h"

namespace hcasim::emu::shim {

using boost::asio::ip::tcp;

/// An event with its private data (rdma_get_cm_event(3); freed by rdma_ack_cm_event).
struct Event {
  rdma_cm_event ev{};
  std::vector<uint8_t> data;
};

/// rdma_event_channel: a pipe whose read end is `ch.fd`, one byte per queued event.
struct EventChannel {
  rdma_event_channel ch{};
  int write_fd = -1;
  std::mutex m;
  std::deque<Event*> events;
  bool dead = false;  ///< destroyed (rdma_destroy_event_channel); a reader blocks for ever
};

/// A listening cm_id's connections whose handshake and CM REQ are being read (rdmacm.cpp).
struct PendingRequests;

/// An asynchronous rdma_connect waiting for its REP on a thread of its own: `m` orders that
/// thread's last steps against the id's and the QP's destruction.
struct ConnectWait {
  std::mutex m;
  bool id_alive = true;     ///< false once rdma_destroy_id began: the thread posts nothing
  ibv_qp* qp = nullptr;     ///< the id's QP, null once destroyed: the thread leaves it alone
  bool waiting = true;      ///< the thread has not taken `m` after the REP (or its failure) yet
};

/// rdma_cm_id with what the emulated CM keeps for it.
struct CmId {
  rdma_cm_id id{};
  std::optional<tcp::socket> socket;      ///< passive side: the request's stream until accept / reject
  std::optional<tcp::acceptor> acceptor;  ///< bound / listening
  std::thread listener;
  int stop_fd = -1;                       ///< eventfd stopping the listener thread
  std::shared_ptr<PendingRequests> pending;  ///< listening: requests being read (I/O thread)
  uint32_t remote_qpn = 0;                ///< passive side: the REQ's QPN
  uint8_t initiator_depth = 0, responder_resources = 0;
  /// A synchronous id (rdma_create_id(3) without a channel, rdma_create_ep(3)): its own
  /// channel, and each call waits for its event (kept in id.event until the next call).
  bool sync = false;
  /// The CQs and completion channels rdma_create_qp made for a QP given none (destroyed
  /// with the QP, as librdmacm's).
  bool own_cqs = false;
  /// rdma_create_ep(3) with RAI_PASSIVE: the QP each rdma_get_request(3) creates.
  std::optional<ibv_qp_init_attr> ep_qp_init;
  /// Connected (ESTABLISHED queued); DISCONNECTED is queued once, after it.
  std::atomic<bool> connected{false};
  std::atomic<bool> disconnected{false};
  bool disconnect_called = false;
  /// rdma_connect's / rdma_accept's rnr_retry_count (applied at RTS).
  std::optional<uint8_t> rnr_retry;
  /// rdma_set_option's RDMA_OPTION_ID_ACK_TIMEOUT (the QP's local ACK timeout at RTS).
  std::optional<uint8_t> ack_timeout;
  /// The last asynchronous rdma_connect's wait for the REP, if any.
  std::shared_ptr<ConnectWait> connect_wait;
  /// A UD id's Q_Key (the kernel's id_priv->qkey, cma_set_qkey): RDMA_UDP_QKEY unless a
  /// SIDR REP or a multicast group gave another; 0 until one is needed.
  uint32_t qkey = 0;
  /// rdma_set_option's RDMA_OPTION_ID_AFONLY: an IPv6 bind takes IPv6 alone.
  bool afonly = false;
  /// Passive side of a SIDR exchange: the SIDR REQ's sender port LID and QPN.
  uint16_t remote_lid = 0;
  /// rdma_connect's / rdma_accept's conn_param->qp_num for an id without rdma_create_qp (an
  /// external QP), and the peer's QPN and port LID (REP / SIDR REP, or the REQ) that
  /// rdma_init_qp_attr gives it.
  uint32_t ext_qpn = 0;
  uint16_t peer_lid = 0;
  uint32_t peer_qpn = 0;
  /// The multicast groups the id joined (rdma_join_multicast): its address, MGID, MLID and the
  /// QP attached (0: none).
  struct McGroup {
    sockaddr_storage addr{};
    std::array<uint8_t, 16> mgid{};
    uint16_t mlid = 0;
    uint32_t qpn = 0;
    void* context = nullptr;
  };
  std::vector<McGroup> groups;
};

/// The CmId holding `id` (its first member).
inline CmId* cm_of(rdma_cm_id* id) { return reinterpret_cast<CmId*>(id); }

/// Guards every cm_id's `channel` (rdma_migrate_id moves it while events are queued).
extern std::mutex g_channels;

/// Queues an event on the id's current channel; a CONNECT_REQUEST (`listen_id` given) on the
/// listener's. With `ud` (a UD id's CONNECT_REQUEST and ESTABLISHED, a MULTICAST_JOIN) the
/// event's param is rdma_ud_param: `ud`'s ah_attr, qp_num and qkey, and `data` as its private
/// data (`ud`'s private_data when `data` is empty: a MULTICAST_JOIN's context).
void post_event(rdma_cm_id* id, rdma_cm_event_type type, int status, std::span<const uint8_t> data = {},
                rdma_cm_id* listen_id = nullptr, uint8_t initiator_depth = 0, uint8_t responder_resources = 0,
                const rdma_ud_param* ud = nullptr);

/// Sets errno to `e`; returns -1 (librdmacm's failure convention).
int fail(int e);

/// librdmacm's completion of a call on a synchronous id: the event the call queued is taken
/// from the id's own channel into id->event (the previous one acknowledged), and its status
/// becomes the call's result: 0, or -1 with errno (ECONNREFUSED for REJECTED, else the
/// status's errno). Nothing for an asynchronous id (returns 0).
int complete(rdma_cm_id* id);

/// A new event channel (a synchronous id's own, or rdma_create_event_channel's); null with
/// errno from pipe2(2).
rdma_event_channel* new_channel();
/// Frees a channel's events; `keep_readers_blocked`: the channel stays (rdmacm_events.cpp).
void delete_channel(rdma_event_channel* ch, bool keep_readers_blocked);
/// Drops the events still queued for `id` (being destroyed) on its channel.
void drop_events(rdma_cm_id* id);

}  // namespace hcasim::emu::shim
