#pragma once
// One verbs contract, three HCAs: the backends and the fixture of the conformance cases
// (tests/hca_conformance*_test.cpp). The same cases run on the simulated HCA (sim/, on the
// Scheduler), the emulated HCA between processes (emu/, two devices over loopback TCP in this
// process) and a real RDMA device through rdma-core (hw/) when the machine has one. Both
// emulators run the HCA core's transport (hca/); the cases are what a program sees of it.
//
// The real device runs when HCASIM_RDMA_ADDR names an IP address of one of its ports (the RDMA
// CM connects to it); without a device, or without the address, its cases skip and say why.
// Cases that need a backend's insides (a QP not yet connected, the QP state, rnr_retry) skip on
// it too: sdp::Device does not expose them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "emu/emu_device.h"
#include "emu/adapter.h"
#include "emu/qp.h"
#include "hca/qp.h"
#include "model/platform.h"
#include "sim/testbed.h"
#include "tests/subnet_env.h"

#if __has_include(<infiniband/verbs.h>)
#include "hw/rdma_device.h"
#define HCASIM_CONFORMANCE_HW 1
#endif

using namespace hcasim;
using hca::QpState;
using sdp::WcOpcode;
using sdp::WcStatus;
using sdp::WrOpcode;

namespace hcasim::hca {
/// gtest prints a QP state by its name.
inline void PrintTo(QpState s, std::ostream* os) { *os << qp_state_name(s); }
}  // namespace hcasim::hca

namespace {

/// The QP pair's sizes.
struct Caps {
  uint32_t max_send_wr = 16;
  uint32_t max_recv_wr = 16;
  uint32_t cq_entries = 64;
  uint64_t memory = 8u << 20;  ///< each side's memory arena (emu; sim's memory is sparse)
};

// ---- backends --------------------------------------------------------------------------------

/// The simulated HCA: a TwoHostBed (the ConnectX DDR platform) with one more QP pair of the
/// asked sizes; the case body runs as a context bound to both hosts, time is simulated.
class SimBackend {
 public:
  static constexpr bool kInternals = true;      // fresh QPs, state, rnr_retry
  static constexpr bool kOwnErrorOpcode = true;  // error completions carry the WR's opcode (hca/qp.h)

  std::string open(const Caps& c) {
    params_ = sim::read_host_params(model::Platform::load_file(
        std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/connectx-ddr-pcie1x8.toml"));
    bed_ = std::make_unique<sim::TwoHostBed>(params_, params_, 3, sdp::DataMode::Bytes);
    for (int i = 0; i < 2; ++i) {
      sim::Hca& h = bed_->hca(i);
      qp_[static_cast<size_t>(i)] = &h.create_qp(h.alloc_pd(), c.max_send_wr, c.max_recv_wr, c.cq_entries);
    }
    sim::Qp::connect(*qp_[0], *qp_[1]);
    fresh_ = &bed_->hca(0).create_qp(bed_->hca(0).alloc_pd(), 4, 4, 8);
    fresh_peer_ = &bed_->hca(1).create_qp(bed_->hca(1).alloc_pd(), 4, 4, 8);
    return "";
  }
  template <class F>
  void run(F body) {
    bed_->scheduler().spawn("case", [this, body] {
      bed_->failure().guard("case", [&] {
        bed_->host(0).bind_current(1);
        bed_->host(1).bind_current(1);
        body();
      });
    });
    bed_->run(30);
    ASSERT_FALSE(bed_->failure().failed()) << bed_->failure().message();
  }
  sdp::Verbs& qp(int i) { return *qp_[static_cast<size_t>(i)]; }
  sdp::Memory& mem(int i) { return bed_->host(i).memory(); }
  /// One completion of side i within 1 s of simulated time.
  bool poll(int i, sdp::Wc& out) { return poll(qp(i), out); }
  /// One completion of `q`'s CQ within 1 s of simulated time.
  bool poll(sdp::Verbs& q, sdp::Wc& out) {
    const double until = sim::now_ns() + 1e9;
    while (q.poll_cq(std::span<sdp::Wc>(&out, 1)) == 0) {
      if (sim::now_ns() > until) return false;
      sim::sleep_for_ns(1000);
    }
    return true;
  }
  /// Long enough for every WR posted to complete (5 ms of simulated time: a 4 KiB WRITE takes
  /// about 10 us, an RNR NAK round 0.64 ms).
  void pause() { sim::sleep_for_ns(5e6); }
  QpState state(int i) { return qp_[static_cast<size_t>(i)]->state(); }
  void to_error(int i) { qp_[static_cast<size_t>(i)]->modify(QpState::Error); }
  void set_rnr_retry(int i, uint8_t n) { qp_[static_cast<size_t>(i)]->set_rnr(n, hca::kDefaultMinRnrTimer); }
  sdp::Verbs& fresh() { return *fresh_; }
  void modify_fresh(QpState s) { fresh_->modify(s); }
  /// ibv_modify_qp(3) of the fresh QP with `mask`: 0 or the errno.
  int modify_fresh(const hca::QpAttr& a, unsigned mask) { return fresh_->modify(a, mask); }
  hca::QpAttr fresh_attr() { return fresh_->attr(); }
  /// The fresh QP from INIT to RTR, its remote QP one of the other HCA (in RESET).
  void fresh_to_rtr() {
    sim::Qp::pair(*fresh_, *fresh_peer_);
    fresh_->modify(QpState::Rtr);
  }
  QpState fresh_state() { return fresh_->state(); }
  uint32_t max_inline() { return bed_->hca(0).max_inline_data(); }
  /// ibv_post_send(3)'s return value for `wr` on side i's QP.
  int post_errno(int i, const sdp::SendWr& wr) {
    hca::SendWqe w;
    w.wr = wr;
    return qp_[static_cast<size_t>(i)]->post(w);
  }
  /// The max_msg_sz side 0's QPs check (hca::DeviceLimits).
  uint64_t max_msg_sz() { return bed_->hca(0).limits().max_msg_sz; }
  /// An MR of side i's HCA in a PD of its own (not its QP's).
  uint32_t reg_other_pd(int i, sdp::Addr a, uint32_t n, unsigned access) {
    sim::Hca& h = bed_->hca(i);
    return h.reg_mr(h.alloc_pd(), a, n, access);
  }
  /// A UD QP on each HCA (each in a PD of its own, 16 WRs each way, one CQ of 64), in RTS with
  /// Q_Key `qkey`, each the other's destination (sim::TwoHostBed::add_qp_pair). Before run().
  void open_ud(uint32_t qkey) {
    std::tie(ud_[0], ud_[1]) = bed_->add_qp_pair({hca::QpType::Ud, 16, 16, 64, qkey});
  }
  /// Side i's UD QP (open_ud): its verbs, its MRs in its PD, its one CQ.
  sdp::Verbs& ud(int i) { return *ud_[static_cast<size_t>(i)]; }
  /// ibv_post_send(3) of UD SEND `wr` from side i's UD QP to the other side's with
  /// wr.ud.remote_qkey `qkey`: 0 or the errno.
  int ud_send(int i, const sdp::SendWr& wr, uint32_t qkey) {
    hca::SendWqe w;
    w.wr = wr;
    w.x.ud_qkey = qkey;
    return ud_[static_cast<size_t>(i)]->post(w);
  }
  QpState ud_state(int i) { return ud_[static_cast<size_t>(i)]->state(); }
  /// Side i's QP takes qp_access_flags `flags` (ibv_modify_qp(3) with IBV_QP_ACCESS_FLAGS alone:
  /// RTS -> RTS, IBA 1.3 table 92).
  void set_qp_access(int i, unsigned flags) {
    hca::QpAttr a = qp_[static_cast<size_t>(i)]->attr();
    a.qp_access_flags = flags;
    if (qp_[static_cast<size_t>(i)]->modify(a, hca::attr::kAccessFlags) != 0) throw sdp::VerbsError("qp_access_flags");
  }
  /// Two RC QPs of side 0 completing into one CQ of `cq_entries` (shared(0), shared(1); one PD),
  /// each connected to a QP of its own on side 1 (shared_peer(j); one PD, a CQ of 64 each).
  /// Before run().
  void open_shared_cq(uint32_t cq_entries) {
    sim::Hca& h0 = bed_->hca(0);
    sim::Hca& h1 = bed_->hca(1);
    const uint32_t pd0 = h0.alloc_pd(), pd1 = h1.alloc_pd();
    shared_[0] = &h0.create_qp(pd0, 16, 16, cq_entries);
    shared_[1] = &h0.create_qp_on_cq(pd0, 16, 16, *shared_[0]);
    for (size_t j = 0; j < 2; ++j) {
      shared_peer_[j] = &h1.create_qp(pd1, 16, 16, 64);
      sim::Qp::connect(*shared_[j], *shared_peer_[j]);
    }
  }
  sdp::Verbs& shared(int j) { return *shared_[static_cast<size_t>(j)]; }
  sdp::Verbs& shared_peer(int j) { return *shared_peer_[static_cast<size_t>(j)]; }
  /// The memory of the shared-CQ QPs (side 0) and of their peers (side 1).
  sdp::Memory& shared_mem(int side) { return mem(side); }
  /// ibv_destroy_qp(3) of shared(j). The simulated HCA keeps its QPs for its life: the QP goes
  /// to RESET, the step of mlx4's destroy that cleans the CQ (the kernel's destroy_qp_common
  /// moves the QP to RESET, then __mlx4_ib_cq_clean; libmlx4's mlx4_destroy_qp __mlx4_cq_clean).
  void destroy_shared(int j) { shared_[static_cast<size_t>(j)]->modify(QpState::Reset); }
  QpState shared_state(int j) { return shared_[static_cast<size_t>(j)]->state(); }
  /// Until the shared CQ has seen `n` completions (pause(): 5 ms of simulated time is plenty).
  void settle_shared(size_t) { pause(); }

 private:
  sim::HostParams params_;
  std::unique_ptr<sim::TwoHostBed> bed_;
  std::array<sim::Qp*, 2> qp_{}, ud_{}, shared_{}, shared_peer_{};
  sim::Qp* fresh_ = nullptr;
  sim::Qp* fresh_peer_ = nullptr;
};

/// Two rt::Devices connected by one RC connection through their CM (listen / connect on
/// `address`), the case body on the test's thread, wall-clock time.
class DeviceBackend {
 public:
  template <class F>
  void run(F body) {
    body();
  }
  sdp::Verbs& qp(int i) { return conn_[static_cast<size_t>(i)]->verbs(); }
  sdp::Memory& mem(int i) { return dev_[static_cast<size_t>(i)]->memory(); }
  /// One completion of side i within 5 s.
  bool poll(int i, sdp::Wc& out) { return poll(qp(i), out); }
  /// One completion of `q`'s CQ within 5 s.
  bool poll(sdp::Verbs& q, sdp::Wc& out) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (q.poll_cq(std::span<sdp::Wc>(&out, 1)) == 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }
  /// Long enough for the posted WRs to complete on loopback (an RNR round is 0.64 ms).
  void pause() { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

 protected:
  /// Connects dev_[1] (passive) and dev_[0] (active) over `address`.
  void connect(const std::string& address, const Caps& c) {
    const sdp::QpCaps caps{c.max_send_wr, c.max_recv_wr, c.cq_entries};
    auto listener = dev_[1]->listen(address, 0);
    const uint16_t port = listener->port();
    std::thread server([&] {
      conn_[1] = listener->next()->accept(caps, [](sdp::Verbs&, std::span<const uint8_t>) { return std::vector<uint8_t>{}; });
    });
    std::vector<uint8_t> reply;
    conn_[0] = dev_[0]->connect(address, port, caps, [](sdp::Verbs&) { return std::vector<uint8_t>{}; }, reply);
    server.join();
  }
  std::array<std::unique_ptr<sdp::Device>, 2> dev_;
  std::array<std::unique_ptr<sdp::Connection>, 2> conn_;
};

/// The emulated HCA (emu/): two devices in this process over 127.0.0.1, and a QP of a third
/// adapter that is never connected (the state-machine case).
class EmuBackend : public DeviceBackend {
 public:
  static constexpr bool kInternals = true;
  static constexpr bool kOwnErrorOpcode = true;

  std::string open(const Caps& c) {
    for (auto& d : dev_) d = emu::open_emu_device(c.memory);
    connect("127.0.0.1", c);
    fresh_hca_ = std::make_unique<emu::Hca>(&fresh_memory_);
    fresh_ = fresh_hca_->create_qp(sdp::QpCaps{4, 4, 8});
    return "";
  }
  QpState state(int i) { return emu_qp(i).state(); }
  void to_error(int i) { emu_qp(i).to_error_state("the test moved it to ERROR"); }
  void set_rnr_retry(int i, uint8_t n) { emu::set_rnr_retry(qp(i), n); }
  sdp::Verbs& fresh() { return *fresh_; }
  void modify_fresh(QpState s) { fresh_->modify(s); }
  int modify_fresh(const hca::QpAttr& a, unsigned mask) { return fresh_->modify(a, mask); }
  hca::QpAttr fresh_attr() { return fresh_->attr(); }
  /// The fresh QP from INIT to RTR, its remote QP one of the same adapter (in RESET, its port on
  /// the test's own emulated subnet): the stream to it opens, the peer keeps it for its RTR.
  void fresh_to_rtr() {
    fresh_peer_ = fresh_hca_->create_qp(sdp::QpCaps{4, 4, 8});
    using namespace hca::attr;
    hca::QpAttr a = fresh_->attr();
    a.qp_state = QpState::Rtr;
    a.dlid = fresh_hca_->lid();
    a.dest_qp_num = fresh_peer_->qp_num();
    if (fresh_->modify(a, kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer) != 0)
      throw sdp::VerbsError("the fresh QP does not go to RTR");
  }
  QpState fresh_state() { return fresh_->state(); }
  uint32_t max_inline() { return emu::Qp::kMaxInlineData; }
  int post_errno(int i, const sdp::SendWr& wr) {
    hca::SendWqe w;
    w.wr = wr;
    return emu_qp(i).post(w);
  }
  uint64_t max_msg_sz() { return emu_qp(0).adapter().limits().max_msg_sz; }
  uint32_t reg_other_pd(int i, sdp::Addr a, uint32_t n, unsigned access) {
    emu::Hca& h = emu_qp(i).adapter();
    return h.reg_mr(h.alloc_pd(), a, n, access);
  }
  /// A UD QP on each side's adapter (its device PD, so the device's memory; 16 WRs each way,
  /// one CQ of 64), taken RESET -> INIT (Q_Key `qkey`) -> RTR -> RTS as ibv_modify_qp(3) does
  /// for UD; RTR brings the adapter's port up on the test's emulated subnet.
  void open_ud(uint32_t qkey) {
    using namespace hca::attr;
    for (size_t i = 0; i < 2; ++i) {
      emu::Hca& h = emu_qp(static_cast<int>(i)).adapter();
      auto cq = std::make_shared<emu::CompQueue>(64);
      ud_[i] = h.create_qp(hca::QpType::Ud, h.device_pd(), sdp::QpCaps{16, 16, 64}, cq, cq);
      hca::QpAttr a = ud_[i]->attr();
      a.qkey = qkey;
      a.qp_state = QpState::Init;
      if (ud_[i]->modify(a, kState | kPkeyIndex | kPort | kQkey) != 0) throw sdp::VerbsError("UD QP to INIT");
      a.qp_state = QpState::Rtr;
      if (ud_[i]->modify(a, kState) != 0) throw sdp::VerbsError("UD QP to RTR");
      a.qp_state = QpState::Rts;
      a.sq_psn = 0;
      if (ud_[i]->modify(a, kState | kSqPsn) != 0) throw sdp::VerbsError("UD QP to RTS");
    }
  }
  sdp::Verbs& ud(int i) { return *ud_[static_cast<size_t>(i)]; }
  /// The address vector is the other adapter's port LID and its UD QP.
  int ud_send(int i, const sdp::SendWr& wr, uint32_t qkey) {
    emu::Qp& to = *ud_[static_cast<size_t>(1 - i)];
    hca::SendWqe w;
    w.wr = wr;
    w.x.ud_dlid = to.adapter().lid();
    w.x.ud_qpn = to.qp_num();
    w.x.ud_qkey = qkey;
    return ud_[static_cast<size_t>(i)]->post(w);
  }
  QpState ud_state(int i) { return ud_[static_cast<size_t>(i)]->state(); }
  void set_qp_access(int i, unsigned flags) {
    hca::QpAttr a = emu_qp(i).attr();
    a.qp_access_flags = flags;
    if (emu_qp(i).modify(a, hca::attr::kAccessFlags) != 0) throw sdp::VerbsError("qp_access_flags");
  }
  /// Four RC QPs of the fresh QP's adapter, in one PD: shared(0) and shared(1) complete into one
  /// CQ of `cq_entries`, each connected to a QP with a CQ of its own (shared_peer(j)) through the
  /// test's emulated subnet, as ibv_modify_qp(3) takes them RESET -> INIT -> RTR -> RTS.
  void open_shared_cq(uint32_t cq_entries) {
    emu::Hca& h = *fresh_hca_;
    const uint32_t pd = h.alloc_pd();
    shared_cq_ = std::make_shared<emu::CompQueue>(cq_entries);
    for (size_t j = 0; j < 2; ++j) {
      shared_[j] = h.create_qp(hca::QpType::Rc, pd, sdp::QpCaps{16, 16, cq_entries}, shared_cq_, shared_cq_);
      auto own = std::make_shared<emu::CompQueue>(64);
      shared_peer_[j] = h.create_qp(hca::QpType::Rc, pd, sdp::QpCaps{16, 16, 64}, own, own);
      connect_rc(*shared_[j], *shared_peer_[j]);
    }
  }
  sdp::Verbs& shared(int j) { return *shared_[static_cast<size_t>(j)]; }
  sdp::Verbs& shared_peer(int j) { return *shared_peer_[static_cast<size_t>(j)]; }
  /// All four QPs are the fresh adapter's: its memory for both sides.
  sdp::Memory& shared_mem(int) { return fresh_memory_; }
  /// ibv_destroy_qp(3) of shared(j) (emu::Qp::close).
  void destroy_shared(int j) { shared_[static_cast<size_t>(j)]->close(); }
  QpState shared_state(int j) { return shared_[static_cast<size_t>(j)]->state(); }
  /// Until the shared CQ holds `n` completions, the overrun counting as one (at most 10 s: the
  /// first WR of a QP opens its stream, which a loaded or sanitized build can make slow); then
  /// pause() for what a wrong CQE would need to show up.
  void settle_shared(size_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (shared_cq_->written() < n && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    pause();
  }
  ~EmuBackend() {
    for (auto& q : shared_)
      if (q) q->close();
    for (auto& q : shared_peer_)
      if (q) q->close();
    for (auto& q : ud_)
      if (q) q->close();
    if (fresh_) fresh_->close();
    if (fresh_peer_) fresh_peer_->close();
    // The fresh adapter's QPs go before it: a QP's timers live on the adapter's io_context.
    fresh_.reset();
    fresh_peer_.reset();
    for (auto& q : shared_) q.reset();
    for (auto& q : shared_peer_) q.reset();
    fresh_hca_.reset();
    for (auto& c : conn_) c.reset();
  }

 private:
  emu::Qp& emu_qp(int i) { return dynamic_cast<emu::Qp&>(qp(i)); }
  sdp::ProcessMemory fresh_memory_{1u << 20};
  std::unique_ptr<emu::Hca> fresh_hca_;
  std::shared_ptr<emu::Qp> fresh_, fresh_peer_;
  std::array<std::shared_ptr<emu::Qp>, 2> ud_, shared_, shared_peer_;
  std::shared_ptr<emu::CompQueue> shared_cq_;
  /// Takes RC QPs `a` and `b` of the fresh adapter from RESET to RTS, each the other's remote QP
  /// (PSNs 0, all remote access, one RDMA READ or atomic each way).
  void connect_rc(emu::Qp& a, emu::Qp& b) {
    using namespace hca::attr;
    for (emu::Qp* q : {&a, &b}) {
      hca::QpAttr t = q->attr();
      t.qp_state = QpState::Init;
      t.pkey_index = 0;
      t.port_num = 1;
      t.qp_access_flags = sdp::kRemoteWrite | sdp::kRemoteRead | sdp::kRemoteAtomic;
      if (q->modify(t, kState | kPkeyIndex | kPort | kAccessFlags) != 0) throw sdp::VerbsError("RC QP to INIT");
    }
    for (auto [q, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      hca::QpAttr t = q->attr();
      t.qp_state = QpState::Rtr;
      t.dlid = fresh_hca_->lid();
      t.dest_qp_num = to->qp_num();
      t.rq_psn = 0;
      t.max_dest_rd_atomic = 1;
      t.min_rnr_timer = 12;
      if (q->modify(t, kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer) != 0)
        throw sdp::VerbsError("RC QP to RTR");
    }
    for (emu::Qp* q : {&a, &b}) {
      hca::QpAttr t = q->attr();
      t.qp_state = QpState::Rts;
      t.sq_psn = 0;
      t.timeout = 14;
      t.retry_cnt = 7;
      t.rnr_retry = 7;
      t.max_rd_atomic = 1;
      if (q->modify(t, kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic) != 0)
        throw sdp::VerbsError("RC QP to RTS");
    }
  }
};

/// A real RDMA device (hw/, rdma-core), when there is one and HCASIM_RDMA_ADDR names the IP
/// address of its port.
class RdmaBackend : public DeviceBackend {
 public:
  static constexpr bool kInternals = false;
  static constexpr bool kOwnErrorOpcode = false;  // ibv_poll_cq(3): undefined on an error

  std::string open(const Caps& c) {
#ifdef HCASIM_CONFORMANCE_HW
    try {
      for (auto& d : dev_) d = hw::open_rdma_device("", 8u << 20);
    } catch (const std::exception& e) {
      return std::string("no RDMA device here (") + e.what() + ")";
    }
    const char* addr = std::getenv("HCASIM_RDMA_ADDR");
    if (addr == nullptr || *addr == 0)
      return "an RDMA device is present, but HCASIM_RDMA_ADDR does not name the IP address of its port";
    connect(addr, c);
    return "";
#else
    (void)c;
    return "built without rdma-core (libibverbs-dev, librdmacm-dev)";
#endif
  }
  // Not reachable through sdp::Device: the cases that need them skip first.
  QpState state(int) { return QpState::Error; }
  void to_error(int) {}
  void set_rnr_retry(int, uint8_t) {}
  sdp::Verbs& fresh() { return qp(0); }
  void modify_fresh(QpState) {}
  int modify_fresh(const hca::QpAttr&, unsigned) { return 0; }
  hca::QpAttr fresh_attr() { return {}; }
  void fresh_to_rtr() {}
  QpState fresh_state() { return QpState::Error; }
  uint32_t max_inline() { return 0; }
  int post_errno(int, const sdp::SendWr&) { return 0; }
  uint64_t max_msg_sz() { return 0; }
  uint32_t reg_other_pd(int, sdp::Addr, uint32_t, unsigned) { return 0; }
  void open_ud(uint32_t) {}
  sdp::Verbs& ud(int i) { return qp(i); }
  int ud_send(int, const sdp::SendWr&, uint32_t) { return 0; }
  QpState ud_state(int) { return QpState::Error; }
  void set_qp_access(int, unsigned) {}
  void open_shared_cq(uint32_t) {}
  sdp::Verbs& shared(int) { return qp(0); }
  sdp::Verbs& shared_peer(int) { return qp(1); }
  sdp::Memory& shared_mem(int side) { return mem(side); }
  void destroy_shared(int) {}
  QpState shared_state(int) { return QpState::Error; }
  void settle_shared(size_t) {}
};

// ---- the fixture -----------------------------------------------------------------------------

template <class B>
class HcaConformance : public ::testing::Test {
 protected:
  /// Opens the backend with `caps` (skipping the case when it has no device).
  bool open(const Caps& caps = {}) {
    const std::string why = b.open(caps);
    if (!why.empty()) {
      skipped = why;
      return false;
    }
    return true;
  }
  B b;
  std::string skipped;

  /// `n` bytes of side i's memory, registered with `access` on its QP.
  struct Buf {
    sdp::Addr addr = 0;
    uint32_t key = 0;
    uint32_t len = 0;
  };
  Buf buf(int i, uint32_t n, unsigned access) {
    Buf r;
    r.addr = b.mem(i).allocate(n, sdp::DataMode::Bytes);
    r.len = n;
    r.key = b.qp(i).reg_mr(r.addr, n, access);
    return r;
  }
  /// `n` bytes of `mem`, registered with every access but atomics on `q` (in q's PD).
  static Buf buf_on(sdp::Memory& mem, sdp::Verbs& q, uint32_t n) {
    Buf r;
    r.addr = mem.allocate(n, sdp::DataMode::Bytes);
    r.len = n;
    r.key = q.reg_mr(r.addr, n, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);
    return r;
  }
  void fill(int i, sdp::Addr a, uint32_t n, uint8_t first) {
    std::vector<uint8_t> v(n);
    std::iota(v.begin(), v.end(), first);
    b.mem(i).write_bytes(a, v.data(), n);
  }
  std::vector<uint8_t> read(int i, sdp::Addr a, uint32_t n) {
    std::vector<uint8_t> v(n);
    b.mem(i).read_bytes(a, v.data(), n);
    return v;
  }
  static std::vector<uint8_t> ramp(uint32_t n, uint8_t first) {
    std::vector<uint8_t> v(n);
    std::iota(v.begin(), v.end(), first);
    return v;
  }
  static sdp::SendWr wr(WrOpcode op, uint64_t id, const Buf& local, uint32_t len, sdp::Addr remote = 0,
                        uint32_t rkey = 0) {
    sdp::SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.sg[0] = {local.addr, len, local.key};
    w.num_sge = 1;
    w.remote_addr = remote;
    w.rkey = rkey;
    return w;
  }
  static sdp::RecvWr recv(uint64_t id, const Buf& local, uint32_t len) {
    sdp::RecvWr r;
    r.wr_id = id;
    r.sg[0] = {local.addr, len, local.key};
    r.num_sge = 1;
    return r;
  }
  /// An atomic WR (`op` AtomicCmpSwap or AtomicFetchAdd) on the 8 bytes at `remote` (key
  /// `rkey`), its value before landing in `len` bytes of `local`: ibv_send_wr's wr.atomic.
  static sdp::SendWr atomic(WrOpcode op, uint64_t id, const Buf& local, uint32_t len, sdp::Addr remote, uint32_t rkey,
                            uint64_t compare_add, uint64_t swap = 0) {
    sdp::SendWr w = wr(op, id, local, len, remote, rkey);
    w.compare_add = compare_add;
    w.swap = swap;
    return w;
  }
  /// The 8 bytes at `a` of side i's memory, in host byte order.
  uint64_t read_u64(int i, sdp::Addr a) {
    uint64_t v = 0;
    b.mem(i).read_bytes(a, reinterpret_cast<uint8_t*>(&v), 8);
    return v;
  }
  void write_u64(int i, sdp::Addr a, uint64_t v) { b.mem(i).write_bytes(a, reinterpret_cast<const uint8_t*>(&v), 8); }
  /// The next completion of side i (a failure when none comes).
  sdp::Wc next(int i) {
    sdp::Wc wc;
    if (!b.poll(i, wc)) ADD_FAILURE() << "no completion on side " << i;
    return wc;
  }
  /// Everything side i's CQ holds now.
  std::vector<sdp::Wc> drain(int i) { return drain(b.qp(i)); }
  /// Everything `q`'s CQ holds now.
  static std::vector<sdp::Wc> drain(sdp::Verbs& q) {
    std::vector<sdp::Wc> all;
    std::array<sdp::Wc, 16> batch;
    for (int n; (n = q.poll_cq(batch)) > 0;) all.insert(all.end(), batch.begin(), batch.begin() + n);
    return all;
  }
  /// `n` bytes of side i's memory, registered with local write on its UD QP (b.open_ud).
  Buf ud_buf(int i, uint32_t n) {
    Buf r;
    r.addr = b.mem(i).allocate(n, sdp::DataMode::Bytes);
    r.len = n;
    r.key = b.ud(i).reg_mr(r.addr, n, sdp::kLocalWrite);
    return r;
  }
  /// The next completion of side i's UD QP (a failure when none comes).
  sdp::Wc next_ud(int i) {
    sdp::Wc wc;
    if (!b.poll(b.ud(i), wc)) ADD_FAILURE() << "no completion on side " << i << "'s UD QP";
    return wc;
  }
  /// A 100 B UD SEND (Q_Key `qkey`) from side 0 into receive `bad` of side 1, whose SGE the
  /// datagram cannot be written to, with a good receive of 4096 B behind it: the bad one
  /// completes with LOC_PROT_ERR, side 1's UD QP goes to ERROR and the good one flushes, side 0's
  /// SEND succeeds.
  /// A UD SEND of `len` B from `s` with `qkey`, from side 0: posted, and completed at once
  /// whatever the receiver does with it, for UD has no acknowledgement (IBA 1.3 9.8.3).
  void ud_send_completes(uint64_t id, const Buf& s, uint32_t len, uint32_t qkey) {
    ASSERT_EQ(b.ud_send(0, wr(WrOpcode::Send, id, s, len), qkey), 0);
    const sdp::Wc wc = next_ud(0);
    EXPECT_EQ(wc.wr_id, id);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::Send);
  }
  void ud_send_into_a_bad_receive(sdp::RecvWr bad, uint32_t qkey) {
    auto s = ud_buf(0, 4096);
    auto good = ud_buf(1, 4096);
    fill(0, s.addr, 4096, 9);
    bad.wr_id = 90;
    b.ud(1).post_recv(bad);
    b.ud(1).post_recv(recv(91, good, 4096));
    ud_send_completes(3, s, 100, qkey);
    sdp::Wc wc = next_ud(1);
    EXPECT_EQ(wc.wr_id, 90u);
    EXPECT_EQ(wc.status, WcStatus::LocProtErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 4);  // IBV_WC_LOC_PROT_ERR
    EXPECT_EQ(b.ud_state(1), QpState::Error);
    wc = next_ud(1);
    EXPECT_EQ(wc.wr_id, 91u);
    EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    EXPECT_EQ(read(1, good.addr, 64), std::vector<uint8_t>(64, 0));  // the datagram landed nowhere
  }
};

struct BackendNames {
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, SimBackend>) return "sim";
    if (std::is_same_v<T, EmuBackend>) return "emu";
    return "rdma";
  }
};
using Backends = ::testing::Types<SimBackend, EmuBackend, RdmaBackend>;
TYPED_TEST_SUITE(HcaConformance, Backends, BackendNames);

constexpr unsigned kAll = sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead;
/// kAll and IBV_ACCESS_REMOTE_ATOMIC: an atomic's target.
constexpr unsigned kAllAtomic = kAll | sdp::kRemoteAtomic;

// The emulated fresh QPs that go to RTR take a port on an emulated subnet of this process alone.
::testing::Environment* const kSubnet =
    ::testing::AddGlobalTestEnvironment(new hcasim::testing::SubnetEnv("hcasim-conformance"));

#define OPEN_OR_SKIP(...)                                                  \
  do {                                                                     \
    if (!this->open(__VA_ARGS__)) GTEST_SKIP() << this->skipped;           \
  } while (0)
#define NEEDS_INTERNALS()                                                                      \
  do {                                                                                         \
    if (!TypeParam::kInternals) GTEST_SKIP() << "needs the backend's insides (QP state, fresh QPs)"; \
  } while (0)

}  // namespace
