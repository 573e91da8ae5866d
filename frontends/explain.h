#pragma once
/// \file `--explain`: what bounds a run. The simulation measures each resource's busy time over
/// the measured interval (ExplainMeasure: the SimGrid links of the routes, each carrying the
/// payload ceiling model/ computes for it; the HCAs' send engines; each CPU by activity); this
/// turns it into utilisations, names the bottleneck by one documented rule (explain_rule) and
/// gives a what-if computed with model/'s closed forms. The latency tool gets its one-way time
/// as a sum of model/'s stage latencies instead (LatencyStage). No SimGrid here: sim/ fills the
/// structs, this prints them (docs/cli.md "--explain").
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontends/measure.h"

namespace hcasim::frontends {

/// A resource's utilisation over the interval.
struct ResourceUse {
  std::string name;            ///< "local PCIe gen1 x8 host->device (DMA read completions)", "remote CPU 1"
  std::string kind;            ///< "bus_read", "dma_tags", "ib", "bus_write", "bus_shared", "hca_engine", "hca_wqe",
                               ///< "hca_qp", "hca_tx_port", "hca_rx_port", "cpu"
  int host = 0;                ///< 0 local, 1 remote (the sending host's for a route's IB link)
  int cpu = -1;                ///< the CPU, for kind "cpu"
  double busy_pct = 0;         ///< share of the interval it was busy (a CPU: its work, polling excluded), %
  double ceiling_gbit_s = 0;   ///< links: the model's payload ceiling; else 0
  double carried_gbit_s = 0;   ///< links: ceiling x busy share, the payload-equivalent rate it carried
  double poll_pct = 0;         ///< CPUs: share spent polling (waiting for the HCA or data), %
  std::vector<std::pair<std::string, double>> activities;  ///< CPUs: % by activity, largest first (work only)
};

/// The explanation of one interval: every resource with any use, busiest first, and the bound.
struct Explanation {
  double interval_s = 0;
  std::vector<ResourceUse> resources;  ///< busiest first (ties: as measured)
  bool bound = false;                  ///< the busiest is at or above kBoundPct
  std::string bottleneck;              ///< one line naming it (or saying none is saturated)
  std::string what_if;                 ///< one line: what would move it, with the model's figure
};

/// The share at or above which a resource is the run's bound, %: a link busy for 95 % of the
/// interval at its ceiling, a CPU working (polling excluded) 95 % of it, a send engine moving
/// trains 95 % of it.
constexpr double kBoundPct = 95.0;

/// The rule, as printed under the table and in docs/cli.md.
const char* explain_rule();

/// Utilisations, the bottleneck and a what-if of `m` (docs/cli.md "--explain"). A link's use is
/// its busy time over the interval; a CPU's is its time doing anything but polling (a CPU that
/// polls is waiting for something else), with polling shown beside it; the send engine's is the
/// time it spent on trains. Resources used less than 0.5 % are left out.
Explanation explain(const ExplainMeasure& m);

/// The explanation as text: a header, a row per resource, the rule, the bottleneck and the
/// what-if lines.
std::string format_explain(const Explanation& e);

/// The explanation as JSON: {"interval_s", "rule", "bound_pct", "resources": [{name, kind,
/// host, cpu, busy_pct, ceiling_gbit_s, carried_gbit_s, poll_pct, activities_pct: {..}}],
/// "bound", "bottleneck", "what_if"}.
nlohmann::ordered_json explain_json(const Explanation& e);

/// A latency tool's one-way time as its stages: the rows, their sum and the measured typical
/// one-way time it is compared with (us), as text.
std::string format_latency_stages(uint64_t bytes, const std::vector<LatencyStage>& stages, double t_typical_us);

/// The same as JSON: {"bytes", "stages": [{stage, ns, source}], "sum_us", "t_typical_us",
/// "difference_us"}.
nlohmann::ordered_json latency_stages_json(uint64_t bytes, const std::vector<LatencyStage>& stages,
                                           double t_typical_us);

}  // namespace hcasim::frontends
