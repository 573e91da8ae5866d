// The verbs shim's fault statistics (emu/verbs_shim/shim.h, report_fault_stats): with
// $HCASIM_FAULT_STATS set to 1, each QP prints what the injected faults of $HCASIM_FAULT did on
// its sending side (emu::Qp::fault_stats, model::FaultStats) as one line on stderr when it is
// destroyed, so that a stock program's run shows that frames really were lost and recovered,
// and a second line with the payload it carried each way (emu::Qp::payload_stats), so that a
// program's run shows its bytes went through the emulated HCA; and the port, at exit, what it refused of processes without the subnet's secret and the
// packets that failed the P_Key check.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "emu/verbs_shim/shim.h"

namespace hcasim::emu::shim {

namespace {
/// The transport's abbreviation as the IBA names it (RC, UC, UD), or the type's number.
std::string qp_type_name(ibv_qp_type t) {
  switch (t) {
    case IBV_QPT_RC: return "RC";
    case IBV_QPT_UC: return "UC";
    case IBV_QPT_UD: return "UD";
    default: return fmt::format("type {}", static_cast<int>(t));
  }
}

bool stats_on() {
  static const bool on = [] {
    const char* env = std::getenv(kFaultStatsEnv);
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return on;
}
}  // namespace

void report_fault_stats(QpObj& q) {
  if (!stats_on() || q.emu == nullptr) return;
  const model::FaultStats s = q.emu->fault_stats();
  const std::string line =
      fmt::format("hcasim verbs shim: QP {:#x}: {} frames lost, {} retransmitted ({} frames sent, {} corrupted, "
                  "{} duplicated, {} reordered; {} NAKs, {} timeouts, {} RNR NAKs; {} received with a bad ICRC, "
                  "{} failing a header check)\n",
                  q.qp.qp_num, s.lost, s.retransmitted, s.packets, s.corrupted, s.duplicated, s.reordered, s.naks,
                  s.timeouts, s.rnr_naks, q.emu->icrc_drops(), q.emu->header_drops());
  const emu::Qp::PayloadStats p = q.emu->payload_stats();
  const std::string bytes =
      fmt::format("hcasim verbs shim: QP {:#x} ({}): {} payload bytes sent in {} packets, {} received in {} packets\n",
                  q.qp.qp_num, qp_type_name(q.qp.qp_type), p.sent, s.packets, p.received, p.packets_received);
  std::fputs((line + bytes).c_str(), stderr);
  std::fflush(stderr);
}

void report_port_stats() {
  if (!stats_on()) return;
  const Hca& h = *device().hca;
  const std::string line =
      fmt::format("hcasim verbs shim: port: {} strangers refused (streams that failed the subnet's handshake), "
                  "{} datagrams without the subnet's MAC dropped, {} packets whose P_Key did not match "
                  "their QP's dropped\n",
                  h.strangers_refused(), h.datagrams_refused(), h.pkey_violations());
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace hcasim::emu::shim
