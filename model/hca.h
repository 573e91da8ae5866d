#pragma once
/// \file Fixed latencies of an HCA in its slot, and the pipeline latencies of a message built
/// from them (the emulated HCA in sim/ adds these to the bandwidth-limited transfer).
///
/// The send path of a ConnectX/InfiniHost HCA (Mellanox PRM; libmlx4/mlx4_ib): the CPU writes
/// the doorbell (an MMIO store to the UAR page), the HCA fetches the WQE by a DMA read, gathers
/// the payload by DMA reads, sends IB packets, the responder DMA-writes the payload and a CQE
/// and (when the CQ is armed) an EQE followed by an MSI-X interrupt; the requester writes its
/// CQE when the RC ACK returns.
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/ib.h"
#include "model/mlx4.h"
#include "model/mmio.h"
#include "model/bus.h"
#include "model/pcie.h"
#include "model/platform.h"

namespace hcasim::model {

/// Fixed latencies of one HCA and its slot, ns (platform sections [pcie] or [pcix], [hca], [ib]).
struct HcaTiming {
  /// MRd issued -> first CplD back (PCIe), split response -> first split completion (PCI-X):
  /// the WQE fetch, the gather
  double dma_read_rtt_ns = 0;
  double posted_write_ns = 0;       ///< device write issued -> visible in host memory (payload, CQE)
  double tx_processing_ns = 0;      ///< WQE parsing and packet build in the HCA, pipelined
  double rx_processing_ns = 0;      ///< packet check and scatter set-up in the HCA, pipelined
  double propagation_ns = 0;        ///< one way on the IB link (cable, switch if any)
  double interrupt_latency_ns = 0;  ///< CQE written -> EQE + MSI-X -> handler starts on the CPU
  /// Rate at which the HCA copies inline data out of the WQE into the packet, B/ns
  /// (hca.inline_copy_rate). Latency only: it replaces the gather DMA read of a non-inline WR.
  double inline_copy_rate_Bpns = 1;
  /// The responder HCA's own time per atomic (hca.atomic, ns): its atomic unit takes one at a
  /// time (the target locked for the read-modify-write), besides the DMA read round trip of the
  /// operand, which the atomic's latency also pays.
  double atomic_ns = 0;
  /// The stages' rates, as the time each job holds its unit (hca::Stage), ns; 0: never bounds.
  /// One WQE through the processing unit that owns its QP (hca.qp_wqe_time): a QP's WQEs go one
  /// at a time, in order, so one QP sends at most 1 / this messages per ns.
  double qp_wqe_ns = 0;
  /// One packet through the port's transmit scheduler, every QP's (hca.tx_packet_time).
  double tx_packet_ns = 0;
  /// One packet through the port's receive processing (hca.rx_packet_time): checks, the receive
  /// WQE of a SEND, the scatter, the CQE of a message's last packet.
  double rx_packet_ns = 0;

  /// Reads the bus's DmaRead latency (> 0) and PostedWrite latency (HostBus::latency_key:
  /// pcie.* or pcix.*), hca.tx_processing, hca.rx_processing, hca.interrupt_latency,
  /// ib.propagation, hca.atomic, hca.qp_wqe_time, hca.tx_packet_time, hca.rx_packet_time (all
  /// ns, >= 0) and hca.inline_copy_rate (B/ns, > 0). Throws InputError on a missing or bad value.
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

/// How much later a message's data is in the receiving host's memory than if its bytes streamed
/// from the wire into memory, ns, because the receiving HCA stores each packet whole before it
/// DMA-writes the payload: a packet's ICRC and VCRC end it (IBA vol. 1 7.8.1, 7.8.2), and a
/// packet that fails them is dropped without touching memory (IBA 7.8.1; emu/ checks the ICRC of
/// a whole frame the same way). Two stages with a store between them, the wire at `wire_Bps` and
/// the drain into memory at `drain_Bps` (B/s, both > 0), end a message of `bytes` in packets of
/// `mtu` one stored packet after a stream would: its last packet at the drain's rate when the
/// wire is the slower stage, its first at the wire's when the drain is. 0 for a message without
/// payload. The ACK does not wait for it: the responder acknowledges a packet that passed its
/// checks (seed 000's bzcopy points, bound by the ACK round trip, are 9-11 % below the
/// measurement already; an ACK after the drain took them to 13-15 %).
double receive_store_ns(uint64_t bytes, uint32_t mtu, double wire_Bps, double drain_Bps);

/// The Linux driver of an HCA. Its verbs device name (hca.device) is the driver's: ib_mthca
/// names its devices mthca%d (InfiniHost and InfiniHost III: drivers/infiniband/hw/mthca/
/// mthca_provider.c mthca_register_device), mlx4_ib mlx4_%d (ConnectX: drivers/infiniband/hw/
/// mlx4/main.c mlx4_ib_add).
enum class HcaDriver : uint8_t { Mthca, Mlx4 };

/// The driver of the device named `device` ("mthca0": Mthca, "mlx4_1": Mlx4), empty for a name
/// neither driver gives.
std::optional<HcaDriver> hca_driver(std::string_view device);

/// How a host hands send WQEs to its HCA (the libmlx4 / mlx4_ib send path).
struct PostConfig {
  mmio::Config mmio;           ///< the CPU's stores to the UAR and BlueFlame pages
  HostBus bus;                 ///< the HCA's slot (MMIO serialisation, WQE fetch completions)
  double dma_read_rtt_ns = 0;  ///< HcaTiming's (the WQE fetch after a doorbell)
  std::string device;          ///< hca.device: the verbs device name, "mlx4_0", "mthca0"
  bool blueflame = true;       ///< hca.blueflame: the driver maps BlueFlame registers
  uint32_t bf_buf_size = 256;  ///< hca.bf_buf_size: half a BlueFlame register, B

  /// Reads the mmio::Config keys, hca.device, hca.blueflame and hca.bf_buf_size (64..4096 B, a
  /// multiple of 64). `bus` is the already validated slot, `dma_read_rtt_ns` HcaTiming's.
  /// BlueFlame (write-combined MMIO of whole WQEs, ConnectX and later) on a PCI-X bus, or on an
  /// InfiniHost (an mthca device: neither the HCA nor libmthca has BlueFlame registers), is an
  /// InputError.
  static PostConfig from_platform(const Platform& p, const HostBus& bus, double dma_read_rtt_ns);
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

/// What one message puts on each link it crosses: bus busy time (every TLP or PCI-X
/// transaction counted, model/bus.h) and IB link bytes (every packet header, model/ib.h).
struct MessageWire {
  double tx_bus_ns = 0;  ///< requester's bus, host -> device (PCIe) or the shared PCI-X bus: the
                         ///< MMIO (doorbell or BlueFlame copy), the WQE fetch after a doorbell,
                         ///< the payload's DMA read unless inline
  uint64_t ib = 0;       ///< the IB link: SEND or RDMA WRITE packets, bytes
  double rx_bus_ns = 0;  ///< responder's bus, device -> host (PCIe) or the shared PCI-X bus: the
                         ///< payload's DMA write and, for a SEND, the 32 B receive CQE
};

/// MessageWire of one SEND (`send`) or RDMA WRITE of `bytes` posted as `post` describes.
/// `with_post` false leaves out the post's own MMIO and WQE-fetch bytes (they crossed the link
/// before the HCA started the message: post_timing counts them).
MessageWire message_wire(const HostBus& tx, const ib::Config& ib, const HostBus& rx, const PostTiming& post,
                         bool inline_data, uint64_t bytes, bool send, bool with_post = true);

/// Time the busiest link needs for one message, ns: the larger bus time and the IB link's
/// bytes x 8 / its data rate. What bounds the message rate of small messages; long messages
/// are bounded by the links' stream ceilings instead.
double message_link_time_ns(const ib::Config& ib, const MessageWire& w);

/// DMA read of a WQE of `wqe_bytes` after a doorbell, ns: rtt (request issued -> first
/// completion starts arriving) + the bus time of the read of the WQE's 64 B basic blocks
/// (HostBus::dma_read_ns).
double wqe_fetch_ns(const HostBus& bus, double rtt_ns, uint32_t wqe_bytes);

}  // namespace hcasim::model
