// Progress from inside a simulation (progress.h).
#include "sim/progress.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "sim/kernel.h"

namespace hcasim::sim {

void report_progress(std::function<void(double, double)> report, double every_wall_s) {
  using Clock = std::chrono::steady_clock;
  struct State {
    std::function<void(double, double)> report;
    std::chrono::duration<double> every;
    Clock::time_point start = Clock::now();
    Clock::time_point next = start;
    uint64_t steps = 0;
  };
  auto state = std::make_shared<State>();
  state->report = std::move(report);
  state->every = std::chrono::duration<double>(every_wall_s);
  state->next = state->start + std::chrono::duration_cast<Clock::duration>(state->every);
  on_time_advance([state](double clock_s) {
    if (++state->steps % 1024 != 0) return;  // the wall clock is read once per 1024 clock steps
    const Clock::time_point now = Clock::now();
    if (now < state->next) return;
    state->next = now + std::chrono::duration_cast<Clock::duration>(state->every);
    state->report(clock_s, std::chrono::duration<double>(now - state->start).count());
  });
}

}  // namespace hcasim::sim
