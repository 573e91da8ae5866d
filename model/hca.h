#pragma once
/// \file Fixed latencies of an HCA in its slot, and the pipeline latencies of a message built
/// from them (the emulated HCA in sim/ adds these to the bandwidth-limited transfer).
///
/// The send path of a ConnectX/InfiniHost HCA (Mellanox PRM; libmlx4/mlx4_ib): the CPU writes
/// the doorbell (an MMIO store to the UAR page), the HCA fetches the WQE by a DMA read, gathers
/// the payload by DMA reads, sends IB packets, the responder DMA-writes the payload and a CQE
/// and (when the CQ is armed) an EQE followed by an MSI-X interrupt; the requester writes its
/// CQE when the RC ACK returns.
#include "model/platform.h"

namespace hcasim::model {

/// Fixed latencies of one HCA and its slot, ns (platform sections [pcie], [hca], [ib]).
struct HcaTiming {
  double mmio_write_ns = 0;         ///< CPU doorbell store reaching the HCA (posted MWr)
  double dma_read_rtt_ns = 0;       ///< MRd issued -> first CplD back (WQE fetch, gather)
  double posted_write_ns = 0;       ///< device MWr issued -> visible in host memory (payload, CQE)
  double tx_processing_ns = 0;      ///< WQE parsing and packet build in the HCA, pipelined
  double rx_processing_ns = 0;      ///< packet check and scatter set-up in the HCA, pipelined
  double propagation_ns = 0;        ///< one way on the IB link (cable, switch if any)
  double interrupt_latency_ns = 0;  ///< CQE written -> EQE + MSI-X -> handler starts on the CPU

  /// Reads pcie.mmio_write_latency, pcie.dma_read_rtt, pcie.posted_write_latency,
  /// hca.tx_processing, hca.rx_processing, hca.interrupt_latency, ib.propagation (all ns,
  /// >= 0). Throws InputError on a missing or negative value.
  static HcaTiming from_platform(const Platform& p);
};

/// Time from the moment the last byte of a message leaves the bottleneck of the data path
/// until the responder's receive CQE is visible in its memory, ns: the requester's DMA read
/// round trip and packet build, propagation, the responder's receive processing and its
/// posted write of payload and CQE (ordered, so the CQE follows the data).
double receive_completion_latency_ns(const HcaTiming& requester, const HcaTiming& responder);

/// Same, until the requester's send CQE is visible: as above up to the responder's receive
/// processing, then the RC ACK back (propagation, the requester's receive processing) and the
/// requester's CQE write (IBA 9.7.5.1: a SEND completes when it is acknowledged).
double send_completion_latency_ns(const HcaTiming& requester, const HcaTiming& responder);

/// Extra time an idle send queue needs before its first byte moves: the doorbell MMIO write
/// reaching the HCA, then the WQE fetched by a DMA read. A busy send queue prefetches WQEs
/// while the previous message streams, hiding both.
double idle_doorbell_latency_ns(const HcaTiming& t);

}  // namespace hcasim::model
