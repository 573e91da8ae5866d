#pragma once
/// \file Entry point of the simulated libibverbs examples (ibv_rc_pingpong, ibv_uc_pingpong,
/// ibv_ud_pingpong) between two hosts, each with its emulated HCA: both sides run the program's
/// loop (rdma-core v44 libibverbs/examples/rc_pingpong.c main() and parse_single_wc) on their
/// host's application CPU. One call builds one SimGrid engine, so it may run once per process.
#include "frontends/pingpong_config.h"
#include "model/platform.h"

namespace hcasim::sim {

/// What run_pingpong checks before it simulates anything: the platforms' parameters and the
/// config against the HCAs. Returns the result's setup facts (max_inline_data, inline_sends,
/// path_mtu), no times. Throws InputError when a platform parameter is missing or out of range
/// or the program is one the simulated HCA cannot run (ibv_srq_pingpong: no SRQ), and frontends::ConfigError naming the field the HCAs refuse: size
/// (above hca.max_msg_size; ud: above a port's MTU, ib.mtu), path_mtu (above a port's MTU),
/// rx_depth (above hca.max_qp_wr, or rx_depth + 1 CQEs above hca.cq_entries); size also with -c
/// (validate) above 64 MB, whose buffers hold real bytes.
frontends::PingpongResult check_pingpong(const model::Platform& local, const model::Platform& remote,
                                         const frontends::PingpongConfig& config);

/// Runs `config` between a client on `local` (side 0) and a server on `remote` (side 1).
/// Throws as check_pingpong, and std::runtime_error when a completion fails ("Failed status
/// ... for wr_id N", as the program prints it) or the run stalls.
frontends::PingpongResult run_pingpong(const model::Platform& local, const model::Platform& remote,
                                       const frontends::PingpongConfig& config);

}  // namespace hcasim::sim
