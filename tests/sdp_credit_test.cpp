// Credit accounting of the SDP engine through a scripted exchange, without SimGrid: two
// sockets joined by a loopback "HCA" that delivers each SEND at once into the peer's oldest
// posted receive and writes both CQEs. No thread ever sleeps: the script only does what the
// credits allow, and a sleep would fail the test.
#include <gtest/gtest.h>

#include <deque>
#include <stdexcept>

#include "sdp/socket.h"

using namespace hcasim;
using namespace hcasim::sdp;

namespace {

class NoSleepQueue : public WaitQueue {};

/// A host whose CPU is free and which must never sleep.
class FakeHost : public Host {
 public:
  explicit FakeHost(int id) : mem_(id, 7) { costs_.cpus = 1; }
  HostMemory& memory() override { return mem_; }
  const model::CpuCosts& costs() const override { return costs_; }
  void charge(model::Activity, double) override {}
  void sync() override {}
  std::unique_ptr<WaitQueue> make_wait_queue() override { return std::make_unique<NoSleepQueue>(); }
  void sleep(WaitQueue&, const std::function<bool()>& ready) override {
    if (!ready()) throw std::logic_error("the script made a socket sleep");
  }
  bool spin(WaitQueue&, const std::function<bool()>& ready, double) override {
    if (!ready()) throw std::logic_error("the script made a socket spin");
    return true;
  }
  void wake(WaitQueue&) override {}
  void notify(WaitQueue&) override {}
  double now_ns() override { return 0; }
  void share(LineOwner&, uint32_t) override {}
  double copy_from_user_ns(Addr, uint64_t) override { return 0; }

 private:
  HostMemory mem_;
  model::CpuCosts costs_;
};

/// Loopback verbs: a SEND lands at once in the peer's oldest receive.
class LoopVerbs : public Verbs {
 public:
  explicit LoopVerbs(FakeHost& h) : host_(h) {}
  LoopVerbs* peer = nullptr;
  std::deque<Wc> cq;
  std::deque<RecvWr> rq;
  uint64_t sends = 0;

  uint32_t reg_mr(Addr, uint64_t, unsigned) override { return 1; }
  uint32_t dma_mr() override { return 1; }
  void post_send(const SendWr& wr) override {
    ++sends;
    ASSERT_FALSE(peer->rq.empty()) << "RNR: no receive posted at the peer";
    RecvWr r = peer->rq.front();
    peer->rq.pop_front();
    uint64_t left = wr.length(), goff = 0, soff = 0;
    uint8_t gi = 0, si = 0;
    while (left > 0) {
      uint64_t n = std::min<uint64_t>({wr.sg[gi].length - goff, r.sg[si].length - soff, left});
      HostMemory::copy(peer->host_.memory(), r.sg[si].addr + soff, host_.memory(), wr.sg[gi].addr + goff, n);
      goff += n, soff += n, left -= n;
      if (goff == wr.sg[gi].length) ++gi, goff = 0;
      if (soff == r.sg[si].length) ++si, soff = 0;
    }
    peer->cq.push_back({r.wr_id, WcStatus::Success, WcOpcode::Recv, static_cast<uint32_t>(wr.length()), 2});
    cq.push_back({wr.wr_id, WcStatus::Success, WcOpcode::Send, 0, 1});
  }
  void post_recv(const RecvWr& wr) override { rq.push_back(wr); }
  int poll_cq(std::span<Wc> out) override {
    int n = 0;
    while (n < static_cast<int>(out.size()) && !cq.empty()) {
      out[static_cast<size_t>(n++)] = cq.front();
      cq.pop_front();
    }
    return n;
  }
  bool req_notify_cq() override { return !cq.empty(); }
  uint32_t qp_num() const override { return 1; }
  uint32_t max_send_wr() const override { return 128; }
  uint32_t max_recv_wr() const override { return 128; }

 private:
  FakeHost& host_;
};

struct Pair {
  FakeHost ha{0}, hb{1};
  LoopVerbs va{ha}, vb{hb};
  SdpConfig cfg;
  std::unique_ptr<SdpSocket> a, b;
  Pair() {
    va.peer = &vb;
    vb.peer = &va;
    cfg.zcopy_thresh = 0;  // bcopy
    a = std::make_unique<SdpSocket>(ha, va, cfg, "a");
    b = std::make_unique<SdpSocket>(hb, vb, cfg, "b");
    auto ack = b->accept_hello(a->hello(5000));
    a->hello_ack(ack);
  }
};

}  // namespace

TEST(SdpCredits, HelloGivesThePeersPostedBuffersAndSize) {
  Pair p;
  // Each side posted SDP_RX_SIZE = 64 receives of 2048 B before the Hello exchange.
  EXPECT_EQ(p.a->tx_credits(), 64);
  EXPECT_EQ(p.b->tx_credits(), 64);
  EXPECT_EQ(p.a->xmit_size_goal(), 2048u);  // localrcvsz 2048 + 16 minus the 16 B BSDH
}

TEST(SdpCredits, ScriptedExchange) {
  Pair p;
  HostMemory& ma = p.ha.memory();
  const Addr ubuf = ma.allocate(1 << 20, DataMode::Reference);
  ma.write_stream(ubuf, 1 << 20, 0);

  // 1. a sends 10 KB with 2 KB peer buffers: first the ChRcvBuf request (10 KB > 2 KB), then
  //    5 Data messages of 2048 B. Credits: 64 - 1 - 5 = 58.
  EXPECT_EQ(p.a->send(ubuf, 10240), 10240u);
  EXPECT_EQ(p.va.sends, 6u);
  EXPECT_EQ(p.a->tx_credits(), 58);

  // 2. b reads 4 KB: it first processes the 6 receives. Their BSDHs carried bufs = 64 at
  //    mseq 1..6 with mseq_ack 0, so b's credits = 0 - 1 + 1 + 64 = 64 (b sent nothing yet).
  //    b copies 2 messages out and reposts their buffers at 32 KB (the ChRcvBuf asked 32 KB).
  const Addr rbuf = p.hb.memory().allocate(1 << 20, DataMode::Reference);
  EXPECT_EQ(p.b->recv(rbuf, 4096), 4096u);
  EXPECT_TRUE(p.hb.memory().check_stream(rbuf, 4096, 0));
  EXPECT_EQ(p.b->stats().msgs_received, 6u);
  // b's peer view of its own buffers: advertised 64 in the HelloAck, minus 6 received = 58;
  // 58 > 2 so doubled to 116, not below the 61 posted (64 - 6 + the ChRcvBuf's buffer + 2
  // read ones reposted): no credit update, and no ChRcvBufAck until all 64 are 32 KB.
  EXPECT_EQ(p.vb.sends, 0u);

  // 3. b reads the remaining 6 KB: 3 more buffers reposted.
  EXPECT_EQ(p.b->recv(rbuf, 1 << 20), 6144u);
  EXPECT_TRUE(p.hb.memory().check_stream(rbuf, 6144, 4096));
  EXPECT_EQ(p.vb.sends, 0u);

  // 4. a sends 52 more 2 KB messages (106496 B). Data goes while credits > 2 (SDP_MIN_BUFS):
  //    credits 58 -> 6, every message posted, still with the 2 KB goal (no ChRcvBufAck yet).
  EXPECT_EQ(p.a->send(ubuf + 10240, 106496), 106496u);
  EXPECT_EQ(p.a->tx_credits(), 6);

  // 5. b drains all 52: its peer view falls to 58 - 52 = 6 (doubled 12) < posted 64, so b
  //    sends one bare-BSDH credit update (len 16) carrying bufs = 64 and mseq_ack = 58
  //    (6 + 52 messages received).
  EXPECT_EQ(p.b->recv(rbuf, 1 << 20), 106496u);
  EXPECT_TRUE(p.hb.memory().check_stream(rbuf, 106496, 10240));
  EXPECT_EQ(p.vb.sends, 1u);
  EXPECT_EQ(p.b->stats().credit_updates_sent, 1u);

  // 6. A bcopy send() with less than half the tx ring in flight leaves the CQ to the
  //    completion work: the update is still unread. a's CQ event then processes it: credits =
  //    mseq_ack - tx_head + 1 + bufs = 58 - 59 + 1 + 64 = 64 (a's next mseq is 59: 58
  //    messages sent from mseq 1).
  EXPECT_EQ(p.a->send(ubuf, 0), 0u);
  EXPECT_EQ(p.a->tx_credits(), 6);
  p.a->on_cq_event();
  EXPECT_EQ(p.a->tx_credits(), 64);
}

TEST(SdpCredits, MalformedBsdhAbortsTheConnection) {
  Pair p;
  // Forge a message whose BSDH len disagrees with the bytes received.
  HostMemory& ma = p.ha.memory();
  const Addr hdr = ma.allocate(16, DataMode::Bytes);
  Bsdh h;
  h.mid = Mid::Data;
  h.len = 100;  // but only 16 bytes are sent
  h.mseq = 1;
  auto bytes = h.to_bytes();
  ma.write_bytes(hdr, bytes.data(), bytes.size());
  SendWr wr;
  wr.wr_id = 1;
  wr.sg[0] = {hdr, 16, 1};
  wr.num_sge = 1;
  p.va.post_send(wr);
  p.va.cq.clear();
  const Addr rbuf = p.hb.memory().allocate(4096, DataMode::Reference);
  EXPECT_THROW(p.b->recv(rbuf, 4096), ProtocolError);
  EXPECT_EQ(p.b->state(), SdpSocket::State::Aborted);
  EXPECT_NE(p.b->error().find("len 100 but 16 bytes received"), std::string::npos) << p.b->error();
}

// The Nagle rule of OFED 1.3's bcopy path (sdp_bcopy.c sdp_nagle_off, sdp_main.c sdp_sendmsg):
// a send() appends to the last skb while it is unposted and below the size goal (2048 B here,
// the peer's first buffers); the partial skb is posted only when nothing is in flight, when it
// is within a BSDH of the goal, or with TCP_NODELAY. The loopback HCA completes each SEND at
// once, but the completion stays in a's CQ until a polls it: until then the SEND is in flight
// (tx_head != tx_tail).
TEST(SdpNagle, SmallSendsFillTheHeldSkbWhileASendIsInFlight) {
  Pair p;
  HostMemory& ma = p.ha.memory();
  const Addr ubuf = ma.allocate(1 << 16, DataMode::Reference);
  ma.write_stream(ubuf, 1 << 16, 0);
  // 1. Nothing in flight: the first 512 B leave at once.
  EXPECT_EQ(p.a->send(ubuf, 512), 512u);
  EXPECT_EQ(p.va.sends, 1u);
  // 2. Three more sends of 512 B wait in one skb (1536 B + 16 < 2048) behind the first SEND.
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(p.a->send(ubuf + 512 * i, 512), 512u);
  EXPECT_EQ(p.va.sends, 1u);
  // 3. The fourth fills it to the goal, 2048 B: posted although a SEND is in flight.
  EXPECT_EQ(p.a->send(ubuf + 2048, 512), 512u);
  EXPECT_EQ(p.va.sends, 2u);
  // 4. 100 B more are held; the completion work reaps both SENDs (tx_tail == tx_head) and its
  //    sdp_post_sends posts the held skb.
  EXPECT_EQ(p.a->send(ubuf + 2560, 100), 100u);
  EXPECT_EQ(p.va.sends, 2u);
  p.a->on_cq_event();
  EXPECT_EQ(p.va.sends, 3u);
  // b got 2660 B in three messages, in order.
  const Addr rbuf = p.hb.memory().allocate(1 << 16, DataMode::Reference);
  EXPECT_EQ(p.b->recv(rbuf, 1 << 16), 2660u);
  EXPECT_TRUE(p.hb.memory().check_stream(rbuf, 2660, 0));
  EXPECT_EQ(p.b->stats().msgs_received, 3u);
}

// With TCP_NODELAY (netperf -D) every send() posts what it wrote, in flight or not.
TEST(SdpNagle, NodelayPostsEverySend) {
  Pair p;
  p.a->set_nodelay(true);
  HostMemory& ma = p.ha.memory();
  const Addr ubuf = ma.allocate(4096, DataMode::Reference);
  ma.write_stream(ubuf, 4096, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p.a->send(ubuf + 512 * i, 512), 512u);
  EXPECT_EQ(p.va.sends, 4u);
}
