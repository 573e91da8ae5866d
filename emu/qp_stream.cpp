// The QP's stream: the loopback TCP connection that is its link to the peer QP, set up by the CM
// (to_init, to_rts) or by the subnet (open_stream, take_stream), and taken down (link_down).
#include "emu/qp.h"

#include <optional>

#include <fmt/format.h>

#include "emu/auth.h"
#include "emu/cloexec.h"
#include "emu/cm.h"
#include "emu/subnet.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;
using sdp::WcStatus;

namespace {
/// The path MTU of a QP the CM connects (the port's active MTU, emu/verbs_shim/device.h).
constexpr uint32_t kCmPathMtu = 2048;
}  // namespace

void Qp::attach(tcp::socket socket) { socket_ = std::move(socket); }

void Qp::to_init() {
  std::lock_guard g(m_);
  hca::QpAttr a = core_.attr();
  a.qp_state = State::Init;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = sdp::kRemoteWrite | sdp::kRemoteRead | hca::kRemoteAtomic;
  hca::check_transition(qpn_, core_.state(), State::Init, type_);
  if (core_.state() != State::Reset)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} is in {}, not RESET", qpn_, hca::qp_state_name(core_.state())));
  core_.modify(a, hca::attr::kState | hca::attr::kPkeyIndex | hca::attr::kPort | hca::attr::kAccessFlags);
}

void Qp::to_rts(uint32_t remote_qpn, std::optional<uint8_t> ack_timeout) {
  std::lock_guard g(m_);
  if (core_.state() == State::Error) return;
  hca::QpAttr a = core_.attr();
  a.qp_state = State::Rtr;
  a.dlid = 1;  // the CM's stream names the peer; no LID is looked up
  a.path_mtu = kCmPathMtu;
  a.dest_qp_num = remote_qpn & hca::kPsnMask;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = core_.limits().max_qp_rd_atom;
  using namespace hca::attr;
  if (core_.state() != State::Init)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} is in {}, not INIT", qpn_, hca::qp_state_name(core_.state())));
  if (core_.modify(a, kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer) != 0)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} to RTR: an attribute out of range", qpn_));
  a.qp_state = State::Rts;
  a.sq_psn = 0;
  a.timeout = ack_timeout.value_or(hca_.retry().timeout);
  a.retry_cnt = hca_.retry().retry_cnt;
  a.rnr_retry = core_.attr().rnr_retry;
  a.max_rd_atomic = core_.limits().max_qp_rd_atom;
  if (core_.modify(a, kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic) != 0)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} to RTS: retry attributes out of range", qpn_));
  start_io();
}

void Qp::open_stream(uint16_t dlid, uint32_t rq_psn) {
  const uint16_t my_lid = hca_.lid();
  uint32_t remote = 0;
  {
    std::lock_guard g(m_);
    remote = core_.attr().dest_qp_num;
    // The smaller (LID, QPN) opens the stream; the other waits for it (or has it already).
    if (std::pair(my_lid, qpn_) >= std::pair(dlid, remote)) {
      if (pending_ && pending_from_ == remote && pending_lid_ == dlid) {
        socket_ = std::move(*pending_);
        pending_.reset();
        start_io();
      } else {
        pending_.reset();
      }
      return;
    }
  }
  const std::optional<uint16_t> port = find_port(dlid);
  tcp::socket s(hca_.io());
  boost::system::error_code ec;
  if (port) open_cloexec(s, tcp::v4(), ec);
  if (port && !ec) s.connect(tcp::endpoint(asio::ip::address_v4::loopback(), *port), ec);
  const std::string peer = fmt::format("LID {:#x} QP {:#x}", dlid, remote);
  if (!port || ec) {
    std::lock_guard g(m_);
    no_stream(port ? fmt::format("{}: {}", peer, ec.message())
                   : fmt::format("{}: no port with that LID on the emulated subnet {}", peer, subnet_dir()));
    return;
  }
  s.set_option(tcp::no_delay(true), ec);
  // The subnet's handshake (emu/auth.h) carries the CM REQ: the port's challenge, the answer
  // with the REQ fields and their MAC, and the port's proof that it knows the secret too. No
  // frame goes out before the proof: the port number may be another user's process that took it
  // after the peer's process died.
  try {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHandshakeTimeoutMs);
    Challenge challenge{};
    read_exact_until(s, challenge, deadline, kHandshakeTimeoutMs, peer);
    const StreamReq req{.dest_qpn = remote, .slid = my_lid, .src_qpn = qpn_, .psn = rq_psn};
    const Nonce mine = make_nonce();
    const Answer answer = make_answer(hca_.secret(), challenge, mine, req);
    asio::write(s, asio::buffer(answer), ec);
    if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
    Proof proof{};
    read_exact_until(s, proof, deadline, kHandshakeTimeoutMs, peer);
    if (!check_proof(hca_.secret(), challenge, mine, req, proof)) {
      hca_.count_stranger();
      throw sdp::DeviceError(fmt::format("{}: the process on 127.0.0.1:{} is not a port of the emulated subnet {} (it "
                                         "does not know the subnet's secret)",
                                         peer, *port, subnet_dir()));
    }
  } catch (const sdp::DeviceError& e) {
    std::lock_guard g(m_);
    no_stream(e.what());
    return;
  }
  std::lock_guard g(m_);
  if (core_.state() == State::Error || closed_) return;
  socket_ = std::move(s);
  start_io();
}

void Qp::no_stream(const std::string& why) {
  if (type_ != hca::QpType::Uc) {
    core_.to_error(why);
    return;
  }
  // UC has no ACK: an HCA sends into a path that leads nowhere and completes the sends as sent
  // (IBA 9.8.2); the frames are dropped here.
  uc_void_ = true;
  kick();
}

void Qp::take_stream(tcp::socket s, uint32_t from_qpn, uint16_t from_lid) {
  std::lock_guard g(m_);
  if (closed_) return;  // s closes
  if (core_.state() == State::Rtr || core_.state() == State::Rts) {
    if (linked_ || from_qpn != core_.attr().dest_qp_num || from_lid != core_.attr().dlid) return;
    socket_ = std::move(s);
    start_io();
    return;
  }
  // RESET / INIT: kept for the RTR; ERROR: for the RTR after the RESET that the peer, reset and
  // connecting anew, is ahead of.
  pending_.emplace(std::move(s));
  pending_from_ = from_qpn;
  pending_lid_ = from_lid;
}

uint32_t Qp::remote_qpn() {
  std::lock_guard g(m_);
  return core_.state() == State::Reset || core_.state() == State::Init ? 0 : core_.attr().dest_qp_num;
}

void Qp::wait_written(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock g(m_);
  // A closed QP still writes what it had queued (close), so closed_ alone does not end the wait.
  cv_.wait_until(g, deadline, [&] { return peer_gone_ || !socket_.is_open() || (wq_.empty() && !writing_); });
}

void Qp::link_down(const std::string& why, bool orderly) {
  if (closed_ || peer_gone_) return;
  if (oob_ && !orderly) {
    // A peer QP connected out of band that goes away (its process exits) says nothing on a
    // real fabric: requests on the wire time out (RETRY_EXC_ERR, the rest flush); with none,
    // the QP stays as it is, its receives posted, until its next request fails the same way.
    // Those on the wire fail as on a fabric, when the local ACK timer has expired retry_cnt + 1
    // times (their retransmissions go nowhere, send_frame), not at once: a program that is done
    // but for polling (ibv_srq_pingpong's server, its sends beyond the peer's last receive in
    // flight) exits before they fail, as it does on a real HCA. No timer (timeout 0) or an RNR
    // wait: they fail now.
    peer_gone_ = true;
    boost::system::error_code ec;
    socket_.close(ec);
    if (type_ == hca::QpType::Uc)
      kick();  // UC: what is queued goes out to nowhere and completes as sent (no ACK to miss)
    else if (core_.send_outstanding() > 0 && (core_.attr().timeout == 0 || core_.rnr_waiting()))
      core_.to_error(why, WcStatus::RetryExcErr);
    if (on_link_) on_link_(orderly, why);
    cv_.notify_all();
    return;
  }
  core_.to_error(why, orderly ? std::nullopt : std::optional<WcStatus>(WcStatus::RetryExcErr));
  boost::system::error_code ec;
  socket_.close(ec);
  if (on_link_) on_link_(orderly, why);
  cv_.notify_all();
}

}  // namespace hcasim::emu
