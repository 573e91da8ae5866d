#pragma once
/// \file The emulated HCA's adapter: one per process, shared by both faces of the emulator (the
/// sdp::Device of `--device emu`, emu/emu_device.h, and the verbs shim, emu/verbs_shim/). It owns
/// the I/O thread every QP's socket runs on, the protection domains and the MR table (the HCA
/// core's, hca/mr.h, under a lock), the QP numbers, the device limits, and the port on the
/// machine's emulated subnet (emu/subnet.h): a TCP acceptor of QP streams and a UDP socket of UD
/// datagrams on one 127.0.0.1 port number, both authenticated with the subnet's secret
/// (emu/auth.h), which the adapter reads once when the port comes up.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "emu/auth.h"
#include "emu/subnet.h"
#include "hca/mr.h"
#include "hca/packet.h"
#include "hca/qp.h"
#include "model/fault.h"
#include "sdp/device.h"
#include "sdp/process_memory.h"

namespace hcasim::emu {

class Qp;
struct Packet;
class Srq;
class CompQueue;
class Hca;

/// A QP's lock (BasicLockable; std::lock_guard, std::unique_lock, std::condition_variable_any).
/// The QP's key checks and memory copies all run under it; each MR a check under it passed
/// stays held until it is unlocked, and Hca::dereg_mr waits only for the locks holding that MR.
class AccessLock {
 public:
  explicit AccessLock(Hca& hca) : hca_(hca) {}
  AccessLock(const AccessLock&) = delete;
  AccessLock& operator=(const AccessLock&) = delete;
  void lock() { m_.lock(); }
  bool try_lock() { return m_.try_lock(); }
  /// Gives back the MRs held (Hca::release), then unlocks.
  void unlock() {
    if (!held_.empty()) release();
    m_.unlock();
  }

 private:
  friend class Hca;
  void release();
  Hca& hca_;
  std::mutex m_;
  std::vector<uint32_t> held_;  // indexes of the MRs checked since lock(), under m_
};

/// The adapter. Destroying it closes every QP still open and joins the I/O thread.
class Hca {
 public:
  /// `memory`: the arena sdp::Device's MRs must lie in and dma_mr() covers; nullptr (the verbs
  /// shim) lets an MR cover any address range of the process and has no dma_mr().
  /// `faults` and `retry` apply to every QP of the adapter (each QP draws its own fates, seeded
  /// with its QPN).
  explicit Hca(const sdp::ProcessMemory* memory, const model::FaultConfig& faults = {},
               const model::RcRetry& retry = {});
  ~Hca();
  Hca(const Hca&) = delete;
  Hca& operator=(const Hca&) = delete;

  /// ibv_alloc_pd(3): a new protection domain.
  uint32_t alloc_pd();
  /// The PD of the sdp::Device face, whose connections' QPs and MRs all belong to it.
  uint32_t device_pd() const { return pd_; }
  /// Keys (lkey = rkey) have mlx4's layout (hw_index_to_key, drivers/net/ethernet/mellanox/
  /// mlx4/mr.c): the MR's index in bits 8-31 and a key byte in bits 0-7, which is random here
  /// (libsodium) where mlx4's counts its index table's wraps: a key guessed from another, or a
  /// stale one, names a live MR with a chance of 1/256 at most. (The core's table, hca/mr.h,
  /// and so the simulator keep their sequential keys.)
  /// ibv_reg_mr(3): registers [addr, addr+len) in `pd` with `access` (sdp::Access bits,
  /// hca::kRemoteAtomic) and returns its key. Throws sdp::VerbsError for an unknown PD, a range
  /// outside the arena (when there is one) or one that wraps past 2^64.
  uint32_t reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access);
  /// ibv_dereg_mr(3): 0; EINVAL when no MR has `key`; EBUSY, the MR kept, while memory windows
  /// are bound to it (hca::MrTable::dereg: mlx4's HW2SW_MPT fails so). Once it returns 0, no QP
  /// of this HCA touches the MR's memory (each QP's accesses, key check and copy, run under its
  /// AccessLock, and dereg waits for the locks that hold this MR, not for other QPs): the memory
  /// may be freed at once, as on an HCA. Its index is then free for a later reg_mr, with another
  /// key byte (mlx4's MPT entries are reused the same way). Not to be called under a QP's lock.
  int dereg_mr(uint32_t key);
  /// ibv_rereg_mr(3): the MR of `key` takes `pd`, [addr, addr+len) and `access` and keeps its
  /// key (hca::MrTable::rereg): 0; EINVAL when no MR has `key`; EBUSY while memory windows are
  /// bound to it (as dereg_mr). Throws as reg_mr. Once it returns 0, the accesses that passed
  /// the old values are over (as dereg_mr). Not to be called under a QP's lock.
  int rereg_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access);
  /// A key of `pd` covering the whole arena (ib_get_dma_mr). Throws sdp::VerbsError without one.
  uint32_t dma_mr(uint32_t pd);
  /// hca::MrTable::check under the table's lock (an all-memory MR asks the arena), for QP
  /// `qpn` (a type 2 memory window serves the QP it is bound to only). An access allowed under
  /// `holder` (the checking QP's lock, held by the caller) holds the MR or window until that
  /// lock is unlocked (dereg_mr, rereg_mr and dealloc_mw wait for it); null holds nothing.
  hca::MrRefusal check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need,
                          uint32_t qpn = hca::kNoQp, AccessLock* holder = nullptr);
  /// ibv_alloc_mw(3): an unbound memory window of `type` (1 or 2) in `pd`; its key, with mlx4's
  /// layout (reg_mr). Throws sdp::VerbsError for an unknown PD or type.
  uint32_t alloc_mw(uint32_t pd, uint8_t type);
  /// ibv_dealloc_mw(3): false when no memory window has `key`'s index.
  bool dealloc_mw(uint32_t key);
  /// A memory window's bind or invalidation (hca::QpBackend::local_op) for QP `qpn` of `pd`:
  /// the window is the one x.mw_key's index names; a bind takes the key byte of x.mw_new_key
  /// (its index must be the window's: ibv_inc_rkey, IBV_WR_BIND_MW's rkey), so the key before
  /// it names nothing any more (hca::MrTable::bind_mw,
  /// invalidate_mw). False when refused.
  bool mw_op(const hca::SendWqe& w, uint32_t qpn, uint32_t pd);
  /// The IETH R_Key `rkey` of a SEND with Invalidate received on QP `qpn` of `pd`
  /// (hca::QpBackend::remote_invalidate): the type 2 window of that key (its index and current
  /// key byte) is invalidated (hca::MrTable::invalidate_mw with the QP); else why not.
  hca::MrRefusal remote_invalidate(uint32_t rkey, uint32_t qpn, uint32_t pd);
  /// Drops QP `qp` from the QP table (ibv_destroy_qp(3): no stream reaches it any more). It
  /// stays on the closing list while it lives (its queued frames still being written), so that
  /// quiesce waits for them at exit.
  void forget_qp(const std::shared_ptr<Qp>& qp);
  /// ibv_open_xrcd(3): a new XRC domain (IBA 1.2.1 annex A14), its number (1, 2, ...). Which
  /// file a domain belongs to is the verbs shim's (ibv_open_xrcd's fd).
  uint32_t alloc_xrcd();
  /// Gives `srq` its SRQ number (Srq::set_srqn; ibv_get_srq_num(3)), unique among the adapter's
  /// live SRQs, and makes it findable by it (find_srq) while it lives.
  void add_srq(const std::shared_ptr<Srq>& srq);
  /// The live SRQ with number `srqn`, or null.
  std::shared_ptr<Srq> find_srq(uint32_t srqn);
  /// ibv_destroy_srq(3): SRQ `srqn` is found no more.
  void remove_srq(uint32_t srqn);
  /// A new QP of `type` in `pd`, in RESET, completing into `send_cq` and `recv_cq` (they may be one
  /// CQ; ibv_create_qp(3)).
  std::shared_ptr<Qp> create_qp(hca::QpType type, uint32_t pd, const sdp::QpCaps& caps,
                                std::shared_ptr<CompQueue> send_cq, std::shared_ptr<CompQueue> recv_cq);
  /// An RC QP of the device PD with a CQ of its own for both queues, sized by `caps` (the
  /// sdp::Verbs face).
  std::shared_ptr<Qp> create_qp(const sdp::QpCaps& caps);
  /// The limits of the emulated device (a ConnectX-3's, emu/verbs_shim/device.h), which every QP
  /// checks (hca::DeviceLimits).
  const hca::DeviceLimits& limits() const { return limits_; }
  /// The fault configuration and retry attributes of the adapter's QPs.
  const model::FaultConfig& faults() const { return faults_; }
  const model::RcRetry& retry() const { return retry_; }
  /// The LID of the adapter's port on the emulated subnet (emu/subnet.h). The first call reads
  /// the subnet's secret, claims the LID and starts accepting QP streams on a 127.0.0.1 TCP
  /// port; throws sdp::DeviceError when the subnet directory or its secret cannot be used.
  uint16_t lid();
  /// The subnet's secret (after lid()).
  const SubnetSecret& secret() const { return secret_; }
  /// Streams refused for a failed handshake (emu/auth.h): connections to the port that did not
  /// answer the challenge with the secret's MAC in time (a stranger), and ports this adapter's
  /// QPs connected to that did not prove it (an impostor).
  uint64_t strangers_refused() const { return strangers_refused_.load(); }
  /// UD datagrams dropped because their MAC was missing or wrong.
  uint64_t datagrams_refused() const { return datagrams_refused_.load(); }
  /// Counts a refused stream (a QP's connect that met an impostor).
  void count_stranger() { ++strangers_refused_; }
  /// Entry `index` of the port's P_Key table (ibv_query_pkey(3)): the default P_Key at index 0,
  /// 0 (no P_Key) elsewhere: a port of the default partition alone, as the emulated subnet has
  /// no subnet manager to write others. A QP's P_Key is its P_Key index's entry.
  uint16_t pkey(uint16_t index) const { return index == 0 ? hca::kDefaultPkey : 0; }
  /// Packets dropped because their BTH P_Key did not match the receiving QP's (IBA 10.9.3,
  /// 10.9.4): the port's P_Key violation counter (PortInfo P_KeyViolations; ibv_query_port(3)'s
  /// bad_pkey_cntr, which saturates at 0xFFFF).
  uint64_t pkey_violations() const { return pkey_violations_.load(); }
  /// Counts a packet that failed the P_Key check.
  void count_pkey_violation() { ++pkey_violations_; }
  /// Waits at most `ms` until every QP's queued frames were written (Qp::wait_written), after
  /// sending the UD sends posted and not yet sent (Qp::flush_datagrams).
  void quiesce(int ms);
  /// At process exit (the verbs shim's exit handler, after quiesce): stops the I/O thread and
  /// joins it, waiting at most `ms` for the handler it is running to end; the handlers not yet
  /// run are dropped (io_context::stop). Everything else stays as it is, so that a thread of the
  /// program still in a verb finds its objects intact (its posts go nowhere, as on a device
  /// being closed). False, the thread left running, when it did not end in time. Not to be
  /// called on the I/O thread.
  bool stop_io(int ms);
  /// Returns once the I/O thread has run every handler posted before the call (the QPs' pumps
  /// of the WRs posted so far among them: a UD send's completion is then in its CQ), or after
  /// `ms` milliseconds. A verb that reads what the HCA has done so far (ibv_resize_cq(3)
  /// counting the CQEs that wait) calls it first, as an HCA has done that work microseconds
  /// after the post. Not to be called on the I/O thread.
  void sync(int ms);
  /// Gives the port's LID back to the subnet (its claim file removed; emu/subnet.h), at exit:
  /// the next process may take it without the stale-owner check.
  void release_port();
  /// The port GUID (guid_of_lid(lid())).
  uint64_t guid() { return guid_of_lid(lid()); }
  /// Sends one UD datagram (an encoded frame, followed by its MAC: emu/auth.h) to the port with
  /// `dlid`: a UDP datagram to 127.0.0.1 at that port's published port number (its datagram
  /// path, bound with lid()).
  /// False when no port has that LID or the send failed (UD: the datagram is lost).
  bool send_datagram(uint16_t dlid, const std::vector<uint8_t>& frame);
  /// ibv_attach_mcast(3) of QP `qpn` to the group `mgid` / `mlid` (IBA 10.5.2.3, 11.3.1
  /// AttachQPToMulticastGroup): UD sends to `mlid` reach the QP from now on, from any port of
  /// the subnet (this one's included: emu/subnet.h join_multicast_port), with a GRH whose DGID
  /// is `mgid`. Attaching twice is not an error (mlx4_qp_attach_common). 0, or EINVAL for a
  /// `mgid` not of the multicast prefix ff00::/8 or a `mlid` outside 0xC000-0xFFFE (the
  /// kernel's ib_attach_mcast).
  int attach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& mgid, uint16_t mlid);
  /// ibv_detach_mcast(3): the QP leaves the group; the port leaves the subnet's table with its
  /// last QP. 0, or EINVAL when the QP is not attached to it (mlx4_qp_detach_common).
  int detach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& mgid, uint16_t mlid);
  /// Detaches QP `qpn` from every group (it is being destroyed).
  void detach_all_mcast(uint32_t qpn);
  /// The QPs of this port attached to the group of `mlid`, in attach order.
  std::vector<uint32_t> mcast_qps(uint16_t mlid);
  /// The I/O context of the adapter's thread (sockets of QPs and CM streams live on it).
  boost::asio::io_context& io() { return io_; }
  /// The I/O thread's stack block (glibc's mapping: the stack, its static TLS and thread
  /// descriptor; pthread_getattr_np(3)), lowest address and bytes; {nullptr, 0} until the
  /// thread runs. A forked child, where that thread does not exist, hands it to a leak checker
  /// as memory that still holds the parent's references.
  std::pair<const void*, size_t> io_thread_stack() const {
    return {io_stack_lo_.load(std::memory_order_acquire), io_stack_bytes_.load(std::memory_order_acquire)};
  }

 private:
  /// The core's key of the MR or window with `key`'s index, whatever its key byte (the
  /// window an ibv_mw names: its handle); 0 when none.
  uint32_t inner_index(uint32_t key) const;
  /// With `g` holding mr_lock_: waits until no QP holds MR or window `index` (an access that
  /// checked its key before now).
  void wait_released(std::unique_lock<std::mutex>& g, uint32_t index);
  struct Handshake;
  void accept_next();
  /// The acceptor's side of a stream's handshake (emu/auth.h), on the I/O thread.
  void challenge(std::shared_ptr<Handshake> h);
  /// Closes a stream whose handshake failed, and counts it (once).
  void refuse(const std::shared_ptr<Handshake>& h);
  void receive_datagram();
  /// The QP with `qpn`, or null.
  std::shared_ptr<Qp> find_qp(uint32_t qpn);

  const sdp::ProcessMemory* memory_;
  model::FaultConfig faults_;
  model::RcRetry retry_;
  hca::DeviceLimits limits_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::atomic<const void*> io_stack_lo_{nullptr};
  std::atomic<size_t> io_stack_bytes_{0};
  std::thread thread_;
  std::promise<void> io_end_;  // set by the I/O thread once run() has returned (stop_io)
  std::future<void> io_ended_ = io_end_.get_future();
  std::mutex mr_lock_, qps_lock_;
  hca::MrTable mrs_{true};  // under mr_lock_; freed indexes reused
  std::vector<uint8_t> key_bytes_;  // under mr_lock_: each MR's key byte, by its index - 1
  /// Under mr_lock_: the QP locks holding each MR (by its index - 1), at most one entry per
  /// thread inside a QP's lock; dereg_mr waits on mr_released_ for its MR's to empty.
  std::vector<std::vector<AccessLock*>> holders_;
  std::condition_variable mr_released_;
  friend class AccessLock;
  /// Gives back the MRs `l` holds (AccessLock::unlock, under its lock).
  void release(AccessLock& l);
  /// The key of the core's `inner` key (a new MR): its index and a fresh random key byte.
  uint32_t outer_key(uint32_t inner);
  /// The core's key of `key`, or 0 when no MR was given it (index or key byte wrong).
  uint32_t inner_key(uint32_t key) const;
  uint32_t pd_ = 0;   // the device PD
  uint32_t next_qpn_ = 0x48;  // under qps_lock_
  uint32_t next_xrcd_ = 1;    // under qps_lock_
  uint32_t next_srqn_ = 0x40; // under qps_lock_
  std::unordered_map<uint32_t, std::weak_ptr<Srq>> srqs_;  // by SRQ number, under qps_lock_
  std::unordered_map<uint32_t, std::weak_ptr<Qp>> qps_;  // by QPN; expired ones purged as it grows
  /// Under qps_lock_: destroyed QPs that may still write (Qp::close); expired ones purged as it grows.
  std::vector<std::weak_ptr<Qp>> closing_;
  size_t closing_purge_at_ = 64;  // under qps_lock_
  size_t purge_at_ = 64;
  // the subnet port (lid()): its acceptor of QP streams on the I/O thread
  std::mutex port_lock_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<SubnetPort> port_;
  SubnetSecret secret_{};
  /// Handshakes under way by arrival (I/O thread; at most kMaxHandshakes): closed by ~Hca.
  std::map<uint64_t, std::shared_ptr<Handshake>> handshakes_;
  uint64_t handshake_serial_ = 0;
  /// accept(2) again after kAcceptBackoffMs (I/O thread), when it ran out of descriptors.
  std::unique_ptr<boost::asio::steady_timer> accept_timer_;
  std::atomic<uint64_t> strangers_refused_{0}, datagrams_refused_{0}, pkey_violations_{0};
  std::unique_ptr<boost::asio::ip::udp::socket> udp_;  // the datagram path (I/O thread)
  std::vector<uint8_t> dgram_;
  std::mutex send_lock_;
  int send_fd_ = -1;  // the sending side, under send_lock_
  /// A QP attached to a multicast group: its QPN and the group's MGID.
  struct McastMember {
    uint32_t qpn;
    std::array<uint8_t, 16> mgid;
  };
  std::mutex mcast_lock_;
  std::map<uint16_t, std::vector<McastMember>> mcast_;  // by MLID, under mcast_lock_
  /// Delivers a multicast datagram (dest QPN 0xFFFFFF) to each QP attached to its DLID's group,
  /// with the GRH a multicast packet carries (I/O thread).
  void deliver_multicast(const Packet& p);
};

}  // namespace hcasim::emu
