// libFuzzer target: one SDP socket (sdp/socket.h) fed an arbitrary stream of events by a
// hostile peer through a fake verbs backend: messages of any bytes and length landing in its
// posted receives (BSDH with any MID, len, bufs, mseq, mseq_ack; ChRcvBuf with any size;
// SrcAvail and other MIDs bcopy/bzcopy does not speak), send completions in or out of order
// and with error statuses, interleaved with the application's send, recv and close.
//
// The engine's answer to a violation must be an abort (ProtocolError to the user), never a
// crash, undefined behaviour, a post beyond its queues, or memory touched outside its buffers
// (AddressSanitizer, UndefinedBehaviorSanitizer and HostMemory's region checks watch).
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <deque>
#include <memory>

#include "sdp/socket.h"

using namespace hcasim;
using namespace hcasim::sdp;

namespace {

/// Thrown by the fake host where the engine would sleep: the call is interrupted (a signal
/// would do that to a real system call) and the stream goes on.
struct WouldBlock {};

class Queue : public WaitQueue {};

class FuzzHost : public Host {
 public:
  FuzzHost() : mem_(0, 5, DataMode::Bytes) { costs_.cpus = 1; }
  HostMemory& memory() override { return mem_; }
  const model::CpuCosts& costs() const override { return costs_; }
  void charge(model::Activity, double) override {}
  void sync() override {}
  std::unique_ptr<WaitQueue> make_wait_queue() override { return std::make_unique<Queue>(); }
  void sleep(WaitQueue&, const std::function<bool()>& ready) override {
    if (!ready()) throw WouldBlock{};
  }
  bool spin(WaitQueue&, const std::function<bool()>& ready, double) override { return ready(); }
  void wake(WaitQueue&) override {}
  void notify(WaitQueue&) override {}
  double now_ns() override { return now_ += 1000; }
  void share(LineOwner&, uint32_t) override {}
  double copy_from_user_ns(Addr, uint64_t) override { return 0; }

 private:
  HostMemory mem_;
  model::CpuCosts costs_;
  double now_ = 0;
};

/// Verbs whose queues the fuzzer drives. Posting beyond a queue's depth is the engine's bug.
class FuzzVerbs : public Verbs {
 public:
  static constexpr uint32_t kDepth = 64;
  std::deque<SendWr> sq;
  std::deque<RecvWr> rq;
  std::deque<Wc> cq;
  uint32_t reg_mr(Addr, uint64_t, unsigned) override { return 1; }
  uint32_t dma_mr() override { return 1; }
  void post_send(const SendWr& wr) override {
    if (sq.size() >= kDepth) {
      std::fprintf(stderr, "engine posted a SEND beyond its send queue (%u)\n", kDepth);
      std::abort();
    }
    sq.push_back(wr);
  }
  void post_recv(const RecvWr& wr) override {
    if (rq.size() >= kDepth) {
      std::fprintf(stderr, "engine posted a receive beyond its receive queue (%u)\n", kDepth);
      std::abort();
    }
    rq.push_back(wr);
  }
  int poll_cq(std::span<Wc> out) override {
    int n = 0;
    while (n < static_cast<int>(out.size()) && !cq.empty()) {
      out[static_cast<size_t>(n++)] = cq.front();
      cq.pop_front();
    }
    return n;
  }
  bool req_notify_cq() override { return !cq.empty(); }
  uint32_t qp_num() const override { return 0x48; }
  uint32_t max_send_wr() const override { return kDepth; }
  uint32_t max_recv_wr() const override { return kDepth; }
};

/// Reads the fuzzer's bytes as a script.
struct Script {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) << 16 | u16(); }
};

/// The peer's message (any bytes) lands in the oldest posted receive, as the HCA scatters it:
/// the first 16 B into the header SGE, the rest into the payload SGE; longer than both is a
/// local length error at this end.
void deliver(FuzzHost& host, FuzzVerbs& v, Script& s) {
  if (v.rq.empty()) return;  // the peer's HCA would get RNR NAKs
  const RecvWr r = v.rq.front();
  v.rq.pop_front();
  uint32_t len = s.u16();
  if (s.u8() & 1) len = s.u32();  // sometimes an absurd length claim in the CQE
  uint64_t capacity = 0;
  for (uint8_t i = 0; i < r.num_sge; ++i) capacity += r.sg[i].length;
  if (len > capacity) {
    v.cq.push_back({r.wr_id, WcStatus::LocLenErr, WcOpcode::Recv, 0, 0x48});
    return;
  }
  uint64_t off = 0;
  for (uint8_t i = 0; i < r.num_sge && off < len; ++i) {
    const uint64_t k = std::min<uint64_t>(r.sg[i].length, len - off);
    for (uint64_t j = 0; j < k; ++j) {
      const uint8_t b = s.u8();
      host.memory().write_bytes(r.sg[i].addr + j, &b, 1);
    }
    off += k;
  }
  v.cq.push_back({r.wr_id, WcStatus::Success, WcOpcode::Recv, len, 0x48});
}

void complete_send(FuzzVerbs& v, Script& s) {
  if (v.sq.empty()) return;
  const uint8_t how = s.u8();
  size_t i = (how & 0x80) ? std::min<size_t>(s.u8(), v.sq.size() - 1) : 0;  // sometimes out of order
  const SendWr wr = v.sq[i];
  v.sq.erase(v.sq.begin() + static_cast<long>(i));
  const WcStatus st = (how & 0x40) ? static_cast<WcStatus>(how % 8) : WcStatus::Success;
  v.cq.push_back({wr.wr_id, st, WcOpcode::Send, 0, 0x48});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Script s{data, size};
  FuzzHost host;
  FuzzVerbs verbs;
  SdpConfig cfg;
  const uint8_t mode = s.u8();
  cfg.zcopy_thresh = (mode & 1) ? 8192 : 0;
  if (mode & 2) {  // small rings and buffers (fast to set up, rings wrap sooner); else OFED 1.3's
    cfg.tx_ring = cfg.rx_ring = 8;
    cfg.max_recv_size = 8192;
  }
  const bool active = s.u8() & 1;
  SdpSocket sock(host, verbs, cfg, "fuzz");
  const Addr user = host.memory().allocate(1 << 17, DataMode::Bytes);
  try {
    if (active) {
      sock.hello(5000);
      std::vector<uint8_t> ack(HelloAckHeader::kPrivateDataSize);
      for (auto& b : ack) b = s.u8();
      sock.hello_ack(ack);
    } else {
      std::vector<uint8_t> hello(HelloHeader::kPrivateDataSize);
      for (auto& b : hello) b = s.u8();
      sock.accept_hello(hello);
    }
  } catch (const ProtocolError&) {
    return 0;  // a malformed Hello / HelloAck: the connection is refused
  }
  while (!s.empty()) {
    try {
      switch (s.u8() % 8) {
        case 0: case 1: case 2: deliver(host, verbs, s); break;
        case 3: complete_send(verbs, s); break;
        case 4: sock.on_cq_event(); break;
        case 5: sock.send(user, 1 + s.u16() % (1 << 17)); break;
        case 6: sock.recv(user, 1 + s.u16() % (1 << 17)); break;
        case 7: sock.close(); break;
      }
    } catch (const WouldBlock&) {
    } catch (const ProtocolError&) {  // the socket aborted: the user sees an error
    } catch (const VerbsError&) {     // send after close, socket not connected
    }
  }
  return 0;
}
