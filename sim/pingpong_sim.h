#pragma once
/// \file Entry point of the simulated libibverbs examples (ibv_rc_pingpong, ibv_uc_pingpong,
/// ibv_ud_pingpong, ibv_srq_pingpong) between two hosts, each with its emulated HCA: both sides
/// run the program's loop (rdma-core v44 libibverbs/examples/rc_pingpong.c main() and
/// parse_single_wc; srq_pingpong.c main(): -q RC QPs per side on one CQ and one SRQ, a SEND in
/// flight on each, -n exchanges counted over all of them) on their host's application CPU. One
/// call builds one SimGrid engine, so it may run once per process.
#include "frontends/pingpong_config.h"
#include "model/platform.h"

namespace hcasim::sim {

/// What run_pingpong checks before it simulates anything: the platforms' parameters and the
/// config against the HCAs. Returns the result's setup facts (max_inline_data, inline_sends,
/// path_mtu), no times. Throws InputError when a platform parameter is missing or out of range
/// or the config is one the program refuses (srq: num_qp not in 1..255 or above rx_depth; other
/// programs: num_qp other than 1), and frontends::ConfigError naming the field the HCAs refuse:
/// size (above hca.max_msg_size; ud: above a port's MTU, ib.mtu), path_mtu (above a port's MTU),
/// rx_depth (above hca.max_qp_wr, which bounds an SRQ's max_wr too, or rx_depth + 1 CQEs, srq:
/// rx_depth + num_qp, above hca.cq_entries); size also with -c (validate) above 64 MB, whose
/// buffers hold real bytes.
frontends::PingpongResult check_pingpong(const model::Platform& local, const model::Platform& remote,
                                         const frontends::PingpongConfig& config);

/// Runs `config` between a client on `local` (side 0) and a server on `remote` (side 1).
/// Throws as check_pingpong, and std::runtime_error when a completion fails ("Failed status
/// ... for wr_id N", as the program prints it) or the run stalls.
frontends::PingpongResult run_pingpong(const model::Platform& local, const model::Platform& remote,
                                       const frontends::PingpongConfig& config);

}  // namespace hcasim::sim
