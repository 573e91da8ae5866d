#pragma once
/// \file netperf TCP_STREAM, TCP_MAERTS and TCP_RR over IPoIB: the Linux TCP/IPv4 stack of two hosts, modelled per
/// packet and per byte (model/netstack.h), over IPoIB in datagram (UD) or connected (RC) mode
/// (model/ipoib.h), through each host's bus (PCIe, model/pcie.h, or PCI-X, model/pcix.h) and
/// the IB link (model/ib.h).
///
/// What runs where, as in Linux 2.6.10-2.6.12 (the seeds' kernels):
/// - netperf's send() copies and checksums the data into MSS-sized skbs (csum_and_copy_from_
///   user), waiting while the socket's send buffer (-s, doubled and capped as Linux does) is
///   full, and transmits what the peer's window allows; a segment out costs TCP/IP output,
///   netfilter's two output hooks and conntrack when host.netfilter is on, the IP and TCP
///   header checksums, the DMA mapping of the frame and IPoIB's post.
/// - Every CQE (receive or send completion) is handled by the interrupt CPU (irq.affinity):
///   the CQ's event and interrupt are the simulated HCA's (hca.interrupt_latency after the CQE,
///   the entry netstack.interrupt), then ipoib_ib_completion re-arms the CQ and polls it 4 CQEs
///   at a time until a poll comes back short (interrupts amortise; a CQE after the re-arm raises
///   another).
///   A packet received passes the IP input path, netfilter's two input hooks and conntrack
///   (which verifies the TCP checksum at PRE_ROUTING: a full do_csum pass over the segment),
///   then TCP: if netserver holds the socket (in recv()), the segment goes to the socket's
///   backlog and netserver processes it when it releases the socket; if netserver sleeps in
///   recv() the segment goes to the prequeue and netserver processes it when woken; else
///   softirq processes it. TCP's own checksum pass is part of that processing.
/// - The receiver ACKs every second full segment when its window can advance (tcp_input.c
///   __tcp_ack_snd_check) and when a recv() opens the window to at least twice what was left
///   (tcp_cleanup_rbuf); a delayed-ACK timer (40 ms, Linux TCP_DELACK_MIN) covers the rest.
/// - The wire is the testbed's (sim/testbed.h): each frame is a SEND of one SGE on a UD QP pair
///   (datagram; Q_Key IPOIB_QKEY) or an RC QP pair (connected) of the simulated HCA (sim/hca.h),
///   posted with the send doorbell, moved over the sender's bus, the IB link and the receiver's
///   bus as SDP's messages are, and scattered into a buffer of the receive ring; the rings are
///   ipoib.send_ring and ipoib.recv_ring. Not modelled: packet loss (a receive ring that runs
///   dry fails the run; the window, 3/4 of the receive buffer, stays below it in the seeds'
///   runs), TCP's congestion window (no loss, and slow start opens it within a few round trips
///   of ~30 us), and cache effects beyond "the first checksum pass over DMA-written data is cold".
///
/// One call builds one SimGrid engine (one per process).
#include <array>
#include <vector>

#include "frontends/netperf_config.h"
#include "model/netstack.h"
#include "model/platform.h"
#include "sim/netperf_sim.h"

namespace hcasim::sim {

/// Runs netperf TCP_STREAM over IPoIB from `local` to `remote`. The platforms need [netstack],
/// [ipoib] and a [pcie] or [pcix] section. Throws InputError naming the platform key on a
/// missing or bad parameter, and for what this path does not model (verify_data, faults: the
/// front end refuses both first, in its own words). Throws frontends::ConfigError naming the
/// field for a CPU the host lacks (local_cpu, remote_cpu), a socket buffer below what the
/// segment size needs (local_send_socket, remote_recv_socket), and "transport" for a platform
/// without [netstack].
frontends::IpoibStreamResult run_ipoib_stream(const model::Platform& local, const model::Platform& remote,
                                              const frontends::TcpStreamConfig& config);

/// Runs netperf TCP_RR over IPoIB (nettest_bsd.c send_tcp_rr / recv_tcp_rr) on the connection
/// run_ipoib_stream models, its TCP state kept per direction: netperf send()s a request of
/// config.request_size bytes and recv()s until the config.response_size bytes of the response
/// are in; netserver recv()s the whole request and send()s the response. Each data segment
/// carries the ACK of the other direction, which cancels the receiver's delayed ACK (40 ms);
/// Nagle holds a short segment while data is unacknowledged unless config.nodelay (netperf's
/// test option -D). A timed run counts the transactions completed by its alarm, a counted one
/// (config.transactions) runs exactly that many, and the bytes and calls are counted as in
/// run_tcp_rr; the CPU figures are taken at the
/// alarm (timed) or at the last response (counted). Throws as run_ipoib_stream does, and InputError for request or response
/// sizes of 0 or neither length_s nor transactions.
frontends::IpoibStreamResult run_ipoib_rr(const model::Platform& local, const model::Platform& remote,
                                          const frontends::TcpStreamConfig& config);

/// Runs netperf TCP_MAERTS over IPoIB: run_ipoib_stream from netserver's host (`remote`) to
/// netperf's (`local`) with the roles' buffers and CPUs (maerts_stream_config), turned round
/// into netperf's view (maerts_result; kernel profiles and interrupt counts swapped too).
/// Throws as run_ipoib_stream does, a ConfigError naming the MAERTS field (maerts_field).
frontends::IpoibStreamResult run_ipoib_maerts(const model::Platform& local, const model::Platform& remote,
                                              const frontends::TcpStreamConfig& config);

/// Reads every parameter run_ipoib_stream reads of one host, and throws as it does on a missing
/// or bad one. The SDP and perftest paths call it (sim/testbed.cpp) on platforms with a
/// [netstack] section, so that a bad IPoIB parameter is an error whichever transport runs.
void check_ipoib_parameters(const model::Platform& p);

}  // namespace hcasim::sim
