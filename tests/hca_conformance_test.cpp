// One verbs contract, three HCAs: the same cases run on the simulated HCA (sim/, on the
// Scheduler), the emulated HCA between processes (emu/, two devices over loopback TCP in this
// process) and a real RDMA device through rdma-core (hw/) when the machine has one. Both
// emulators run the HCA core's transport (hca/); these cases are what a program sees of it:
// CQ overrun depth, the opcode of flushed send WRs, MR bounds that wrap past 2^64, PDs, the
// responder's state after a remote access error, requests to a peer that is not in RTR/RTS.
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

 private:
  sim::HostParams params_;
  std::unique_ptr<sim::TwoHostBed> bed_;
  std::array<sim::Qp*, 2> qp_{}, ud_{};
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
  ~EmuBackend() {
    for (auto& q : ud_)
      if (q) q->close();
    if (fresh_) fresh_->close();
    if (fresh_peer_) fresh_peer_->close();
    fresh_.reset();
    fresh_peer_.reset();
    fresh_hca_.reset();
    for (auto& c : conn_) c.reset();
  }

 private:
  emu::Qp& emu_qp(int i) { return dynamic_cast<emu::Qp&>(qp(i)); }
  sdp::ProcessMemory fresh_memory_{1u << 20};
  std::unique_ptr<emu::Hca> fresh_hca_;
  std::shared_ptr<emu::Qp> fresh_, fresh_peer_;
  std::array<std::shared_ptr<emu::Qp>, 2> ud_;
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

// ---- success paths ---------------------------------------------------------------------------

TYPED_TEST(HcaConformance, SendRdmaWriteAndRdmaReadMoveTheBytes) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll), back = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 4096, 7);
    // SEND of 1000 B from two SGEs (600 + 400) into a receive of two SGEs (300 + 3796).
    sdp::RecvWr rw = this->recv(50, r, 300);
    rw.sg[1] = {r.addr + 300, 3796, r.key};
    rw.num_sge = 2;
    this->b.qp(1).post_recv(rw);
    sdp::SendWr s = this->wr(WrOpcode::Send, 1, a, 600);
    s.sg[1] = {a.addr + 600, 400, a.key};
    s.num_sge = 2;
    this->b.qp(0).post_send(s);
    sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::Send);
    EXPECT_EQ(wc.qp_num, this->b.qp(0).qp_num());
    wc = this->next(1);
    EXPECT_EQ(wc.wr_id, 50u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::Recv);
    EXPECT_EQ(wc.byte_len, 1000u);
    EXPECT_EQ(wc.qp_num, this->b.qp(1).qp_num());
    EXPECT_EQ(this->read(1, r.addr, 1000), this->ramp(1000, 7));

    // RDMA WRITE of 2048 B at offset 1024 of the responder's buffer.
    this->fill(0, a.addr, 2048, 100);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 2, a, 2048, r.addr + 1024, r.key));
    wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::RdmaWrite);
    EXPECT_EQ(this->read(1, r.addr + 1024, 2048), this->ramp(2048, 100));
    EXPECT_EQ(this->read(1, r.addr + 1000, 24), std::vector<uint8_t>(24, 0));  // between the SEND's bytes and the WRITE's

    // RDMA READ of those 2048 B back.
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 3, back, 2048, r.addr + 1024, r.key));
    wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 3u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::RdmaRead);
    EXPECT_EQ(this->read(0, back.addr, 2048), this->ramp(2048, 100));
  });
}

TYPED_TEST(HcaConformance, InlineSendUpToMaxInlineData) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    const uint32_t n = this->b.max_inline();
    EXPECT_EQ(n, 912u);  // both emulators: mlx4's 912 B (perftest MAX_INLINE)
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, n, 3);
    this->b.qp(1).post_recv(this->recv(9, r, 4096));
    sdp::SendWr s = this->wr(WrOpcode::Send, 4, a, n);
    s.inline_data = true;
    this->b.qp(0).post_send(s);
    EXPECT_EQ(this->next(0).status, WcStatus::Success);
    const sdp::Wc wc = this->next(1);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, n);
    EXPECT_EQ(this->read(1, r.addr, n), this->ramp(n, 3));
  });
}

// ---- memory regions --------------------------------------------------------------------------

TYPED_TEST(HcaConformance, MrBoundsAreExact) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    auto r2 = this->buf(1, 4096, kAll);
    EXPECT_NE(r.key, r2.key);  // one key per MR
    this->fill(0, a.addr, 16, 1);
    // The MR's last 8 bytes: allowed.
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 1, a, 8, r.addr + 4096 - 8, r.key));
    EXPECT_EQ(this->next(0).status, WcStatus::Success);
    EXPECT_EQ(this->read(1, r.addr + 4088, 8), this->ramp(8, 1));
    // 9 bytes from there: one past the end, the responder refuses and writes nothing.
    this->fill(0, a.addr, 16, 0xA0);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 2, a, 9, r.addr + 4096 - 8, r.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(this->read(1, r.addr + 4088, 8), this->ramp(8, 1));
  });
}

// Divergence 3: sim's check was addr + len <= mr.addr + mr.len, which wraps.
TYPED_TEST(HcaConformance, MrBoundsDoNotWrapPast2To64) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 16, 0x55);
    // remote_addr 2^64 - 8 with 16 bytes: addr + len wraps to 8, "inside" by the naive check.
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 7, a, 16, UINT64_MAX - 7, r.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 7u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(this->read(1, r.addr, 16), std::vector<uint8_t>(16, 0));
    // Registering a range that wraps is refused.
    EXPECT_THROW(this->b.qp(0).reg_mr(UINT64_MAX - 7, 16, sdp::kLocalWrite), sdp::VerbsError);
  });
}

TYPED_TEST(HcaConformance, LocalSgeOutsideItsMrIsLocalProtectionError) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr w = this->wr(WrOpcode::RdmaWrite, 5, a, 4097, r.addr, r.key);  // one byte past the lkey's MR
    this->b.qp(0).post_send(w);
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 5u);
    EXPECT_EQ(wc.status, WcStatus::LocProtErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 4);  // IBV_WC_LOC_PROT_ERR
  });
}

TYPED_TEST(HcaConformance, RemoteWriteNeedsRemoteWriteAccess) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto ro = this->buf(1, 4096, sdp::kLocalWrite | sdp::kRemoteRead);  // no kRemoteWrite
    this->fill(0, a.addr, 64, 9);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 11, a, 64, ro.addr, ro.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 11u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 10);  // IBV_WC_REM_ACCESS_ERR
    EXPECT_EQ(this->read(1, ro.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

TYPED_TEST(HcaConformance, RemoteReadNeedsRemoteReadAccess) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto wo = this->buf(1, 4096, sdp::kLocalWrite | sdp::kRemoteWrite);  // no kRemoteRead
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 12, a, 64, wo.addr, wo.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 12u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
  });
}

TYPED_TEST(HcaConformance, RemoteAccessErrorTakesTheResponderToErrorToo) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto ro = this->buf(1, 4096, sdp::kLocalWrite | sdp::kRemoteRead);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 13, a, 64, ro.addr, ro.key));
    EXPECT_EQ(this->next(0).status, WcStatus::RemAccessErr);
    this->b.pause();
    // IBA 9.9.3.1.2 (class C, responder): the NAK'ing responder's QP goes to ERROR as well.
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_EQ(this->b.state(1), QpState::Error);
  });
}

TYPED_TEST(HcaConformance, LocalSgeInAnMrOfAnotherPdIsLocalProtectionError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    a.key = this->b.reg_other_pd(0, a.addr, 4096, kAll);  // same bytes, the MR of another PD
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 14, a, 64, r.addr, r.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 14u);
    EXPECT_EQ(wc.status, WcStatus::LocProtErr);  // IBA 10.6.3.2: an lkey serves its PD's QPs only
  });
}

TYPED_TEST(HcaConformance, RkeyOfAnMrOfAnotherPdIsRemoteAccessError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 64, 3);
    const uint32_t other = this->b.reg_other_pd(1, r.addr, 4096, kAll);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 15, a, 64, r.addr, other));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 15u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));  // nothing written
  });
}

TYPED_TEST(HcaConformance, RequestsToAPeerNotInRtrOrRtsEndInRetryExceeded) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->b.to_error(1);
    this->b.pause();
    // The responder in ERROR drops every request (IBA 10.3.1: no packets are processed in the
    // Error state), so no ACK comes: retry_cnt 7 retries of the 67.1 ms timer, then
    // RETRY_EXC_ERR, and the rest flush.
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 16, a, 64));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 17, a, 64, r.addr, r.key));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 18, a, 64, r.addr, r.key));
    sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 16u);
    EXPECT_EQ(wc.status, WcStatus::RetryExcErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 12);  // IBV_WC_RETRY_EXC_ERR
    for (uint64_t id : {17u, 18u}) {
      wc = this->next(0);
      EXPECT_EQ(wc.wr_id, id);
      EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    }
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

// ---- QP state machine and WR checks ----------------------------------------------------------

TYPED_TEST(HcaConformance, QpStateTransitionsAndPostsInTheWrongState) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    sdp::Verbs& q = this->b.fresh();
    auto a = this->buf(0, 4096, kAll);
    const sdp::RecvWr r = this->recv(21, a, 64);
    const sdp::SendWr s = this->wr(WrOpcode::RdmaWrite, 22, a, 64, a.addr, a.key);
    EXPECT_EQ(this->b.fresh_state(), QpState::Reset);
    EXPECT_THROW(q.post_send(s), sdp::VerbsError);  // RESET: no posts
    EXPECT_THROW(q.post_recv(r), sdp::VerbsError);
    EXPECT_THROW(this->b.modify_fresh(QpState::Rts), sdp::VerbsError);  // RESET -> RTS skips INIT, RTR
    EXPECT_THROW(this->b.modify_fresh(QpState::Rtr), sdp::VerbsError);
    this->b.modify_fresh(QpState::Init);
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
    EXPECT_NO_THROW(q.post_recv(r));                // INIT: receives may be posted
    EXPECT_THROW(q.post_send(s), sdp::VerbsError);  // sends need RTS
    this->b.modify_fresh(QpState::Error);
    EXPECT_EQ(this->b.fresh_state(), QpState::Error);
    std::array<sdp::Wc, 4> wc{};
    ASSERT_EQ(q.poll_cq(wc), 1);  // the receive posted in INIT flushed
    EXPECT_EQ(wc[0].wr_id, 21u);
    EXPECT_EQ(wc[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(wc[0].opcode, WcOpcode::Recv);
    q.post_send(s);  // ERROR: accepted, completes at once with WR_FLUSH_ERR
    ASSERT_EQ(q.poll_cq(wc), 1);
    EXPECT_EQ(wc[0].wr_id, 22u);
    EXPECT_EQ(wc[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(wc[0].opcode, WcOpcode::RdmaWrite);
    EXPECT_THROW(this->b.modify_fresh(QpState::Init), sdp::VerbsError);  // ERROR -> INIT: via RESET only
    q.post_recv(r);  // flushed into the CQ, then RESET empties it
    this->b.modify_fresh(QpState::Reset);
    EXPECT_EQ(q.poll_cq(wc), 0);
    this->b.modify_fresh(QpState::Init);
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
  });
}

TYPED_TEST(HcaConformance, WrChecksRefuseTooManySgesAndTooLongInline) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr s = this->wr(WrOpcode::Send, 1, a, 8);
    s.num_sge = sdp::kMaxSge + 1;
    EXPECT_THROW(this->b.qp(0).post_send(s), sdp::VerbsError);
    sdp::RecvWr rw = this->recv(2, r, 8);
    rw.num_sge = sdp::kMaxSge + 1;
    EXPECT_THROW(this->b.qp(1).post_recv(rw), sdp::VerbsError);
    sdp::SendWr in = this->wr(WrOpcode::Send, 3, a, this->b.max_inline() + 1);
    in.inline_data = true;
    EXPECT_THROW(this->b.qp(0).post_send(in), sdp::VerbsError);  // libmlx4: ENOMEM
    sdp::SendWr rd = this->wr(WrOpcode::RdmaRead, 4, a, 8, r.addr, r.key);
    rd.inline_data = true;
    EXPECT_THROW(this->b.qp(0).post_send(rd), sdp::VerbsError);  // nothing to gather inline
    // None of them reached the QP: it is still RTS, nothing completed.
    EXPECT_EQ(this->b.state(0), QpState::Rts);
    EXPECT_EQ(this->b.state(1), QpState::Rts);
    this->b.pause();
    EXPECT_TRUE(this->drain(0).empty());
    EXPECT_TRUE(this->drain(1).empty());
  });
}

// ibv_post_send(3) (rdma-core libibverbs/man/ibv_post_send.3): IBV_SEND_INLINE is "valid only
// for Send and RDMA Write"; an RDMA READ has nothing to gather. The core refuses it with EINVAL
// (hca/qp.h PostError::InlineRead), on both emulators the same. rdma-core 44's libmlx4 does not
// check the opcode (providers/mlx4/qp.c mlx4_post_send copies the gather list into the WQE as
// inline data and returns 0), so a ConnectX-3 is not held to this: the case needs the errno of a
// backend's own post and skips on the hardware.
TYPED_TEST(HcaConformance, InlineRdmaReadIsRefusedWithEinval) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr rd = this->wr(WrOpcode::RdmaRead, 4, a, 8, r.addr, r.key);
    rd.inline_data = true;
    EXPECT_EQ(this->b.post_errno(0, rd), EINVAL);
    rd.inline_data = false;  // the same WR without the flag is a good one
    EXPECT_EQ(this->b.post_errno(0, rd), 0);
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 4u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    this->b.pause();
    EXPECT_TRUE(this->drain(0).empty());  // the refused one left no completion
    EXPECT_EQ(this->b.state(0), QpState::Rts);
  });
}

// ---- message size ----------------------------------------------------------------------------

// The largest message is the device's max_msg_sz, hca::DeviceLimits (ConnectX-3: 0x40000000,
// ibv_devinfo -v; the platform files' hca.max_msg_size for sim), checked by the core's requester
// alone (hca/requester.cpp) before a packet leaves. A WR over it completes with a local length
// error (IBA 1.3 11.6.2, Local Length Error: a send WR's data segments total more than the CA's
// message length) and, as any send error, takes the QP to ERROR (IBA 1.3 10.3.1). The two SGEs
// gather the same 512 MiB MR: no byte of it is touched.
TYPED_TEST(HcaConformance, MessageOverMaxMsgSzIsLocalLengthError) {
  Caps c;
  c.memory = (1u << 29) + (16u << 20);
  OPEN_OR_SKIP(c);
  NEEDS_INTERNALS();
  this->b.run([&] {
    const uint64_t max = this->b.max_msg_sz();
    EXPECT_EQ(max, hca::DeviceLimits{}.max_msg_sz);
    EXPECT_EQ(max, 0x40000000u);
    auto big = this->buf(0, (1u << 29) + 1, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr w = this->wr(WrOpcode::RdmaWrite, 61, big, 1u << 29, r.addr, r.key);
    w.sg[1] = {big.addr, (1u << 29) + 1, big.key};
    w.num_sge = 2;
    ASSERT_EQ(w.length(), max + 1);
    this->b.qp(0).post_send(w);
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 61u);
    EXPECT_EQ(wc.status, WcStatus::LocLenErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 1);  // IBV_WC_LOC_LEN_ERR
    EXPECT_EQ(this->b.state(0), QpState::Error);
    this->b.pause();
    EXPECT_EQ(this->b.state(1), QpState::Rts);  // nothing reached the responder
    EXPECT_TRUE(this->drain(1).empty());
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

// ---- modify_qp -------------------------------------------------------------------------------

namespace {
/// RTR -> RTS with every attribute IBA 1.3 table 92 requires (hca/qp.h modify_rule).
constexpr unsigned kToRts = hca::attr::kState | hca::attr::kSqPsn | hca::attr::kTimeout | hca::attr::kRetryCnt |
                            hca::attr::kRnrRetry | hca::attr::kMaxQpRdAtomic;
hca::QpAttr to_rts(hca::QpAttr a) {
  a.qp_state = QpState::Rts;
  a.sq_psn = 0;
  a.timeout = 18;
  a.retry_cnt = 5;
  a.rnr_retry = 3;
  a.max_rd_atomic = 1;
  return a;
}
}  // namespace

// The ranges of ibv_modify_qp(3)'s RTS attributes: the local ACK timeout is a 5-bit code (IBA 1.3
// 9.7.6.1.3: 4.096 us x 2^timeout), retry_cnt and rnr_retry 3-bit counts (IBA 1.3 9.7.5.2.8,
// 9.7.6.1.3; 7 = retry for ever for rnr_retry). The core refuses a value outside them with EINVAL
// and leaves the QP as it was (hca/qp.h check_attr), as rxe does for the timeout (Linux
// drivers/infiniband/sw/rxe/rxe_qp.c rxe_qp_chk_attr: "invalid QP timeout %d > 31", -EINVAL). The
// mlx4 kernel driver does not range-check these three (drivers/infiniband/hw/mlx4/qp.c
// __mlx4_ib_modify_qp shifts retry_cnt << 16 and rnr_retry << 13 into the QP context as given):
// the case needs a backend's fresh QP and skips on the hardware.
TYPED_TEST(HcaConformance, ModifyWithAnAttributeOutOfRangeIsRefusedAndTheQpStays) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    this->b.modify_fresh(QpState::Init);
    this->b.fresh_to_rtr();
    ASSERT_EQ(this->b.fresh_state(), QpState::Rtr);
    const hca::QpAttr before = this->b.fresh_attr();
    hca::QpAttr a = to_rts(before);
    a.timeout = 32;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);
    a = to_rts(before);
    a.retry_cnt = 8;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);
    a = to_rts(before);
    a.rnr_retry = 8;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);
    // Refused: still RTR with the attributes it had.
    EXPECT_EQ(this->b.fresh_state(), QpState::Rtr);
    EXPECT_EQ(this->b.fresh_attr().timeout, before.timeout);
    EXPECT_EQ(this->b.fresh_attr().retry_cnt, before.retry_cnt);
    EXPECT_EQ(this->b.fresh_attr().rnr_retry, before.rnr_retry);
    // The top of each range is allowed and kept.
    a = to_rts(before);
    a.timeout = 31;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), 0);
    EXPECT_EQ(this->b.fresh_state(), QpState::Rts);
    EXPECT_EQ(this->b.fresh_attr().timeout, 31);
    EXPECT_EQ(this->b.fresh_attr().retry_cnt, 7);
    EXPECT_EQ(this->b.fresh_attr().rnr_retry, 7);
  });
}

// RTS is entered from RTR only (IBA 1.3 10.3.1 figure 124; SQD and SQE are not emulated): the
// kernel's ib_modify_qp_is_ok (drivers/infiniband/core/verbs.c qp_state_table) has no RESET,
// INIT or ERROR -> RTS entry, and mlx4's modify_qp returns -EINVAL when it says no
// (drivers/infiniband/hw/mlx4/qp.c _mlx4_ib_modify_qp). Refused, not ignored: the state stays.
TYPED_TEST(HcaConformance, ModifyToRtsFromAStateOtherThanRtrIsRefused) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    const hca::QpAttr a = to_rts(this->b.fresh_attr());
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);  // RESET -> RTS
    EXPECT_EQ(this->b.fresh_state(), QpState::Reset);
    this->b.modify_fresh(QpState::Init);
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);  // INIT -> RTS, with every RTS attribute
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
    EXPECT_THROW(this->b.modify_fresh(QpState::Rts), sdp::VerbsError);
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
    this->b.modify_fresh(QpState::Error);
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);  // ERROR -> RTS
    EXPECT_THROW(this->b.modify_fresh(QpState::Rts), sdp::VerbsError);
    EXPECT_EQ(this->b.fresh_state(), QpState::Error);
  });
}

// ---- CQ --------------------------------------------------------------------------------------

// Divergence 1: sim overran when a completion found cq_entries waiting, emu only after writing
// one more. The core: a CQ of depth N holds N; the (N+1)-th unpolled completion is the overrun.
TYPED_TEST(HcaConformance, CqOfDepthFourHoldsFourAndTheFifthOverruns) {
  Caps c;
  c.cq_entries = 4;
  c.max_send_wr = 8;
  OPEN_OR_SKIP(c);
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    for (uint64_t i = 0; i < 4; ++i) this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, i, a, 64, r.addr, r.key));
    this->b.pause();  // all four completed, none polled: the CQ is full, not overrun
    if (TypeParam::kInternals) { EXPECT_EQ(this->b.state(0), QpState::Rts); }
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 4, a, 64, r.addr, r.key));
    this->b.pause();
    if (TypeParam::kInternals) { EXPECT_EQ(this->b.state(0), QpState::Error); }  // the overrun
    const std::vector<sdp::Wc> all = this->drain(0);
    ASSERT_EQ(all.size(), 4u);  // the four; the fifth's CQE is lost, nothing is written after it
    for (uint64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(all[i].wr_id, i);
      EXPECT_EQ(all[i].status, WcStatus::Success);
    }
  });
}

// ---- flush -----------------------------------------------------------------------------------

// Divergence 2: sim flushed every send WR as IBV_WC_SEND, emu with its own opcode. The core:
// the WR's own opcode (hca/qp.h; ibv_poll_cq(3) leaves it undefined on an error, so a real
// device is not held to it).
TYPED_TEST(HcaConformance, FlushCompletesOutstandingSendsThenReceivesInOrder) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll), back = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->b.qp(0).post_recv(this->recv(100, back, 64));
    this->b.qp(0).post_recv(this->recv(101, back, 64));
    // B has no receive: the SEND is RNR NAKed for ever (rnr_retry 7), the WRs behind it wait.
    this->b.set_rnr_retry(0, hca::kRnrRetryForever);
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 1, a, 64));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 2, a, 64, r.addr, r.key));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 3, a, 64, r.addr, r.key));
    this->b.pause();
    EXPECT_TRUE(this->drain(0).empty());
    this->b.to_error(0);
    this->b.pause();
    const std::vector<sdp::Wc> all = this->drain(0);
    ASSERT_EQ(all.size(), 5u);
    const uint64_t ids[] = {1, 2, 3, 100, 101};
    const WcOpcode ops[] = {WcOpcode::Send, WcOpcode::RdmaWrite, WcOpcode::RdmaRead, WcOpcode::Recv, WcOpcode::Recv};
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(all[i].wr_id, ids[i]) << i;
      EXPECT_EQ(all[i].status, WcStatus::WrFlushErr) << i;
      EXPECT_EQ(sdp::wc_status_code(all[i].status), 5);  // IBV_WC_WR_FLUSH_ERR
      EXPECT_EQ(all[i].qp_num, this->b.qp(0).qp_num()) << i;
      if (TypeParam::kOwnErrorOpcode) { EXPECT_EQ(all[i].opcode, ops[i]) << i; }
    }
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));  // the WRITE never ran
  });
}

// ---- RNR -------------------------------------------------------------------------------------

TYPED_TEST(HcaConformance, SendWithoutAReceiveEndsInRnrRetryExceeded) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    this->b.set_rnr_retry(0, 2);  // the first try and two retries, all RNR NAKed
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 31, a, 64));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 31u);
    EXPECT_EQ(wc.status, WcStatus::RnrRetryExcErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 13);  // IBV_WC_RNR_RETRY_EXC_ERR
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_TRUE(this->drain(1).empty());  // the responder completed nothing
  });
}

TYPED_TEST(HcaConformance, SendWaitsThroughRnrNaksForAReceivePostedLater) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 256, 40);
    this->b.set_rnr_retry(0, hca::kRnrRetryForever);
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 41, a, 256));
    this->b.pause();  // several RNR NAK rounds (0.64 ms each)
    EXPECT_TRUE(this->drain(0).empty());
    this->b.qp(1).post_recv(this->recv(42, r, 4096));
    sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 41u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    wc = this->next(1);
    EXPECT_EQ(wc.wr_id, 42u);
    EXPECT_EQ(wc.byte_len, 256u);
    EXPECT_EQ(this->read(1, r.addr, 256), this->ramp(256, 40));
  });
}

// ---- UD receive failures ---------------------------------------------------------------------

namespace {
/// The Q_Key both UD QPs of a case take (IPoIB's IPOIB_QKEY, any value would do).
constexpr uint32_t kUdQkey = 0x0b1b;
/// IBA 1.3 11.4.1.2: a UD receive buffer begins with 40 B of room for the GRH (present or not),
/// and the receive completion's byte_len counts them.
constexpr uint32_t kGrhRoom = 40;
}  // namespace

// A datagram longer than its receive WQE. The receive completes with a local length error: the
// payload and the 40 B of GRH room exceed the WQE's SGEs (IBA 1.3 11.6.2, Local Length Error;
// mlx4: CQE syndrome MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR is IB_WC_LOC_LEN_ERR, Linux
// drivers/infiniband/hw/mlx4/cq.c mlx4_ib_handle_error_cqe). A datagram one byte shorter fits
// exactly. The sender is never told: UD has no acknowledgement, its SEND completes once sent
// (IBA 1.3 9.8.3). A receive WQE completed in error takes the QP to ERROR (IBA 1.3 10.3.1: SQE
// is the state of a UC or UD send-queue error only; an error of the receive queue is the Error
// state), and the receive WQEs behind it flush. rdma-core's libhns adds a vendor "general
// error" CQE for just this UD case, to keep its QP out of ERROR (providers/hns/hns_roce_u_hw_v2.c),
// which a ConnectX-3 has not; rxe drops such a datagram without a completion instead
// (drivers/infiniband/sw/rxe/rxe_resp.c RESPST_ERR_LENGTH, class D). The case reads the QP
// state and skips on the hardware.
TYPED_TEST(HcaConformance, UdSendOverItsReceiveIsLocalLengthErrorAndTheReceiverGoesToError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto s = this->ud_buf(0, 4096);
    auto r = this->ud_buf(1, 4096);
    this->fill(0, s.addr, 4096, 5);
    // Two receives of 100 + 39 B (two SGEs), then one of 4096 B behind them.
    for (uint64_t id : {70u, 71u}) {
      sdp::RecvWr rw = this->recv(id, r, 100);
      rw.sg[1] = {r.addr + 100, 39, r.key};
      rw.num_sge = 2;
      this->b.ud(1).post_recv(rw);
    }
    this->b.ud(1).post_recv(this->recv(72, r, 4096));
    // 99 B: 40 + 99 = 139, exactly the WQE's room.
    this->ud_send_completes(1, s, 99, kUdQkey);
    sdp::Wc wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 70u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, kGrhRoom + 99);
    EXPECT_EQ(this->read(1, r.addr + kGrhRoom, 99), this->ramp(99, 5));  // 60 B in the first SGE, 39 in the second
    // 100 B: 140 > 139.
    this->ud_send_completes(2, s, 100, kUdQkey);  // no ACK: the sender does not know
    wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 71u);
    EXPECT_EQ(wc.status, WcStatus::LocLenErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 1);  // IBV_WC_LOC_LEN_ERR
    EXPECT_EQ(wc.opcode, WcOpcode::Recv);
    EXPECT_EQ(this->b.ud_state(1), QpState::Error);
    wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 72u);
    EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    EXPECT_EQ(this->b.ud_state(0), QpState::Rts);  // the sender's QP is untouched
    this->b.pause();
    EXPECT_TRUE(this->drain(this->b.ud(1)).empty());
  });
}

// A UD receive WQE whose SGE the datagram cannot be written to: the receive completes with a
// local protection error (IBA 1.3 11.6.2, Local Protection Error: the WQE's data segment does
// not reference a memory region valid for the operation; mlx4: MLX4_CQE_SYNDROME_LOCAL_PROT_ERR
// is IB_WC_LOC_PROT_ERR, drivers/infiniband/hw/mlx4/cq.c). The core checks every SGE the
// datagram reaches (its GRH room included) against the MR table before a byte is written: a key
// no MR has, a key of another PD, no local write, or bytes outside the MR are all this one
// refusal (hca/responder.cpp execute_ud, hca/mr.h MrTable::check); rxe calls the same receive
// a malformed WQE (IBV_WC_LOC_QP_OP_ERR, rxe_resp.c). As a local length error, it takes the QP
// to ERROR (IBA 1.3 10.3.1) and the receive behind it flushes; the sender's SEND succeeds
// (IBA 1.3 9.8.3).
TYPED_TEST(HcaConformance, UdReceiveWithAnInvalidLkeyIsLocalProtectionError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto r = this->ud_buf(1, 4096);
    sdp::RecvWr rw = this->recv(0, r, 4096);
    rw.sg[0].lkey = r.key + 0x10000;  // no MR has it: the emulators hand out keys in order from 0x100
    this->ud_send_into_a_bad_receive(rw, kUdQkey);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

TYPED_TEST(HcaConformance, UdReceiveSgeOutsideItsMrIsLocalProtectionError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto r = this->ud_buf(1, 64);  // an MR of 64 B; the SGE names 4096 B from its start
    this->ud_send_into_a_bad_receive(this->recv(0, r, 4096), kUdQkey);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));  // not even the part inside the MR
  });
}

// A datagram whose DETH Q_Key is not the receiving QP's is dropped in silence (IBA 1.3 10.2.5,
// Q_Keys: the destination QP's Q_Key check of a datagram; hca/responder.cpp execute_ud): no
// receive completion, no error, the receive WQE is not consumed, and the next datagram with the
// right Q_Key lands in it. The sender cannot tell (IBA 1.3 9.8.3): its SEND completes.
TYPED_TEST(HcaConformance, UdSendWithAWrongQkeyIsDroppedAndTheReceiveStaysPosted) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto s = this->ud_buf(0, 4096);
    auto r = this->ud_buf(1, 4096);
    this->b.ud(1).post_recv(this->recv(80, r, 4096));
    this->fill(0, s.addr, 64, 0xC0);
    this->ud_send_completes(4, s, 64, kUdQkey + 1);
    this->b.pause();
    EXPECT_TRUE(this->drain(this->b.ud(1)).empty());  // dropped: no completion
    EXPECT_EQ(this->b.ud_state(1), QpState::Rts);     // and no error
    EXPECT_EQ(this->read(1, r.addr, kGrhRoom + 64), std::vector<uint8_t>(kGrhRoom + 64, 0));
    this->fill(0, s.addr, 64, 0x30);
    this->ud_send_completes(5, s, 64, kUdQkey);
    sdp::Wc wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 80u);  // the WQE the dropped datagram left posted
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, kGrhRoom + 64);
    EXPECT_EQ(this->read(1, r.addr + kGrhRoom, 64), this->ramp(64, 0x30));
    this->b.pause();
    EXPECT_TRUE(this->drain(this->b.ud(1)).empty());
  });
}
