// The rsockets' accounting (emu/verbs_shim/rsocket_flow.h): immediate data, credits, send slots.
#include "emu/verbs_shim/rsocket_flow.h"

#include <gtest/gtest.h>

namespace shim = hcasim::emu::shim;

TEST(RsocketFlow, ImmediateCarriesKindAndCredits) {
  const uint32_t imm = shim::rs_imm(shim::RsKind::Fin, 37);
  EXPECT_EQ(imm, 0x02000025u);
  EXPECT_EQ(shim::rs_kind(imm), shim::RsKind::Fin);
  EXPECT_EQ(shim::rs_credits(imm), 37);
  EXPECT_EQ(shim::rs_kind(shim::rs_imm(shim::RsKind::Data, 0xffff)), shim::RsKind::Data);
  EXPECT_EQ(shim::rs_credits(shim::rs_imm(shim::RsKind::IoMap, 0xffff)), 0xffff);
}

TEST(RsocketFlow, LastCreditIsKeptForControlMessages) {
  shim::RsCredits c(3, 8);
  EXPECT_TRUE(c.can_send_data());
  EXPECT_EQ(c.spend(), 0);
  EXPECT_EQ(c.spend(), 0);
  EXPECT_EQ(c.available(), 1u);
  EXPECT_FALSE(c.can_send_data());
  EXPECT_TRUE(c.can_send_control());
  c.spend();
  EXPECT_FALSE(c.can_send_control());
}

TEST(RsocketFlow, RepostedBuffersRideOnTheNextMessage) {
  shim::RsCredits c(64, 64);
  c.reposted();
  c.reposted();
  c.reposted();
  EXPECT_EQ(c.owed(), 3u);
  EXPECT_EQ(c.spend(), 3);  // piggybacked, all of them
  EXPECT_EQ(c.owed(), 0u);
  EXPECT_EQ(c.available(), 63u);
  EXPECT_EQ(c.spend(), 0);
}

TEST(RsocketFlow, CreditMessageDueAtHalfTheBuffers) {
  shim::RsCredits c(4, 8);
  for (int i = 0; i < 3; ++i) c.reposted();
  EXPECT_FALSE(c.update_due());
  c.reposted();
  EXPECT_TRUE(c.update_due());  // 4 of 8 buffers owed
  shim::RsCredits d(1, 8);
  d.spend();
  for (int i = 0; i < 4; ++i) d.reposted();
  EXPECT_FALSE(d.update_due()) << "no credit to send it with";
  d.received(shim::rs_imm(shim::RsKind::Credit, 2));
  EXPECT_EQ(d.available(), 2u);
  EXPECT_TRUE(d.update_due());
}

TEST(RsocketFlow, TwoSidesNeverBothStarve) {
  // A fills B's buffers with data until it may not; B's program reads them all and owes
  // them back: B can always tell A, because A kept its own credits' reserve and B still has
  // all of A's buffers.
  shim::RsCredits a(8, 8), b(8, 8);
  int in_flight = 0;
  while (a.can_send_data()) {
    b.received(shim::rs_imm(shim::RsKind::Data, a.spend()));
    ++in_flight;
  }
  EXPECT_EQ(in_flight, 7);
  EXPECT_EQ(a.available(), 1u);
  for (int i = 0; i < in_flight; ++i) b.reposted();
  ASSERT_TRUE(b.update_due());
  a.received(shim::rs_imm(shim::RsKind::Credit, b.spend()));
  EXPECT_EQ(a.available(), 8u);
  EXPECT_EQ(b.owed(), 0u);
  // A reposts B's credit message at once and owes 1: below half, no message back.
  a.reposted();
  EXPECT_FALSE(a.update_due());
}

TEST(RsocketFlow, SlotsAreTakenAndFreedInOrder) {
  shim::RsSlotRing r(3);
  EXPECT_EQ(r.take(), 0u);
  EXPECT_EQ(r.take(), 1u);
  EXPECT_EQ(r.take(), 2u);
  EXPECT_FALSE(r.available());
  r.complete();
  EXPECT_TRUE(r.available());
  EXPECT_EQ(r.take(), 0u);  // wraps: slot 0's work request completed first
  EXPECT_EQ(r.in_use(), 3u);
  r.complete();
  r.complete();
  r.complete();
  r.complete();  // more completions than work requests: ignored
  EXPECT_EQ(r.in_use(), 0u);
  EXPECT_EQ(r.take(), 1u);
}
