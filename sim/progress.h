#pragma once
/// \file A progress report from inside a simulation, for the command line's long runs.
#include <functional>

namespace hcasim::sim {

/// Calls `report(simulated_s, wall_s)` from the simulation's own thread about once every
/// `every_wall_s` wall seconds while the simulations after it run (simulated_s: the Scheduler's
/// clock; wall_s: wall seconds since this call). The Scheduler's time-advance hook carries it
/// (sim::on_time_advance), so it costs a counter per clock step, and it cannot be removed: call it
/// at most once per process, and only when something is to be shown (a terminal). No effect on
/// what is simulated.
void report_progress(std::function<void(double simulated_s, double wall_s)> report, double every_wall_s = 1.0);

}  // namespace hcasim::sim
