#include "frontends/explain.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/ranges.h>

#include <fmt/format.h>

namespace hcasim::frontends {

namespace {

constexpr double kShownPct = 0.5;  // resources used less than this are left out

const char* speed_name(model::ib::Speed s) {
  switch (s) {
    case model::ib::Speed::SDR: return "SDR";
    case model::ib::Speed::DDR: return "DDR";
    case model::ib::Speed::QDR: return "QDR";
    case model::ib::Speed::FDR10: return "FDR10";
    case model::ib::Speed::FDR: return "FDR";
  }
  return "?";
}

/// The testbed's names: host A is index 0, B index 1.
int host_of(char c) { return c == 'B' ? 1 : 0; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The links of the route whose data host `from` sends (testbed.cpp's names).
bool on_route_of(const std::string& link, int from) {
  const char f = from == 0 ? 'A' : 'B', t = from == 0 ? 'B' : 'A';
  const std::string fs(1, f), ts(1, t);
  if (link == "ib-" + fs + "-to-" + ts) return true;
  if (link == ts + "-pcie-d2h" || link == ts + "-pcix") return true;
  return link.rfind(fs + "-", 0) == 0 && link != fs + "-pcie-d2h";
}

ResourceUse link_resource(const LinkUse& l, const ExplainMeasure& m) {
  ResourceUse r;
  r.busy_pct = m.interval_s > 0 ? 100 * l.busy_s / m.interval_s : 0;
  r.ceiling_gbit_s = l.ceiling_gbit_s;
  r.carried_gbit_s = m.interval_s > 0 ? l.ceiling_gbit_s * l.busy_s / m.interval_s : 0;
  if (l.link.rfind("ib-", 0) == 0) {
    const int from = host_of(l.link[3]);
    r.kind = "ib";
    r.host = from;
    r.name = fmt::format("IB link {}x {} {} -> {}", m.ib.width, speed_name(m.ib.speed), m.host_role[static_cast<size_t>(from)],
                         m.host_role[static_cast<size_t>(1 - from)]);
    return r;
  }
  r.host = host_of(l.link[0]);
  const auto h = static_cast<size_t>(r.host);
  const std::string who = fmt::format("{} ({})", r.host == 0 ? "local" : "remote", m.host_role[h]);
  const std::string bus = m.bus[h].describe();
  if (ends_with(l.link, "-pcie-h2d")) {
    r.kind = "bus_read";
    r.name = fmt::format("{} {} host->device (DMA read completions)", who, bus);
  } else if (ends_with(l.link, "-pcie-d2h")) {
    r.kind = "bus_write";
    r.name = fmt::format("{} {} device->host (DMA writes)", who, bus);
  } else if (ends_with(l.link, "-dma-read-tags") && m.bus[h].is_pcix()) {
    const model::pcix::Config& x = m.bus[h].pcix;
    r.kind = "dma_tags";
    r.name = fmt::format("{} DMA reads in flight ({} split reads x MMRBC {} B per {:.0f} ns split completion)", who,
                         x.max_outstanding_split, x.max_memory_read_byte_count, x.split_completion_latency_ns);
  } else if (ends_with(l.link, "-dma-read-tags")) {
    r.kind = "dma_tags";
    r.name = fmt::format("{} DMA reads in flight ({} tags x MaxReadReq {} B per {:.0f} ns round trip)", who,
                         m.max_outstanding_reads[h], m.bus[h].pcie.max_read_request, m.dma_read_rtt_ns[h]);
  } else if (ends_with(l.link, "-pcix-read")) {
    r.kind = "bus_read";
    r.name = fmt::format("{} {} DMA reads (split completions)", who, bus);
  } else if (ends_with(l.link, "-pcix")) {
    r.kind = "bus_shared";
    r.name = fmt::format("{} {} (both directions, shared)", who, bus);
  } else {
    r.kind = "link";
    r.name = l.link;
  }
  return r;
}

double share(double ns, double interval_s) { return interval_s > 0 ? 100 * ns * 1e-9 / interval_s : 0; }

std::string pct(double v) { return fmt::format("{:.1f} %", v); }

/// The what-if of the bound `b`: what would move it, with the model's figure.
std::string what_if(const ResourceUse& b, const ExplainMeasure& m) {
  const auto h = static_cast<size_t>(b.host);
  // The route's next ceiling: the least of the other links the same data crosses.
  auto next_ceiling = [&]() -> std::string {
    std::optional<ResourceUse> best;
    for (const LinkUse& l : m.links) {
      if (!on_route_of(l.link, b.kind == "bus_write" ? 1 - b.host : b.host)) continue;
      ResourceUse r = link_resource(l, m);
      if (r.name == b.name) continue;
      if (!best || r.ceiling_gbit_s < best->ceiling_gbit_s) best = std::move(r);
    }
    return !best ? std::string()
                 : fmt::format("; the route's next ceiling is {:.2f} Gbit/s ({})", best->ceiling_gbit_s, best->name);
  };
  if ((b.kind == "bus_read" || b.kind == "bus_write") && !m.bus[h].is_pcix()) {
    model::HostBus faster = m.bus[h];
    std::string change;
    if (faster.pcie.gen < 3) {
      ++faster.pcie.gen;
      change = fmt::format("PCIe gen{} (--set pcie.gen={})", faster.pcie.gen, faster.pcie.gen);
    } else {
      faster.pcie.lanes *= 2;
      change = fmt::format("a x{} slot (--set pcie.lanes={})", faster.pcie.lanes, faster.pcie.lanes);
    }
    const bool read = b.kind == "bus_read";
    const double now = read ? m.bus[h].dma_read_ceiling_gbps() : m.bus[h].dma_write_ceiling_gbps();
    const double then = read ? faster.dma_read_ceiling_gbps() : faster.dma_write_ceiling_gbps();
    return fmt::format("what if: {}: the DMA {} ceiling goes from {:.2f} to {:.2f} Gbit/s (model/pcie.h){}", change,
                       read ? "read" : "write", now, then, next_ceiling());
  }
  if (b.kind == "dma_tags" && !m.bus[h].is_pcix()) {
    model::HostBus more = m.bus[h];
    const double now = m.bus[h].dma_read_latency_bound_gbps(m.dma_read_rtt_ns[h], m.max_outstanding_reads[h]);
    if (more.pcie.max_read_request < 4096) {
      more.pcie.max_read_request = 4096;
      return fmt::format("what if: MaxReadReq 4096 (--set pcie.max_read_request=4096): the DMA read latency bound goes "
                         "from {:.2f} to {:.2f} Gbit/s (model/pcie.h){}",
                         now, more.dma_read_latency_bound_gbps(m.dma_read_rtt_ns[h], m.max_outstanding_reads[h]),
                         next_ceiling());
    }
    const int tags = 2 * m.max_outstanding_reads[h];
    return fmt::format("what if: {} outstanding reads (--set hca.max_outstanding_reads={}): the DMA read latency bound "
                       "goes from {:.2f} to {:.2f} Gbit/s (model/pcie.h){}",
                       tags, tags, now, more.dma_read_latency_bound_gbps(m.dma_read_rtt_ns[h], tags), next_ceiling());
  }
  if (b.kind == "ib" && m.ib.speed != model::ib::Speed::FDR) {
    model::ib::Config faster = m.ib;
    faster.speed = static_cast<model::ib::Speed>(static_cast<int>(m.ib.speed) + 1);
    return fmt::format("what if: a {} link (--set ib.speed={}): the SEND goodput ceiling goes from {:.2f} to {:.2f} Gbit/s "
                       "(model/ib.h){}",
                       speed_name(faster.speed), speed_name(faster.speed),
                       model::ib::send_goodput_ceiling_gbps(m.ib, m.ib_message_bytes),
                       model::ib::send_goodput_ceiling_gbps(faster, m.ib_message_bytes), next_ceiling());
  }
  if (b.kind == "dma_tags") {  // PCI-X: the split reads in flight
    model::HostBus more = m.bus[h];
    more.pcix.max_outstanding_split *= 2;
    return fmt::format("what if: {} outstanding split reads (--set pcix.max_outstanding_split={}): the DMA read latency "
                       "bound goes from {:.2f} to {:.2f} Gbit/s (model/pcix.h){}",
                       more.pcix.max_outstanding_split, more.pcix.max_outstanding_split,
                       m.bus[h].dma_read_latency_bound_gbps(0, 0), more.dma_read_latency_bound_gbps(0, 0), next_ceiling());
  }
  if (b.kind == "bus_shared" || b.kind == "bus_read")
    return fmt::format("what if: the HCA in a PCIe slot, whose directions are separate links (a PCI-X bus carries both "
                       "directions at {:.2f} Gbit/s)",
                       m.bus[h].dma_write_ceiling_gbps());
  if (b.kind == "hca_qp")
    return "what if: the WRs spread over more QPs (perftest -q): each QP's WQEs have a processing unit of their own, "
           "and the port's packet rate (hca.tx_packet_time) is the next bound";
  if (b.kind == "hca_tx_port" || b.kind == "hca_rx_port")
    return "what if: larger messages: the port's time is per packet (hca.tx_packet_time, hca.rx_packet_time), so "
           "fewer packets carry the same bytes";
  if (b.kind == "hca_wqe")
    return "what if: WRs posted ahead of the one in flight (a deeper send queue, -t) let the HCA fetch WQEs while it "
           "transfers, which hides the wait";
  if (b.kind == "cpu") {
    auto act = [&](const std::string& a) {
      for (const auto& [name, v] : b.activities)
        if (name == a) return v;
      return 0.0;
    };
    const std::string& role = m.host_role[h];
    const bool sender = b.host == 0;
    if (act("coherence") >= 5 && b.cpu != m.irq_cpu[h])
      return fmt::format("what if: {} on the package of the interrupt CPU {} (netperf -T): the cross-package cache-line "
                         "transfers are {} of this CPU",
                         role, m.irq_cpu[h], pct(act("coherence")));
    if (!b.activities.empty() && b.activities.front().first == "copy")
      return sender ? fmt::format("what if: bzcopy (--set sdp.zcopy_thresh=1) takes the send copy, {} of this CPU, off it",
                                  pct(act("copy")))
                    : fmt::format("what if: a faster receive CPU: its copy to the user buffer is {} of it "
                                  "(cpu.copy_rx_rate, a memory stall: --set host.clock does not move it)",
                                  pct(act("copy")));
    const std::string top = b.activities.empty() ? "work" : b.activities.front().first;
    return fmt::format("what if: a faster {} CPU (--set host.clock): {} is {} of it", sender ? "sending" : "receiving", top,
                       pct(b.activities.empty() ? b.busy_pct : b.activities.front().second));
  }
  return "what if: nothing of the model's ceilings moves it";
}

}  // namespace

const char* explain_rule() {
  return "rule: the bottleneck is the busiest resource, saturated when busy >= 95 % of the interval: a "
         "link's bytes at its model ceiling, a CPU's work (polling excluded), the HCA's wait for WQEs, an HCA "
         "stage's time taken";
}

Explanation explain(const ExplainMeasure& m) {
  Explanation e;
  e.interval_s = m.interval_s;
  std::vector<ResourceUse> rs;
  for (const LinkUse& l : m.links) rs.push_back(link_resource(l, m));
  for (size_t h = 0; h < 2; ++h) {
    const std::string who = fmt::format("{} ({})", h == 0 ? "local" : "remote", m.host_role[h]);
    ResourceUse eng;
    eng.kind = "hca_engine";
    eng.host = static_cast<int>(h);
    eng.name = fmt::format("{} HCA send engine ({} trains; its time is the route's)", who, m.hca[h].trains);
    eng.busy_pct = m.interval_s > 0 ? 100 * m.hca[h].engine_busy_s / m.interval_s : 0;
    rs.push_back(eng);
    ResourceUse wqe;
    wqe.kind = "hca_wqe";
    wqe.host = static_cast<int>(h);
    wqe.name = fmt::format("{} HCA waiting for WQEs (doorbell + WQE fetch, or BlueFlame)", who);
    wqe.busy_pct = m.interval_s > 0 ? 100 * m.hca[h].wqe_wait_s / m.interval_s : 0;
    rs.push_back(wqe);
    // The HCA's pipeline stages (hca/stage.h): each one's time taken over the interval.
    auto stage = [&](const char* kind, std::string name, double busy_s) {
      ResourceUse r;
      r.kind = kind;
      r.host = static_cast<int>(h);
      r.name = std::move(name);
      r.busy_pct = m.interval_s > 0 ? 100 * busy_s / m.interval_s : 0;
      rs.push_back(std::move(r));
    };
    const HcaUse& u = m.hca[h];
    stage("hca_qp", fmt::format("{} HCA WQE processing of QP 0x{:04x} ({} WQEs, hca.qp_wqe_time each)", who, u.qp_wqe_qpn,
                                u.qp_wqes),
          u.qp_wqe_busy_s);
    stage("hca_tx_port", fmt::format("{} HCA port transmit ({} packets, hca.tx_packet_time each)", who, u.tx_packets),
          u.tx_port_busy_s);
    stage("hca_rx_port", fmt::format("{} HCA port receive ({} packets, hca.rx_packet_time each)", who, u.rx_packets),
          u.rx_port_busy_s);
    for (const CoreProfile& c : m.cores[h]) {
      ResourceUse r;
      r.kind = "cpu";
      r.host = static_cast<int>(h);
      r.cpu = c.core;
      std::vector<std::string> roles;
      if (c.core == m.app_cpu[h]) roles.push_back(m.host_role[h]);
      if (c.core == m.irq_cpu[h]) roles.push_back("interrupts");
      r.name = fmt::format("{} CPU {}{}", h == 0 ? "local" : "remote", c.core,
                           roles.empty() ? "" : fmt::format(" ({})", fmt::join(roles, ", ")));
      double work = 0;
      for (const auto& [a, ns] : c.busy_ns) {
        if (a == "poll") {
          r.poll_pct = share(ns, m.interval_s);
          continue;
        }
        work += ns;
        if (ns > 0) r.activities.emplace_back(a, share(ns, m.interval_s));
      }
      std::stable_sort(r.activities.begin(), r.activities.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
      r.busy_pct = share(work, m.interval_s);
      rs.push_back(std::move(r));
    }
  }
  // The send engine's time is the route's (one train at a time, at the bottleneck's rate): it is
  // shown, never named the bound; its own stage, the wait for WQEs, is ranked.
  std::vector<ResourceUse> ranked, shown;
  for (auto& r : rs)
    if (r.busy_pct >= kShownPct || r.poll_pct >= kShownPct) shown.push_back(r);
  std::stable_sort(shown.begin(), shown.end(), [](const ResourceUse& a, const ResourceUse& b) { return a.busy_pct > b.busy_pct; });
  e.resources = shown;
  const ResourceUse* top = nullptr;
  for (const auto& r : e.resources)
    if (r.kind != "hca_engine") {
      top = &r;
      break;
    }
  if (top == nullptr) {
    e.bottleneck = "bottleneck: nothing was measurably busy";
    e.what_if = "what if: nothing of the model's ceilings moves it";
    return e;
  }
  e.bound = top->busy_pct >= kBoundPct;
  std::string detail;
  if (top->kind == "cpu") {
    std::vector<std::string> parts;
    for (size_t i = 0; i < top->activities.size() && i < 3; ++i)
      parts.push_back(fmt::format("{} {}", top->activities[i].first, pct(top->activities[i].second)));
    detail = fmt::format(": {}", fmt::join(parts, ", "));
  } else if (top->ceiling_gbit_s > 0) {
    detail = fmt::format(": {:.2f} of its {:.2f} Gbit/s ceiling", top->carried_gbit_s, top->ceiling_gbit_s);
  }
  e.bottleneck = fmt::format("bottleneck: {}, busy {}{}", top->name, pct(top->busy_pct), detail);
  if (!e.bound)
    e.bottleneck += fmt::format(" (below 95 %: not saturated; the rest of the interval the run waits on round "
                                "trips, completions or credits)");
  e.what_if = what_if(*top, m);
  return e;
}

std::string format_explain(const Explanation& e) {
  std::string out = fmt::format("\nexplain: resources over the measured interval, {:.6f} s simulated\n", e.interval_s);
  out += "  busy %  resource\n";
  for (const ResourceUse& r : e.resources) {
    std::string detail;
    if (r.ceiling_gbit_s > 0) detail = fmt::format(": {:.2f} of {:.2f} Gbit/s", r.carried_gbit_s, r.ceiling_gbit_s);
    if (r.kind == "cpu") {
      std::vector<std::string> parts;
      for (size_t i = 0; i < r.activities.size() && i < 3; ++i)
        parts.push_back(fmt::format("{} {:.1f}", r.activities[i].first, r.activities[i].second));
      if (r.poll_pct >= kShownPct) parts.push_back(fmt::format("(polling {:.1f})", r.poll_pct));
      detail = ": " + fmt::format("{}", fmt::join(parts, ", "));
    }
    out += fmt::format("  {:6.1f}  {}{}\n", r.busy_pct, r.name, detail);
  }
  out += fmt::format("{}\n{}\n{}\n", explain_rule(), e.bottleneck, e.what_if);
  return out;
}

nlohmann::ordered_json explain_json(const Explanation& e) {
  nlohmann::ordered_json j;
  j["interval_s"] = e.interval_s;
  j["rule"] = explain_rule();
  j["bound_pct"] = kBoundPct;
  j["resources"] = nlohmann::ordered_json::array();
  for (const ResourceUse& r : e.resources) {
    nlohmann::ordered_json x;
    x["name"] = r.name;
    x["kind"] = r.kind;
    x["host"] = r.host == 0 ? "local" : "remote";
    x["cpu"] = r.cpu >= 0 ? nlohmann::ordered_json(r.cpu) : nlohmann::ordered_json();
    x["busy_pct"] = r.busy_pct;
    x["ceiling_gbit_s"] = r.ceiling_gbit_s > 0 ? nlohmann::ordered_json(r.ceiling_gbit_s) : nlohmann::ordered_json();
    x["carried_gbit_s"] = r.ceiling_gbit_s > 0 ? nlohmann::ordered_json(r.carried_gbit_s) : nlohmann::ordered_json();
    x["poll_pct"] = r.kind == "cpu" ? nlohmann::ordered_json(r.poll_pct) : nlohmann::ordered_json();
    nlohmann::ordered_json acts = nlohmann::ordered_json::object();
    for (const auto& [a, v] : r.activities) acts[a] = v;
    x["activities_pct"] = acts;
    j["resources"].push_back(std::move(x));
  }
  j["bound"] = e.bound;
  j["bottleneck"] = e.bottleneck;
  j["what_if"] = e.what_if;
  return j;
}

std::string format_latency_stages(uint64_t bytes, const std::vector<LatencyStage>& stages, double t_typical_us) {
  std::string out = fmt::format("\nexplain: one-way time of {} B as its stages (model/, mean of both ways)\n", bytes);
  out += "      us  stage (source)\n";
  double sum = 0;
  for (const LatencyStage& s : stages) {
    out += fmt::format("  {:6.3f}  {} ({})\n", s.ns * 1e-3, s.stage, s.source);
    sum += s.ns;
  }
  out += fmt::format("  {:6.3f}  sum of the stages\n", sum * 1e-3);
  double diff = t_typical_us - sum * 1e-3;
  if (std::fabs(diff) < 0.0005) diff = 0;  // no "-0.000"
  out += fmt::format("  {:6.3f}  t_typical, measured (difference {:+.3f} us: timer ticks, interference and the order of "
                     "simultaneous events)\n",
                     t_typical_us, diff);
  return out;
}

nlohmann::ordered_json latency_stages_json(uint64_t bytes, const std::vector<LatencyStage>& stages, double t_typical_us) {
  nlohmann::ordered_json j;
  j["bytes"] = bytes;
  j["stages"] = nlohmann::ordered_json::array();
  double sum = 0;
  for (const LatencyStage& s : stages) {
    j["stages"].push_back({{"stage", s.stage}, {"ns", s.ns}, {"source", s.source}});
    sum += s.ns;
  }
  j["sum_us"] = sum * 1e-3;
  j["t_typical_us"] = t_typical_us;
  j["difference_us"] = t_typical_us - sum * 1e-3;
  return j;
}

}  // namespace hcasim::frontends
