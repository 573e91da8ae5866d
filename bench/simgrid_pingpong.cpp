// The bare SimGrid reference for the simulator's speed target: a ping-pong in the shape of SimGrid's
// s4u comm ping-pong example (examples/cpp/comm-pingpong: a pinger and a ponger on two hosts
// exchanging messages through one mailbox each), with 1 B messages, on the engine hcasim
// builds (sim::make_engine(): the exact-timing network configuration and, in the sanitizer
// build, thread contexts), in the same build type. Prints how many messages (one per put,
// each way) SimGrid moves per wall second, for hcasim's simulated SDP messages per wall second
// to be compared with (bench/CMakeLists.txt, bench_vs_simgrid).
//
// Usage: simgrid_pingpong [ROUND_TRIPS]  (default 200000)
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <simgrid/s4u.hpp>

#include "sim/kernel.h"

namespace s4u = simgrid::s4u;

int main(int argc, char** argv) {
  long rounds = 200000;
  if (argc > 2) {
    std::fprintf(stderr, "simgrid_pingpong: usage: simgrid_pingpong [ROUND_TRIPS]\n");
    return 2;
  }
  if (argc == 2) {
    char* end = nullptr;
    errno = 0;
    rounds = std::strtol(argv[1], &end, 10);
    if (errno != 0 || end == argv[1] || *end != '\0' || rounds <= 0 || rounds > 1000000000L) {
      std::fprintf(stderr, "simgrid_pingpong: ROUND_TRIPS must be an integer in 1..1000000000, not '%s'\n", argv[1]);
      return 2;
    }
  }
  auto engine = hcasim::sim::make_engine();
  auto* zone = s4u::create_full_zone("pingpong");
  s4u::Host* a = zone->create_host("A", 1e9);
  s4u::Host* b = zone->create_host("B", 1e9);
  // One link as in the example's platform: 10 Gbit/s, 1 us.
  s4u::Link* link = zone->create_link("link", 1.25e9)->set_latency(1e-6)->seal();
  zone->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, {s4u::LinkInRoute(link)}, true);
  zone->seal();

  static char payload = 'x';
  s4u::Actor::create("pinger", a, [rounds] {
    s4u::Mailbox* out = s4u::Mailbox::by_name("ponger");
    s4u::Mailbox* in = s4u::Mailbox::by_name("pinger");
    for (long i = 0; i < rounds; ++i) {
      out->put(&payload, 1);
      in->get<char>();
    }
  });
  s4u::Actor::create("ponger", b, [rounds] {
    s4u::Mailbox* in = s4u::Mailbox::by_name("ponger");
    s4u::Mailbox* out = s4u::Mailbox::by_name("pinger");
    for (long i = 0; i < rounds; ++i) {
      in->get<char>();
      out->put(&payload, 1);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  engine->run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double messages = 2.0 * static_cast<double>(rounds);
  std::printf("simgrid_pingpong: messages=%.0f simulated_s=%.6f wall_s=%.3f messages_per_wall_s=%.0f\n", messages,
              s4u::Engine::get_clock(), wall, wall > 0 ? messages / wall : 0.0);
  return 0;
}
