#pragma once
/// \file Fixed latencies of an HCA in its slot, and the pipeline latencies of a message built
/// from them (the emulated HCA in sim/ adds these to the bandwidth-limited transfer).
///
/// The send path of a ConnectX/InfiniHost HCA (Mellanox PRM; libmlx4/mlx4_ib): the CPU writes
/// the doorbell (an MMIO store to the UAR page), the HCA fetches the WQE by a DMA read, gathers
/// the payload by DMA reads, sends IB packets, the responder DMA-writes the payload and a CQE
/// and (when the CQ is armed) an EQE followed by an MSI-X interrupt; the requester writes its
/// CQE when the RC ACK returns.
#include "model/ib.h"
#include "model/mlx4.h"
#include "model/mmio.h"
#include "model/pcie.h"
#include "model/platform.h"

namespace hcasim::model {

/// Fixed latencies of one HCA and its slot, ns (platform sections [pcie], [hca], [ib]).
struct HcaTiming {
  double dma_read_rtt_ns = 0;       ///< MRd issued -> first CplD back (WQE fetch, gather)
  double posted_write_ns = 0;       ///< device MWr issued -> visible in host memory (payload, CQE)
  double tx_processing_ns = 0;      ///< WQE parsing and packet build in the HCA, pipelined
  double rx_processing_ns = 0;      ///< packet check and scatter set-up in the HCA, pipelined
  double propagation_ns = 0;        ///< one way on the IB link (cable, switch if any)
  double interrupt_latency_ns = 0;  ///< CQE written -> EQE + MSI-X -> handler starts on the CPU
  /// Rate at which the HCA copies inline data out of the WQE into the packet, B/ns
  /// (hca.inline_copy_rate). Latency only: it replaces the gather DMA read of a non-inline WR.
  double inline_copy_rate_Bpns = 1;

  /// Reads pcie.dma_read_rtt, pcie.posted_write_latency,
  /// hca.tx_processing, hca.rx_processing, hca.interrupt_latency, ib.propagation (all ns,
  /// >= 0) and hca.inline_copy_rate (B/ns, > 0). Throws InputError on a missing or bad value.
  static HcaTiming from_platform(const Platform& p);
};

/// Time the requester spends getting a message's payload into the HCA once it holds the WQE,
/// ns: the gather DMA read round trip (dma_read_rtt) for gathered data, or bytes /
/// inline_copy_rate for inline data (already in the WQE: no DMA read).
double payload_fetch_ns(const HcaTiming& requester, bool inline_data, uint64_t bytes);

/// Time from the moment the last byte of a message leaves the bottleneck of the data path
/// until the responder's receive CQE is visible in its memory, ns: the requester's DMA read
/// round trip and packet build, propagation, the responder's receive processing and its
/// posted write of payload and CQE (ordered, so the CQE follows the data).
/// `inline_data` and `bytes` select the payload fetch (payload_fetch_ns); the default is a
/// gathered payload.
double receive_completion_latency_ns(const HcaTiming& requester, const HcaTiming& responder,
                                     bool inline_data = false, uint64_t bytes = 0);

/// Same, until the requester's send CQE is visible: as above up to the responder's receive
/// processing, then the RC ACK back (propagation, the requester's receive processing) and the
/// requester's CQE write (IBA 9.7.5.1: a SEND completes when it is acknowledged).
double send_completion_latency_ns(const HcaTiming& requester, const HcaTiming& responder,
                                  bool inline_data = false, uint64_t bytes = 0);

/// How a host hands send WQEs to its HCA (the libmlx4 / mlx4_ib send path).
struct PostConfig {
  mmio::Config mmio;           ///< the CPU's stores to the UAR and BlueFlame pages
  pcie::Config pcie;           ///< the HCA's slot (MWr serialisation, WQE fetch completions)
  double dma_read_rtt_ns = 0;  ///< pcie.dma_read_rtt (the WQE fetch after a doorbell)
  bool blueflame = true;       ///< hca.blueflame: the driver maps BlueFlame registers
  uint32_t bf_buf_size = 256;  ///< hca.bf_buf_size: half a BlueFlame register, B

  /// Reads the mmio::Config keys, hca.blueflame and hca.bf_buf_size (64..4096 B, a multiple of
  /// 64). `pcie` is the already validated slot, `dma_read_rtt_ns` HcaTiming's.
  static PostConfig from_platform(const Platform& p, const pcie::Config& pcie, double dma_read_rtt_ns);
};

/// What posting one WR costs and when the HCA holds its WQE.
struct PostTiming {
  bool blueflame = false;      ///< libmlx4 took the BlueFlame path
  uint32_t wqe_bytes = 0;      ///< WQE size (mlx4::wqe_bytes)
  mmio::CopyTiming mmio;       ///< the BlueFlame copy, or the doorbell store
  double cpu_ns = 0;           ///< CPU time of the MMIO part of the post (stores, flush)
  double wqe_at_hca_ns = 0;    ///< from the start of the MMIO until the HCA holds the whole WQE
};

/// The MMIO part of posting a single WR (nreq = 1) of shape `w`, after the WQE is written to
/// the send queue in host memory. BlueFlame when cfg.blueflame and mlx4::blueflame_eligible:
/// the WQE rounded up to 64 B is copied with 8 B stores (mmio::copy_to_device) and the HCA
/// can start when the WQE's own bytes (wqe_bytes; the rest is padding) have arrived.
/// Otherwise the doorbell (mmio::doorbell), then the WQE fetch (wqe_fetch_ns).
PostTiming post_timing(const PostConfig& cfg, const mlx4::WqeShape& w);

/// Link bytes one message puts on each link it crosses, every TLP, packet header and
/// delimiter counted (model/pcie.h, model/ib.h).
struct MessageWire {
  uint64_t tx_h2d = 0;  ///< requester's PCIe, host -> device: the MMIO (doorbell or BlueFlame
                        ///< copy), the WQE's CplDs after a doorbell, the payload's CplDs unless inline
  uint64_t ib = 0;      ///< the IB link: SEND or RDMA WRITE packets
  uint64_t rx_d2h = 0;  ///< responder's PCIe, device -> host: the payload's MWrs and, for a
                        ///< SEND, the 32 B receive CQE
};

/// MessageWire of one SEND (`send`) or RDMA WRITE of `bytes` posted as `post` describes.
/// `with_post` false leaves out the post's own MMIO and WQE-fetch bytes (they crossed the link
/// before the HCA started the message: post_timing counts them).
MessageWire message_wire(const pcie::Config& tx, const ib::Config& ib, const pcie::Config& rx, const PostTiming& post,
                         bool inline_data, uint64_t bytes, bool send, bool with_post = true);

/// Time the busiest link needs for one message, ns: max over the three links of wire bytes
/// x 8 / the link's data rate (PCIe after SKP efficiency). What bounds the message rate of
/// small messages; long messages are bounded by the links' stream ceilings instead.
double message_link_time_ns(const pcie::Config& tx, const ib::Config& ib, const pcie::Config& rx, const MessageWire& w);

/// DMA read of a WQE of `wqe_bytes` after a doorbell, ns: rtt (MRd issued -> first CplD
/// starts arriving) + the link time of all its CplDs (pcie::dma_read of the WQE's 64 B
/// basic blocks; mmio::link_ns).
double wqe_fetch_ns(const pcie::Config& link, double rtt_ns, uint32_t wqe_bytes);

}  // namespace hcasim::model
