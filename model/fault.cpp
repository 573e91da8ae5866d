#include "model/fault.h"

#include <charconv>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "model/error.h"

namespace hcasim::model {

double RcRetry::local_ack_timeout_ns() const {
  if (timeout == 0) return 0;
  // 4.096 us x 2^timeout (IBA 9.7.6.1.3). A power of two below 2^64 is exact as a double: the
  // shift gives what ldexp gives, without a library call on every ACK timer restart.
  if (timeout < 64) return 4096.0 * static_cast<double>(uint64_t{1} << timeout);
  return 4096.0 * std::ldexp(1.0, timeout);
}

namespace {

[[noreturn]] void bad(std::string_view key, const std::string& what) {
  throw InputError(fmt::format("--set {}: {}", key, what));
}

double parse_probability(std::string_view key, std::string_view v) {
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x))
    bad(key, fmt::format("'{}' is not a number", v));
  if (x < 0 || x >= 1) bad(key, fmt::format("{} is not a probability in [0, 1)", v));
  return x;
}

uint64_t parse_whole(std::string_view key, std::string_view v, uint64_t max) {
  uint64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    bad(key, fmt::format("'{}' is not a whole number", v));
  if (x > max) bad(key, fmt::format("{} is above {}", v, max));
  return x;
}

}  // namespace

bool apply_fault_setting(const std::string& assignment, FaultConfig& faults, RcRetry& retry) {
  const std::string_view a = assignment;
  const size_t eq = a.find('=');
  const std::string_view key = a.substr(0, eq);
  if (!key.starts_with("fault.") && !key.starts_with("qp.")) return false;
  if (eq == std::string_view::npos) bad(key, "expected KEY=VALUE");
  const std::string_view v = a.substr(eq + 1);
  FaultConfig f = faults;
  if (key == "fault.loss") f.loss = parse_probability(key, v);
  else if (key == "fault.corrupt") f.corrupt = parse_probability(key, v);
  else if (key == "fault.dup") f.dup = parse_probability(key, v);
  else if (key == "fault.reorder") f.reorder = parse_probability(key, v);
  else if (key == "fault.seed") f.seed = parse_whole(key, v, UINT64_MAX);
  else if (key == "qp.retry_cnt") retry.retry_cnt = static_cast<uint8_t>(parse_whole(key, v, 7));
  else if (key == "qp.rnr_retry") retry.rnr_retry = static_cast<uint8_t>(parse_whole(key, v, 7));
  else if (key == "qp.timeout") retry.timeout = static_cast<uint8_t>(parse_whole(key, v, 31));
  else
    bad(key, "unknown key (fault.loss, fault.corrupt, fault.dup, fault.reorder, fault.seed, qp.retry_cnt, "
             "qp.rnr_retry, qp.timeout)");
  if (f.loss + f.corrupt + f.dup + f.reorder >= 1)
    bad(key, fmt::format("the fault probabilities add up to {} (must be below 1)", f.loss + f.corrupt + f.dup + f.reorder));
  faults = f;
  return true;
}

const char* fate_name(Fate f) {
  switch (f) {
    case Fate::Deliver: return "delivered";
    case Fate::Lose: return "lost";
    case Fate::Corrupt: return "corrupted";
    case Fate::Duplicate: return "duplicated";
    case Fate::Reorder: return "reordered";
  }
  return "?";
}

FaultDraw::FaultDraw(const FaultConfig& config, uint64_t stream)
    : config_(config), rng_(config.seed ^ (stream * 0x9E3779B97F4A7C15ull)) {}

Fate FaultDraw::next() {
  if (!config_.any()) return Fate::Deliver;
  double u = rng_.uniform();
  if ((u -= config_.loss) < 0) return Fate::Lose;
  if ((u -= config_.corrupt) < 0) return Fate::Corrupt;
  if ((u -= config_.dup) < 0) return Fate::Duplicate;
  if ((u -= config_.reorder) < 0) return Fate::Reorder;
  return Fate::Deliver;
}

FaultStats& FaultStats::operator+=(const FaultStats& o) {
  packets += o.packets;
  lost += o.lost;
  corrupted += o.corrupted;
  duplicated += o.duplicated;
  reordered += o.reordered;
  retransmitted += o.retransmitted;
  naks += o.naks;
  timeouts += o.timeouts;
  rnr_naks += o.rnr_naks;
  return *this;
}

std::string FaultStats::summary() const {
  return fmt::format("faults: {} packets, {} lost, {} corrupted, {} duplicated, {} reordered; {} retransmitted "
                     "({} NAKs, {} timeouts), {} RNR NAKs",
                     packets, lost, corrupted, duplicated, reordered, retransmitted, naks, timeouts, rnr_naks);
}

}  // namespace hcasim::model
