#pragma once
/// \file PCI Express byte accounting: TLPs, DLLPs and ordered sets of DMA transfers, and the
/// closed-form throughput ceilings of long one-way DMA streams. Plain C++, no SimGrid.
///
/// Units: sizes and addresses in bytes (B), rates in Gbit/s (10^9 bit/s), times in ns,
/// link-layer latencies in symbol times (one symbol = one byte on one lane; an xN link moves
/// N bytes per symbol time).
///
/// Sources. Primary: PCI Express Base Specification 1.1 (PCI-SIG, 2005; members only, so the
/// section numbers below are the ones the secondary sources quote). Public secondary sources:
///  - [pcie-bench] R. Neugebauer et al., "Understanding PCIe performance for end host
///    networking", SIGCOMM 2018, and its model code github.com/pcie-bench/pcie-model
///    (model/pcie.py: Ack and UpdateFC latency tables, DLLP and TLP sizes, SKP interval);
///  - [MindShare] R. Budruk, D. Anderson, T. Shanley, "PCI Express System Architecture"
///    (MindShare, 2003), and M. Jackson, R. Budruk, "PCI Express Technology" (MindShare,
///    2012): framing, SKP insertion rules;
///  - [billauer] E. Billauer, "Down to the TLP: How PCI express devices talk", parts I-II
///    (billauer.co.il, 2011): DLLP types, the six flow-control credit types.
#include <cstdint>

namespace hcasim::model::pcie {

/// One PCIe link and the negotiated parameters of the function using it.
struct Config {
  int gen = 1;                              ///< 1, 2 or 3 (2.5, 5.0, 8.0 GT/s per lane)
  int lanes = 8;                            ///< negotiated width: 1, 2, 4, 8, 12, 16 or 32
  uint32_t max_payload = 128;               ///< Max_Payload_Size, B (Device Control, spec 7.8.4)
  uint32_t max_read_request = 512;          ///< Max_Read_Request_Size, B (spec 7.8.4)
  uint32_t read_completion_boundary = 64;   ///< RCB, B: 64 or 128 (spec 2.3.1.1, 7.8.7)
  /// Size, B, of the CplD pieces the completer (root complex) returns: a power of two from the
  /// RCB to max_payload (so a multiple of the RCB). 64 B for the seed machine (docs/design.md).
  uint32_t completion_size = 64;
  /// True when the DMA buffers lie above 4 GB, so MRd/MWr use the 4 DW header (spec
  /// 2.2.4.1: below 4 GB a requester must use the 3 DW form). Addresses passed to dma_write
  /// and dma_read only set the alignment; this flag sets the header size.
  bool addr64 = true;
  bool ecrc = false;                        ///< TLP digest (ECRC, 4 B) on every TLP (spec 2.7)
};

/// Throws hcasim::InputError naming the first bad field ("pcie.max_payload: 100 is not a
/// power of two in 128..4096"). Limits: spec 7.8.4 (MPS and MRRS encodings 128..4096 B),
/// 7.8.6 (Maximum Link Width encodings x1/x2/x4/x8/x12/x16/x32), 2.3.1.1 (RCB 64 or 128 B).
void validate(const Config&);

/// Raw transfer rate per lane, GT/s: gen1 2.5, gen2 5.0, gen3 8.0 (spec 4.2; [pcie-bench]).
/// Throws InputError for another gen.
double transfer_rate_gtps(int gen);

/// Fraction of line bits that carry data: 8b/10b = 0.8 for gen1/2 (spec 4.2.1), 128b/130b for
/// gen3 (PCIe Base Spec 3.0, 4.2.2). Throws InputError for another gen.
double encoding_efficiency(int gen);

/// Data rate of the link per direction after line coding, Gbit/s:
/// transfer_rate_gtps * encoding_efficiency * lanes (gen1 x8 = 2.5 * 0.8 * 8 = 16.0).
double link_data_rate_gbps(const Config&);

/// Transaction Layer Packet kinds used by DMA (spec 2.2.7 memory requests, 2.2.9 completions).
enum class TlpType { MWr, MRd, CplD, Cpl };

/// Bytes of per-TLP framing outside the header: STP 1 + sequence number 2 + LCRC 4 + END 1
/// (spec 3.3.4-3.3.5 sequence number and LCRC, 4.2.2 STP/END framing symbols). At 8 GT/s the
/// 4-byte STP token (which holds the sequence number) plus LCRC 4 gives the same 8 B
/// (PCIe Base Spec 3.0, 4.2.2.3.1); 8 GT/s has no END.
inline constexpr uint32_t kTlpFramingBytes = 8;

/// TLP header bytes: MWr/MRd 16 (4 DW) when cfg.addr64, else 12 (3 DW); CplD and Cpl 12
/// (3 DW). Spec 2.2.4.1 (address formats), 2.2.9 (completion header).
uint32_t tlp_header_bytes(TlpType, const Config&);

/// Bytes one TLP occupies on the link: kTlpFramingBytes + header + payload rounded up to whole
/// DWs (the Length field counts DWs, spec 2.2.2; byte enables mask the unused bytes)
/// + 4 B ECRC when cfg.ecrc. `payload` must be 0 for MRd and Cpl and at most max_payload for
/// MWr and CplD (std::invalid_argument otherwise: a programming error, not user input).
/// Examples: MWr 128 B, 64-bit = 8 + 16 + 128 = 152; CplD 64 B = 8 + 12 + 64 = 84.
uint32_t tlp_wire_bytes(TlpType, uint32_t payload, const Config&);

/// TLP totals of one transfer in one direction.
struct Traffic {
  uint64_t payload_bytes = 0;  ///< useful bytes moved (the DMA length; 0 for MRd requests)
  uint64_t wire_bytes = 0;     ///< link bytes of all TLPs incl. framing, headers, DW padding
  uint64_t tlps = 0;           ///< number of TLPs
  Traffic& operator+=(const Traffic& o) {
    payload_bytes += o.payload_bytes;
    wire_bytes += o.wire_bytes;
    tlps += o.tlps;
    return *this;
  }
  friend bool operator==(const Traffic&, const Traffic&) = default;
};

/// Device -> host memory write of `len` bytes at `addr`: MWr TLPs split at every multiple of
/// max_payload, so no TLP exceeds Max_Payload_Size (spec 2.2.2) or crosses a 4 KB boundary
/// (spec 2.2.7); an unaligned start gives a short first TLP. len = 0 gives no TLP.
/// Closed form in the number of 4 KB pages (constant time in len).
Traffic dma_write(const Config&, uint64_t addr, uint64_t len);

/// TLPs of a DMA read: MRd requests travel device -> host, CplD completions host -> device.
struct ReadTraffic {
  Traffic requests;     ///< MRd; payload_bytes = 0
  Traffic completions;  ///< CplD; payload_bytes = len
  friend bool operator==(const ReadTraffic&, const ReadTraffic&) = default;
};

/// Host memory -> device read of `len` bytes at `addr`. Requests: MRd split at every multiple
/// of max_read_request, so none exceeds Max_Read_Request_Size or crosses a 4 KB boundary
/// (spec 2.2.7); an unaligned start gives a short first request (a device that instead
/// splits greedily from an unaligned start would issue at most one more MRd per 4 KB page).
/// Completions: each request is answered by CplDs that end on multiples of completion_size
/// (a multiple of the RCB, so every partial completion but the last ends on an RCB boundary,
/// spec 2.3.1.1); payload counted in whole DWs. len = 0 gives no TLP. Constant time in len.
ReadTraffic dma_read(const Config&, uint64_t addr, uint64_t len);

/// Bytes of one DLLP on the link: 8 = 4 B content + 2 B CRC-16 (spec 3.4.1, 3.5.2) + SDP 1 +
/// END 1 framing symbols (spec 4.2.2); at 8 GT/s a 2 B SDP token + 6 B, also 8 (spec 3.0,
/// 4.2.2.3.1). [pcie-bench] model/pcie.py uses the same 8 B (Ack_Size, FC_Size).
uint32_t dllp_wire_bytes();

/// Fraction of link time left for TLPs and DLLPs after SKP ordered sets (clock tolerance
/// compensation, spec 4.2.7). gen1/2: a 4-symbol SKP ordered set (COM + 3 SKP) on every lane,
/// scheduled every 1180..1538 symbol times; we take the densest legal schedule, 1180, so the
/// efficiency is (1180 - 4) / 1180 = 0.996610 (source: [MindShare] "SKIP ordered set
/// insertion rules"; [pcie-bench] uses 1538). gen3: one SKP block every 370..375 blocks
/// (PCIe Base Spec 3.0, 4.2.7; from memory, not checked in a public source); we take 370
/// data blocks + 1 SKP block, efficiency
/// 370 / 371 = 0.997305 (the 4-byte EDS token before each SKP block, < 0.001 %, is ignored).
double skip_efficiency(const Config&);

/// Maximum Ack latency of the spec's AckNak_LATENCY_TIMER, symbol times:
/// floor((max_payload + 28) * AckFactor / lanes + InternalDelay), where 28 is the TLP
/// overhead in symbols, InternalDelay is 19 (2.5 GT/s), 70 (5.0 GT/s) or 115 (8.0 GT/s), and
/// AckFactor is 1.4 (MPS 128/256 on x1/x2/x4), 2.5 (MPS 128/256 on x8), 3.0 (MPS 128/256 on
/// x12/x16/x32), 1.0 (MPS >= 512 up to x8), 2.0 (MPS >= 512 on x12 and wider).
/// Spec 1.1 3.5.3.1 and its Ack latency table. The formula reproduces the tables of
/// [pcie-bench] model/pcie.py (Ack_Limits, from Base Spec 5.0 Tables 3-7..3-9), e.g. gen1 x8
/// MPS 128 = floor(156 * 2.5 / 8 + 19) = floor(67.75) = 67; its gen2 x32 MPS 4096 entry 237
/// is a typo for 327 (its FC_Guide has 327). Throws InputError on a bad Config.
uint32_t ack_latency_symbols(const Config&);

/// Maximum UpdateFC transmission latency, symbol times (spec 1.1 2.6.1.2, table "Maximum
/// UpdateFC Transmission Latency Guidelines"): the same formula and values as
/// ack_latency_symbols ([pcie-bench] FC_Guide equals Ack_Limits, from Base Spec 5.0 Tables
/// 2-46..2-48, apart from two typos there).
uint32_t update_fc_latency_symbols(const Config&);

/// TLPs covered by one coalesced DLLP when TLPs arrive every `spacing_symbols` symbol times and
/// the receiver waits the full `latency_symbols` the spec allows: the timer starts at the first
/// unacknowledged TLP and fires `latency` later, covering every TLP received by then
/// (one arriving exactly at expiry included): floor(latency / spacing) + 1.
/// Example: gen1 x8 MWr of 152 B arrive every 152 / 8 = 19 symbol times; latency 67:
/// floor(67 / 19) + 1 = 4 TLPs per Ack.
uint64_t tlps_per_coalesced_dllp(uint32_t latency_symbols, double spacing_symbols);

/// Bytes of Ack and UpdateFC DLLPs that one direction carries on behalf of a back-to-back
/// burst of `tlps` TLPs of kind `type` (with `payload_bytes` in total) flowing the other way.
/// Assumptions (ceiling: the receiver uses all the latency the spec allows; real receivers may
/// Ack earlier, which loads only this direction):
///  - Acks: one per tlps_per_coalesced_dllp(ack_latency_symbols, spacing) TLPs, rounded up,
///    where spacing = average wire bytes per TLP / lanes (spec 3.5.3.1).
///  - UpdateFC: one UpdateFC-P per the same number of MWr (it returns header and data credits
///    in one DLLP), one UpdateFC-NP per as many MRd (spec 2.6.1.2 latency guidelines), none
///    for CplD/Cpl: endpoints advertise infinite completion credits and UpdateFCs are not sent
///    for infinite credits (spec 2.6.1; secondary: blog.csdn.net/icxiaoge/article/details/
///    130458576 quoting Base Spec 4.0); we assume the root complex also advertises infinite
///    completion credits.
///  - The periodic UpdateFC the spec requires at least every 30 us (2.6.1.2; from memory, not
///    checked in a public source) is ignored: 8 B per 30 us.
uint64_t reverse_dllp_bytes(const Config&, TlpType type, uint64_t tlps, uint64_t payload_bytes);

/// reverse_dllp_bytes for memory requests: TLPs with payload_bytes > 0 are taken as MWr
/// (posted: Ack + UpdateFC-P), with payload_bytes == 0 as MRd (non-posted: Ack + UpdateFC-NP).
/// Use the typed overload for completions.
uint64_t reverse_dllp_bytes(const Config&, uint64_t tlps, uint64_t payload_bytes);

/// Sustained payload rate of a long one-way DMA write stream (device -> host), Gbit/s:
/// link_data_rate * max_payload / tlp_wire_bytes(MWr, max_payload) * skip_efficiency.
/// The write direction carries only the MWr TLPs: the Acks and UpdateFC-P that credit them
/// travel host -> device, and a pure write stream has no host -> device TLPs to acknowledge.
/// gen1 x8 MPS 128 64-bit: 16 * 128/152 * 1176/1180 = 13.428 Gbit/s.
double dma_write_ceiling_gbps(const Config&);

/// Link bytes per read request of a long read stream of aligned max_read_request pieces.
struct ReadStreamBytes {
  double payload = 0;         ///< payload bytes per request (= max_read_request)
  double completion_dir = 0;  ///< host -> device: CplDs + Ack and UpdateFC-NP for the MRd
  double request_dir = 0;     ///< device -> host: the MRd + Acks for its CplDs
};

/// Per-request link bytes of a long DMA read stream. In steady state one MRd leaves per
/// completion train, so MRds arrive `completion train bytes / lanes` symbol times apart and
/// their Ack + UpdateFC-NP coalesce by tlps_per_coalesced_dllp (for gen1 x8 MPS 128 MRRS 512:
/// 672 / 8 = 84 > 67, one Ack and one UpdateFC-NP per MRd: 16 B). CplDs arrive
/// back-to-back; the device Acks them (no UpdateFC: infinite completion credits).
ReadStreamBytes dma_read_stream_bytes(const Config&);

/// Sustained payload rate of a long DMA read stream, Gbit/s: link_data_rate * skip_efficiency
/// * payload / max(completion_dir, request_dir) of dma_read_stream_bytes (the completion
/// direction is the bottleneck on every legal Config; the request direction is checked).
/// gen1 x8 MPS 128 MRRS 512 CS 64: 16 * 512/688 * 1176/1180 = 11.867 Gbit/s.
double dma_read_ceiling_gbps(const Config&);

/// Latency bound of DMA reads, Gbit/s: max_outstanding_reads * max_read_request * 8 / rtt_ns
/// (each outstanding request fetches at most MRRS bytes per round trip; docs/design.md). Throws
/// InputError unless rtt_ns > 0 and max_outstanding_reads >= 1.
double dma_read_latency_bound_gbps(const Config&, double rtt_ns, int max_outstanding_reads);

}  // namespace hcasim::model::pcie
