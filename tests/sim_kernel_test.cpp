// The simulation kernel (sim/kernel.h Scheduler): the order of contexts at one instant, timed
// waits, the end of a run, and transfers timed alone (closed form) or through SimGrid when they
// share a link. Expected times are hand calculations on round numbers shown with each case.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/calendar.h"
#include "sim/kernel.h"

namespace hcasim::sim {
namespace {

namespace s4u = simgrid::s4u;

TEST(SimCalendar, PushPopAndCancelFollowASortedReference) {
  // 20000 seeded operations against a std::map keyed by (time, order of scheduling): times from
  // 50 values, so that many events share an instant and the order of scheduling decides; a
  // cancel takes a random pending event off (the heap's middle as often as its top or a leaf).
  // Every pop must give the reference's first event; slots are reused, never more of them than
  // events ever pending at once.
  Calendar cal;
  std::map<std::pair<double, uint64_t>, uint32_t> ref;  // (t, seq) -> slot
  std::map<uint32_t, std::pair<double, uint64_t>> by_slot;
  std::mt19937_64 rng(22);
  uint64_t seq = 0;
  size_t most_pending = 0;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t op = rng() % 4;
    if (op <= 1 || ref.empty()) {
      const double t = static_cast<double>(rng() % 50) * 1e-6;
      const uint32_t slot = cal.push(t, nullptr, 0, nullptr);
      ASSERT_EQ(by_slot.count(slot), 0u) << "step " << step << ": slot " << slot << " is in use";
      ref[{t, seq}] = slot;
      by_slot[slot] = {t, seq};
      ++seq;
      most_pending = std::max(most_pending, ref.size());
      ASSERT_LT(slot, most_pending) << "step " << step;
    } else if (op == 2) {
      const auto first = ref.begin();
      ASSERT_EQ(cal.top().t, first->first.first) << "step " << step;
      const uint32_t slot = cal.pop();
      ASSERT_EQ(slot, first->second) << "step " << step;
      cal.release(slot);
      by_slot.erase(slot);
      ref.erase(first);
    } else {
      auto victim = by_slot.begin();
      std::advance(victim, static_cast<long>(rng() % by_slot.size()));
      cal.cancel(victim->first);
      ref.erase(victim->second);
      by_slot.erase(victim);
    }
    ASSERT_EQ(cal.size(), ref.size()) << "step " << step;
  }
}

TEST(SimCalendar, ACallbackStaysWithItsEventThroughOtherCancels) {
  // Three events at one instant, the middle one cancelled: the first and the third fire in the
  // order they were scheduled, each with its own callback.
  Calendar cal;
  std::vector<int> fired;
  Callback a([&] { fired.push_back(1); }), b([&] { fired.push_back(2); }), c([&] { fired.push_back(3); });
  cal.push(1e-6, nullptr, 0, &a);
  const uint32_t middle = cal.push(1e-6, nullptr, 0, &b);
  cal.push(1e-6, nullptr, 0, &c);
  cal.cancel(middle);
  while (!cal.empty()) {
    const uint32_t slot = cal.pop();
    cal.payload(slot).fn();
    cal.release(slot);
  }
  EXPECT_EQ(fired, (std::vector<int>{1, 3}));
}

/// A SimGrid platform of three nodes X, Y, Z. Links (bytes/s): xy 1e9 (X to Y only), yx 1e9
/// (Y to X only), shared 1e9 (in both the route X->Z and Y->Z), zx 2e9 (Z to X).
struct Platform {
  std::unique_ptr<s4u::Engine> engine = make_engine();
  Failure failure;
  std::unique_ptr<Scheduler> sched;
  s4u::Host *x = nullptr, *y = nullptr, *z = nullptr;
  Route xy, yx, xz, yz, zx;

  Platform() {
    auto* zone = s4u::create_full_zone("kernel-test");
    x = zone->create_host("X", 1e9);
    y = zone->create_host("Y", 1e9);
    z = zone->create_host("Z", 1e9);
    auto link = [&](const char* name, double Bps) { return zone->create_link(name, Bps)->set_latency(0)->seal(); };
    s4u::Link* l_xy = link("xy", 1e9);
    s4u::Link* l_yx = link("yx", 1e9);
    s4u::Link* l_shared = link("shared", 1e9);
    s4u::Link* l_zx = link("zx", 2e9);
    auto route = [&](Route& r, s4u::Host* from, s4u::Host* to, std::vector<s4u::Link*> links) {
      std::vector<s4u::LinkInRoute> in_route;
      for (s4u::Link* l : links) in_route.emplace_back(l);
      zone->add_route(from->get_netpoint(), to->get_netpoint(), nullptr, nullptr, in_route, false);
      r.from = from;
      r.to = to;
      r.rate_Bps = 1e300;
      for (s4u::Link* l : links) {
        r.links.push_back(l);
        r.rate_Bps = std::min(r.rate_Bps, l->get_bandwidth());
      }
    };
    route(xy, x, y, {l_xy});
    route(yx, y, x, {l_yx});
    route(xz, x, z, {l_shared});
    route(yz, y, z, {l_shared});
    route(zx, z, x, {l_zx});
    zone->seal();
    sched = std::make_unique<Scheduler>(failure);
  }
  ~Platform() { sched.reset(); }
  void run() {
    sched->run(x);
    ASSERT_FALSE(failure.failed()) << failure.message();
  }
};

TEST(SimKernel, ContextsAtOneInstantRunInRoundsAndANotifierFollowsTheWoken) {
  Platform p;
  std::vector<std::string> order;
  SimWaitQueue q;
  p.sched->spawn("w", [&] {
    order.push_back("w waits");
    q.wait();
    order.push_back("w woken");
  });
  p.sched->spawn("a", [&] {
    order.push_back("a notifies");
    q.notify_all();  // w runs in the next round, then a
    order.push_back("a after notify");
  });
  p.sched->spawn("b", [&] {
    order.push_back("b first round");
    yield_rounds(1);
    order.push_back("b second round");
  });
  p.run();
  // Round 1: w, a, b in spawn order. a's notify makes w runnable, then a; b yields after them.
  EXPECT_EQ(order, (std::vector<std::string>{"w waits", "a notifies", "b first round", "w woken", "a after notify",
                                             "b second round"}));
  EXPECT_EQ(now_ns(), 0);  // nothing took time
}

TEST(SimKernel, SleepsAndCallbacksFireInTimeThenSchedulingOrder) {
  Platform p;
  std::vector<std::string> order;
  Timer timer;
  p.sched->spawn("s", [&] {
    timer.at(2000, [&] { order.push_back("callback at 2 us"); });
    timer.at(1000, [&] { order.push_back("callback at 1 us"); });
    sleep_for_ns(2000);  // scheduled after the 2 us callback: runs after it
    order.push_back("sleeper at " + std::to_string(static_cast<int>(now_ns())) + " ns");
  });
  p.run();
  EXPECT_EQ(order, (std::vector<std::string>{"callback at 1 us", "callback at 2 us", "sleeper at 2000 ns"}));
}

TEST(SimKernel, ATimedWaitEndsAtItsDeadlineOrWhenNotifiedAndALateDeadlineDoesNothing) {
  Platform p;
  SimWaitQueue q;
  bool first = true, second = false;
  double first_at = 0, second_at = 0;
  p.sched->spawn("waiter", [&] {
    first = q.wait(to_s(5000));  // nobody notifies: false at 5 us
    first_at = now_ns();
    second = q.wait(to_s(50000));  // notified at 8 us; its 50 us deadline must not wake it again
    second_at = now_ns();
    sleep_for_ns(100000);  // until 108 us, past the old deadline
  });
  p.sched->spawn("notifier", [&] {
    sleep_for_ns(8000);
    q.notify_all();
  });
  p.run();
  EXPECT_FALSE(first);
  EXPECT_NEAR(first_at, 5000, 1e-6);  // ns -> s -> ns: within an ulp
  EXPECT_TRUE(second);
  EXPECT_NEAR(second_at, 8000, 1e-6);
  EXPECT_NEAR(now_ns(), 108000, 1e-6);
}

TEST(SimKernel, TheRunEndsWithTheLastNonDaemonAndUnwindsTheDaemons) {
  Platform p;
  SimWaitQueue never;
  bool unwound = false;
  p.sched->spawn("daemon", [&] {
    struct Mark {
      bool& b;
      ~Mark() { b = true; }
    } mark{unwound};
    never.wait();
  }, true);
  p.sched->spawn("main", [&] { sleep_for_ns(1000); });
  p.run();
  EXPECT_TRUE(unwound);
  EXPECT_NEAR(now_ns(), 1000, 1e-6);
}

TEST(SimKernel, AFailureStopsTheRunAtOnce) {
  Platform p;
  bool ran_on = false;
  p.sched->spawn("failing", [&] {
    p.failure.guard("failing", [] {
      sleep_for_ns(10);
      throw std::runtime_error("boom");
    });
  });
  p.sched->spawn("other", [&] {
    sleep_for_ns(20);
    ran_on = true;
  });
  p.sched->run(p.x);
  EXPECT_EQ(p.failure.message(), "failing: boom");
  EXPECT_FALSE(ran_on);
}

TEST(SimKernel, ATransferAloneOnItsLinksTakesBytesOverTheLeastBandwidth) {
  Platform p;
  double xy_end = 0, yx_end = 0;
  // 1e6 B at 1e9 B/s: 1 ms each; X->Y and Y->X share no link, so both stay alone.
  p.sched->spawn("x->y", [&] {
    p.sched->transfer(p.xy, 1000000);
    xy_end = now_ns();
  });
  p.sched->spawn("y->x", [&] {
    p.sched->transfer(p.yx, 1000000);
    yx_end = now_ns();
  });
  p.run();
  EXPECT_DOUBLE_EQ(xy_end, 1e6);
  EXPECT_DOUBLE_EQ(yx_end, 1e6);
  EXPECT_EQ(p.sched->stats().transfers_alone, 2u);
  EXPECT_EQ(p.sched->stats().transfers_simgrid, 0u);
  EXPECT_EQ(s4u::Engine::get_clock(), 0);  // SimGrid never ran
}

TEST(SimKernel, ASecondTransferOnASharedLinkMovesTheFirstToSimGridWithWhatItHasLeft) {
  Platform p;
  double xz_end = 0, yz_end = 0, zx_end = 0, again_end = 0;
  // X->Z starts at 0 with 1e6 B on the shared 1e9 B/s link: alone, due at 1 ms.
  // Y->Z starts at 0.5 ms with 1e6 B on the same link: X->Z has 5e5 B left and both get
  // 5e8 B/s; X->Z ends 1 ms later (1.5 ms), Y->Z has moved 5e5 B by then and takes its last
  // 5e5 B alone at 1e9 B/s: 2.0 ms.
  // Z->X (its own 2e9 B/s link) starts at 0.6 ms with 1e6 B: alone, 0.5 ms, ends at 1.1 ms.
  // After both SimGrid transfers ended, X->Z again at 3 ms with 1e6 B is alone: 4 ms.
  p.sched->spawn("x->z", [&] {
    p.sched->transfer(p.xz, 1000000);
    xz_end = now_ns();
    sleep_until_s(3e-3);
    p.sched->transfer(p.xz, 1000000);
    again_end = now_ns();
  });
  p.sched->spawn("y->z", [&] {
    sleep_until_s(0.5e-3);
    p.sched->transfer(p.yz, 1000000);
    yz_end = now_ns();
  });
  p.sched->spawn("z->x", [&] {
    sleep_until_s(0.6e-3);
    p.sched->transfer(p.zx, 1000000);
    zx_end = now_ns();
  });
  p.run();
  EXPECT_NEAR(xz_end, 1.5e6, 1e-3);
  EXPECT_NEAR(yz_end, 2.0e6, 1e-3);
  EXPECT_NEAR(zx_end, 1.1e6, 1e-3);
  EXPECT_NEAR(again_end, 4.0e6, 1e-3);
  // x->z (first), z->x and x->z (again) alone; y->z started in SimGrid and moved x->z there.
  EXPECT_EQ(p.sched->stats().transfers_alone, 3u);
  EXPECT_EQ(p.sched->stats().transfers_simgrid, 2u);
}

}  // namespace
}  // namespace hcasim::sim
