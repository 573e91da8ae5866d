// Small bcopy sends over SDP (docs/sdp-small-sends.md): netperf -m 512 on connectx-ddr-pcie1x8,
// the sending CPU's time per send() taken apart into the steps of OFED 1.3's ib_sdp send path,
// each checked against the platform's costs by hand. Each case runs in its own process (ctest).
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "model/cpu.h"
#include "model/platform.h"
#include "sim/netperf_sim.h"

using namespace hcasim;

namespace {

model::Platform platform(const std::string& name) {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/" + name + ".toml");
}

/// ns of `activity` on `core` of a profile.
double busy_ns(const std::vector<frontends::CoreProfile>& prof, int core, const std::string& activity) {
  for (const auto& c : prof)
    if (c.core == core)
      for (const auto& [a, ns] : c.busy_ns)
        if (a == activity) return ns;
  return 0;
}

/// netperf -l 0.2 -- -m 512 (bcopy) from `p` to `p`, and what the tests divide by: the send()
/// calls, the 2 KB skbs they fill (four sends each), Mbit/s.
struct SmallSendRun {
  frontends::TcpStreamResult r;
  double sends = 0, skbs = 0, mbps = 0;
};
SmallSendRun send_512(const model::Platform& p) {
  frontends::TcpStreamConfig c;
  c.length_s = 0.2;
  c.send_size = 512;
  SmallSendRun s{sim::run_tcp_stream(p, p, c)};
  s.sends = static_cast<double>(s.r.send_calls);
  s.skbs = static_cast<double>(s.r.bytes_sent) / 2048;
  s.mbps = static_cast<double>(s.r.bytes_received) * 8 / s.r.elapsed_s * 1e-6;
  return s;
}

}  // namespace

// netperf -l 0.2 -- -m 512 (bcopy). The first SDP buffers are 2 KB (sdp_cma.c), and a stream of
// 512 B sends never needs more (the 32 KB ChRcvBuf is asked for at a send above the peer's buffer
// size), so sdp_sendmsg fills each 2 KB skb with four sends (`copy = size_goal - skb->len`), and
// sdp_nagle_off posts it when it is full (len + BSDH >= size goal) or nothing is in flight.
// On netperf's CPU (host.default_app_cpu = 1) per send():
//   syscall: cpu.syscall + cpu.sendmsg = (349.5 + 1864) cycles / 2.33 GHz = 950 ns, and a new skb
//            (cpu.skb, 699 cycles = 300 ns) every 2048 / 512 = 4 sends: 75 ns;
//   copy:    512 B / (cpu.copy_tx_hot_rate 0.477 B/cycle x 2.33 GHz = 1.1114 B/ns) = 460.7 ns:
//            netperf's ring of 16384 / 512 + 1 = 33 buffers (17 KB) stays within
//            cpu.copy_src_cache (95700 B), so after its first 33 sends every source is resident
//            (model/cache.h; the cold first pass adds under 0.1 ns to the mean);
//   wakeup:  the socket lock, twice per skb. The skb's send completion interrupts CPU 0, whose
//            sdp_work (keventd) finds the socket owned by netperf's send() and sleeps in
//            lock_sock; netperf's release_sock wakes it (cpu.wakeup + cpu.ipi = 1000 + 500 ns on
//            netperf's CPU). sdp_work needs a context switch (2 us) before it runs, and netperf's
//            next send() takes the lock first: lock_sock hands nothing over, the woken waiter
//            checks the owner again (net/core/sock.c __lock_sock). So sdp_work sleeps once more
//            and the next release wakes it again: 2 x 1500 = 3000 ns per skb, 750 ns per send.
TEST(SdpSmallSends, A512ByteSendIsItsCallItsCopyAndHalfALockWakeup) {
  const model::Platform p = platform("connectx-ddr-pcie1x8");
  const model::CpuCosts k = model::CpuCosts::from_platform(p);
  const auto [r, sends, skbs, mbps] = send_512(p);
  const int app = 1;
  const double syscall = busy_ns(r.local_profile, app, "syscall"), copy = busy_ns(r.local_profile, app, "copy"),
               wakeup = busy_ns(r.local_profile, app, "wakeup");
  std::cout << "sends " << sends << ", per send: syscall " << syscall / sends << " ns, copy " << copy / sends
            << " ns, wakeup " << wakeup / sends << " ns; wakeup per skb " << wakeup / skbs << " ns; "
            << mbps << " Mbit/s\n";
  ASSERT_GT(sends, 10000);
  EXPECT_EQ(r.bytes_sent, r.send_calls * 512);
  EXPECT_NEAR(k.syscall_ns + k.sendmsg_ns, 950, 0.5);
  EXPECT_NEAR(syscall, sends * (k.syscall_ns + k.sendmsg_ns) + skbs * k.skb_ns, 0.001 * syscall);
  EXPECT_NEAR(copy / sends, 512 / (0.477 * 2.33), 0.5);
  EXPECT_NEAR(wakeup / skbs, 2 * (k.wakeup_ns + k.ipi_ns), 0.02 * wakeup / skbs);
  // The three (2.24 us, with posts and completions 2.41) are what bounds the stream: netperf's
  // CPU is busy all of it, 512 x 8 bit / 2.41 us = 1696 Mbit/s.
  const double per_send = (syscall + copy + wakeup) / sends;
  EXPECT_NEAR(mbps, 512 * 8 / per_send * 1e3, 0.1 * mbps);
}

// The same send on infinihost3-pcie1x8 (Xeon 5150, 2.66 GHz; netperf on CPU 0, the HCA's
// interrupt on CPU 1). Per send() on netperf's CPU:
//   syscall: (cpu.syscall 399 + cpu.sendmsg 2128) cycles / 2.66 GHz = 950 ns, plus cpu.skb
//            (798 cycles = 300 ns) every 4 sends: 75 ns;
//   copy:    512 B / (cpu.copy_tx_hot_rate 0.7519 B/cycle x 2.66 GHz = 2.0 B/ns) = 256 ns: the
//            17 KB send ring stays within cpu.copy_src_cache (192 KiB);
//   wakeup:  made of the scheduler's events the profile counts: each try_to_wake_up of a sleeper
//            on the other CPU costs cpu.wakeup + cpu.ipi = 1000 + 500 ns, and each time netperf
//            itself slept (its lock_sock found sdp_work's completion handling owning the socket)
//            it pays cpu.context_switch (5320 cycles = 2000 ns) when it resumes. sdp_work is
//            woken twice per 2 KB skb as on connectx-ddr (3000 ns per skb, 750 ns per send); the
//            rest of the "wakeup" time is netperf's own switches, and the time it slept is the
//            CPU's idle share: its send() loop is not the only bound here, the lock is.
TEST(SdpSmallSends, OnInfiniHostIIIThe512ByteSendAlsoWaitsForTheLock) {
  const model::Platform p = platform("infinihost3-pcie1x8");
  const model::CpuCosts k = model::CpuCosts::from_platform(p);
  const auto [r, sends, skbs, mbps] = send_512(p);
  const int app = 0;
  const frontends::CoreProfile& cpu = r.local_profile.at(app);
  const double syscall = busy_ns(r.local_profile, app, "syscall"), copy = busy_ns(r.local_profile, app, "copy"),
               wakeup = busy_ns(r.local_profile, app, "wakeup");
  std::cout << "sends " << sends << ", per send: syscall " << syscall / sends << " ns, copy " << copy / sends
            << " ns, wakeup " << wakeup / sends << " ns; per skb: "
            << static_cast<double>(cpu.wakeups) / skbs << " wakeups (" << static_cast<double>(cpu.ipis) / skbs
            << " with IPI), " << static_cast<double>(cpu.context_switches) / skbs << " context switches; " << mbps
            << " Mbit/s\n";
  ASSERT_GT(sends, 10000);
  EXPECT_NEAR(k.syscall_ns + k.sendmsg_ns, 950, 0.5);
  EXPECT_NEAR(syscall, sends * (k.syscall_ns + k.sendmsg_ns) + skbs * k.skb_ns, 0.001 * syscall);
  EXPECT_NEAR(copy / sends, 512 / (0.751879699248 * 2.66), 0.5);
  // The wakeup time is its events at their costs, exactly.
  EXPECT_NEAR(wakeup,
              static_cast<double>(cpu.wakeups) * k.wakeup_ns + static_cast<double>(cpu.ipis) * k.ipi_ns +
                  static_cast<double>(cpu.context_switches) * k.context_switch_ns,
              1e-6 * wakeup);
  EXPECT_EQ(cpu.ipis, cpu.wakeups);  // sdp_work sleeps on CPU 1, netperf runs on CPU 0
  EXPECT_NEAR(static_cast<double>(cpu.wakeups) / skbs, 2, 0.05);
  // netperf slept on the lock now and then (a switch back each time), so its CPU was idle for
  // part of the stream: 2.03 x 1500 / 4 + switches x 2000 / 4 is the 790 ns of wakeup per send
  // in docs/sdp-small-sends.md.
  EXPECT_GT(cpu.context_switches, 0u);
  double busy = 0;
  for (const auto& [activity, ns] : cpu.busy_ns) busy += ns;
  EXPECT_LT(busy, 0.95 * r.elapsed_s * 1e9);
  // Besides the three, the CPU pays only cache-line transfers (topology.line_shared_cache, 20 ns
  // a line), the timer tick and a few ns of posts and completions: under 100 ns per send.
  EXPECT_GT(busy / sends - (syscall + copy + wakeup) / sends, 0);
  EXPECT_LT(busy / sends - (syscall + copy + wakeup) / sends, 100);
}
