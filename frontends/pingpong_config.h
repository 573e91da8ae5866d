#pragma once
/// \file What the libibverbs example programs' front end (frontends/pingpong_cli.h) hands the
/// simulator and gets back: plain structs, no SimGrid. sim/pingpong_sim.h run_pingpong takes a
/// PingpongConfig; frontends/pingpong_output.h turns a PingpongResult into the programs' lines.
#include <array>
#include <cstdint>
#include <vector>

#include "model/fault.h"

namespace hcasim::frontends {

/// The rdma-core example being simulated (rdma-core v44, libibverbs/examples/).
enum class PingpongProgram {
  Rc,   ///< ibv_rc_pingpong: SENDs on an RC QP (rc_pingpong.c)
  Uc,   ///< ibv_uc_pingpong: SENDs on a UC QP (uc_pingpong.c)
  Ud,   ///< ibv_ud_pingpong: SENDs of one datagram on a UD QP (ud_pingpong.c)
  Srq,  ///< ibv_srq_pingpong: SENDs on -q RC QPs sharing one SRQ (srq_pingpong.c)
};

/// What the program was asked for, in its own terms (already defaulted by the front end).
struct PingpongConfig {
  PingpongProgram program = PingpongProgram::Rc;
  uint32_t size = 4096;      ///< -s: bytes per SEND (rc/uc default 4096, ud 1024)
  uint32_t iters = 1000;     ///< -n: exchanges, >= 1
  uint32_t rx_depth = 500;   ///< -r: receives posted at a time, >= 1
  uint32_t path_mtu = 1024;  ///< -m (RC, UC): the QP's path MTU, bytes; UD sends at the port MTU
  uint32_t num_qp = 1;       ///< -q (srq): RC QPs on each side sharing its SRQ and CQ, 1..255; 1 otherwise
  bool events = false;       ///< -e: sleep in ibv_get_cq_event instead of polling the CQ
  bool validate = false;     ///< -c: the client marks its buffer, the server checks what it received
  uint64_t seed = 1;         ///< --seed: the PSNs printed (srand48)
  model::FaultConfig faults;  ///< --set fault.*
  model::RcRetry retry;       ///< rc_pingpong's timeout 14, retry_cnt 7, rnr_retry 7; --set qp.*
};

/// One side of a run: what its program measured and printed.
struct PingpongSide {
  double start_ns = 0;       ///< simulated time of its gettimeofday(&start)
  double end_ns = 0;         ///< simulated time of its gettimeofday(&end)
  uint32_t qpn = 0;          ///< its (first) QP's number
  std::vector<uint32_t> qpns;  ///< every QP's number, in creation order (srq: -q of them)
  uint64_t cq_events = 0;    ///< -e: completion events it took (num_cq_events)
  uint64_t interrupts = 0;   ///< interrupts its HCA raised
  std::vector<uint32_t> invalid_pages;  ///< -c, the server: pages whose first byte is wrong
};

/// A run: the client (index 0, the host of --platform) and the server (index 1).
struct PingpongResult {
  std::array<PingpongSide, 2> side{};
  uint32_t max_inline_data = 0;  ///< the QP's cap.max_inline_data (ibv_query_qp), bytes
  bool inline_sends = false;     ///< the SENDs carry IBV_SEND_INLINE (max_inline_data >= size)
  uint32_t path_mtu = 0;         ///< the MTU the messages are cut at, bytes
  uint64_t blueflame_posts = 0, doorbell_posts = 0;  ///< the client's HCA
  double simulated_s = 0;
  double wall_s = 0;        ///< the simulation's wall-clock time (--stats), s
  uint64_t max_rss_kb = 0;  ///< the process's peak RSS after it (getrusage ru_maxrss), KiB
  bool faults_configured = false;
  model::FaultStats local_faults, remote_faults;
};

}  // namespace hcasim::frontends
