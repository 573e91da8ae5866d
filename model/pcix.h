#pragma once
/// \file PCI-X (mode 1) bus accounting: bus clocks and transactions of DMA transfers between a
/// device and its host bridge, and the closed-form throughput ceilings of long DMA streams.
/// The sibling of model/pcie.h for the HP zx1 Itanium 2 servers, whose HCA sits in a 64-bit
/// 133 MHz PCI-X slot. Plain C++, no SimGrid.
///
/// Units: sizes and addresses in bytes (B), clock frequencies in MHz, times in ns, bus time in
/// clocks of the PCI-X clock, rates in Gbit/s (10^9 bit/s) of payload like pcie.h; the
/// comments also give MB/s (10^6 B/s = Gbit/s * 125), the unit PCI-X material quotes.
///
/// PCI-X is a shared, half-duplex parallel bus: every transaction of every initiator, in
/// either direction, occupies the one bus. A mode 1 transaction is: address phase (1 clock;
/// a 64-bit address above 4 GB takes a second one, the dual address cycle), attribute phase
/// (1 clock: requester ID, tag, byte count, relaxed ordering, no snoop; [Abbott],
/// [ExtremeTech], [Intel41210] Table 16), target response phase (the target's DEVSEL# decode
/// time, at least one clock: [Hip]), target initial wait states (only before the first data
/// phase: [ExtremeTech]), one data phase per clock, and then at least one idle (turnaround)
/// clock before the next transaction's address phase. The phase list and its clock counts
/// are from memory of the Addendum; the sources named confirm the pieces they are named at.
/// Device reads are split transactions: a Memory Read Block request that the host bridge
/// answers with a Split Response (the request ends at once), then, after the memory latency,
/// one or more Split Completion transactions in which the bridge is the initiator and the
/// requesting device the target; a split completion is laid out like a write.
///
/// Sources. Primary: the PCI-X Addendum to the PCI Local Bus Specification 1.0b (PCI-SIG,
/// 2002) and the PCI-X 2.0 Protocol Addendum: members only, not read. Statements marked
/// "(from memory)" come from our recollection of the Addendum and were not found in a public
/// source. Public secondary sources read:
///  - [Abbott] D. Abbott, "PCI Bus Demystified", 2nd ed. (Newnes, 2004), ch. 12 "PCI-X
///    Transactions" and its summary (excerpts at globalspec.com/reference/24372/203279/
///    pci-x-transactions and /summary): a PCI-X write next to a PCI write, the attribute
///    phase that identifies the initiator, split transactions in place of PCI's Retry;
///  - [ExtremeTech] "PCI-X Bus Intelligence" (extremetech.com, article2/0,2845,1154802): the
///    36-bit attribute field carries the transaction's size (byte count), ordering, no-snoop
///    and initiator; targets may insert wait states only at the start of a transfer;
///  - [Hip] Hip Hardware's PCI-X article as quoted by tweakers.net/nieuws/13935: the
///    register-to-register protocol gives the receiver a whole clock to decode what it
///    sampled, so a target answers one clock later than on PCI;
///  - [Intel41210] Intel 41210 Serial to Parallel PCI Bridge Developer's Manual (278890-003,
///    May 2005), 3.2.7.2, 3.3, 3.3.2, 3.3.3, Table 16: as a PCI-X master the bridge ends every
///    transaction at a 4 KB boundary although Addendum 1.0b lets bursts cross it; it
///    disconnects a split completion at the next ADB only when its read buffers run dry and
///    a write only when it cannot take more data; it inserts no target wait states; it
///    master-aborts when no DEVSEL# comes within six clocks after the address phase;
///  - [zx1-sba] Linux arch/ia64/hp/common/sba_iommu.c (2.6 era): "Version 3.0 and later of
///    the zx1 LBA should disconnect on 4k boundaries"; ALLOW_IOV_BYPASS lets a device with a
///    64-bit DMA mask bypass the IOMMU and DMA to physical addresses;
///  - [Linux] include/uapi/linux/pci_regs.h: PCI-X Command register fields
///    PCI_X_CMD_MAX_READ (Maximum Memory Read Byte Count, encodings 512/1K/2K/4K B) and
///    PCI_X_CMD_MAX_SPLIT (Maximum Outstanding Split Transactions, 1/2/3/4/8/12/16/32);
///    drivers/infiniband/hw/mthca/mthca_main.c: module parameter tune_pci (default 0:
///    "increase PCI burst from the default set by BIOS if nonzero") raises MMRBC to the
///    device's designed maximum only when set;
///  - [MSDN] Microsoft, PCI_X_CAPABILITY structure (wdm.h): MaxMemoryReadByteCount is the
///    byte count the device uses when initiating a burst memory read;
///  - [Tom's] Tom's Hardware, Xeon platform review, table "Data Transfer Rates Depending On
///    PCI Standard": PCI-X 1.0 64-bit at 66/100/133 MHz = 533/800/1066 MB/s;
///  - [HP] HP Integrity rx4640 architectural overview (HP, via hp.manymanuals): eight
///    0.5 GB/s I/O channels (ropes); two of them feed one 133 MHz PCI-X slot "with 1.0 GB/s
///    of sustained throughput"; HP 9000 rp8420 User Service Guide: "dual rope slots";
///    openpa.net "HP Itanium zx1 chipset": a Mercury I/O adapter attaches one PCI-X bus to
///    up to four 500 MB/s ropes. (The dual-rope link, 1.0 GB/s, is not modelled here; it
///    sits just below the bus ceilings computed below.)
///  - [deeppocket] docs.deeppocket.eu.org, "PCI-X Split Transaction Solution": the completer
///    arbitrates and runs a split completion, which looks like a write, to the requester;
///  - [Octeon] Cavium Networks' octeon-hal.h (2004-2005, GPL), NPI_PCI_CTL_STATUS_2.TSR_HWM:
///    ADBs are "128 Byte aligned chunks"; that PCI-X completer starts a split completion once
///    2..8 ADBs of the data are in from memory and, if the rest has not arrived, ends it and
///    sends the remainder in further split completions.
#include <cstdint>

namespace hcasim::model::pcix {

/// Allowable Disconnect Boundary, B: the 128-byte-aligned addresses, fixed by the Addendum,
/// at which an initiator or target may end a burst early ([Intel41210] 3.2.7.2: "initiator
/// disconnect at the next ADB", target "disconnects ... ADB is reached"; [Octeon]: "128 Byte
/// aligned chunks").
inline constexpr uint32_t kAllowableDisconnectBoundary = 128;

/// Largest byte count of one burst transaction, B: the attribute phase's Byte Count field is
/// 12 bits with 0 meaning 4096 (from memory; MMRBC's largest encoding is also 4096, [Linux]).
inline constexpr uint32_t kMaxByteCount = 4096;

/// Clocks of the attribute phase: one, on AD and C/BE# ([Abbott], [ExtremeTech]: 36 bits).
inline constexpr uint32_t kAttributeClocks = 1;

/// Clocks of a split response: the target ends a Memory Read Block request after its
/// response phase with one clock that signals Split Response (from memory; we charge it like
/// one data phase).
inline constexpr uint32_t kSplitResponseClocks = 1;

/// Address clocks of a split completion: always one, since its address phase carries the
/// requester's ID, tag and the low address bits, not a 64-bit address (from memory).
inline constexpr uint32_t kSplitCompletionAddressClocks = 1;

/// Boundary, B, at which the modelled host bridge ends every transaction it takes part in:
/// the zx1 LBA disconnects at 4 KB ([zx1-sba]) and the Intel 41210 ends its own transactions
/// there ([Intel41210] 3.3.2). All the split sizes below are powers of two up to 4096, so no
/// modelled transaction crosses it.
inline constexpr uint32_t kBridgeBoundary = 4096;

/// One PCI-X bus segment with one device (the HCA) behind a host bridge. Defaults: the zx1
/// 133 MHz 64-bit slot, the Command register's reset values for the device (MMRBC 512 B,
/// one outstanding split transaction: reset encodings 00b and 000b, from memory; firmware
/// may change them, and mthca raises MMRBC only with tune_pci=1, [Linux]), and the fastest
/// legal bus protocol (decode A, no wait states, one idle clock, hidden arbitration), so the
/// ceilings are upper bounds.
struct Config {
  /// Bus clock, MHz: 66, 100 or 133 (PCI-X 66/100/133: 200/3, 100 and 400/3 MHz, see
  /// clock_frequency_mhz).
  int clock_mhz = 133;
  int width_bits = 64;  ///< AD bus width, bits: 32 or 64
  /// Maximum Memory Read Byte Count, B (PCI-X Command register bits 3:2, [Linux]
  /// PCI_X_CMD_MAX_READ): 512, 1024, 2048 or 4096. The device's Memory Read Block requests
  /// ask for at most this many bytes ([MSDN]).
  uint32_t max_memory_read_byte_count = 512;
  /// Maximum Outstanding Split Transactions (Command register bits 6:4, [Linux]
  /// PCI_X_CMD_MAX_SPLIT): 1, 2, 3, 4, 8, 12, 16 or 32 read requests in flight.
  int max_outstanding_split = 1;
  /// Byte count of the device's burst memory writes, B: a power of two from 8 to 4096; a DMA
  /// write is cut at its multiples. Device specific and not measured for the InfiniHost: the
  /// default is the largest a transaction can carry (kMaxByteCount).
  uint32_t write_burst = 4096;
  /// Host bridge as target of writes: it disconnects a write at the multiples of this size,
  /// B, a power of two from kAllowableDisconnectBoundary to 4096 (a target may disconnect
  /// only at an ADB; [Intel41210] does so only when its write buffers fill). 4096 = it takes
  /// the whole burst and disconnects only at the 4 KB boundary ([zx1-sba]).
  uint32_t write_disconnect_size = 4096;
  /// Host bridge as completer: the split completions it returns end at the multiples of this
  /// size, B, a power of two from kAllowableDisconnectBoundary to 4096. 4096 = it returns
  /// each request's whole byte count in one split completion (a bridge disconnects at an
  /// ADB only when its read buffers run dry, [Intel41210]); 128 = one ADB per completion,
  /// a completer that streams data on as it arrives from memory ([Octeon] TSR_HWM).
  uint32_t split_completion_size = 4096;
  /// True when the DMA buffers lie above 4 GB: the device's write and read-request address
  /// phases take a dual address cycle (one more clock). On zx1, a device with a 64-bit DMA
  /// mask bypasses the IOMMU and DMAs to physical addresses ([zx1-sba]); whether those lie
  /// above 4 GB depends on the memory map (most of a multi-GB zx1's memory, from memory).
  bool dual_address_cycle = true;
  /// DEVSEL# decode time of the host bridge as target (device writes, read requests), clocks
  /// after the attribute phase: decode speed A = 1, B = 2, C = 3, subtractive = 4 (from
  /// memory; consistent with the master abort of [Intel41210] when no DEVSEL# came within six
  /// clocks of the address phase: address 1 + attribute 1 + subtractive 4). The zx1 LBA's
  /// speed is not published that we found: A (the fastest) is a ceiling.
  int host_decode_clocks = 1;
  /// DEVSEL# decode time of the device as target of its split completions, clocks, as above.
  int device_decode_clocks = 1;
  /// Target initial wait states, clocks, in every transaction (0..16); PCI-X allows them only
  /// before the first data phase ([ExtremeTech]); [Intel41210] inserts none.
  int target_wait_states = 0;
  /// Idle clocks between the last data phase of a transaction and the next address phase:
  /// at least 1, the turnaround clock (PCI-X has no fast back-to-back transactions, from
  /// memory). 1..1024.
  int idle_clocks = 1;
  /// Extra idle clocks before each transaction for arbitration, 0..1024. 0 = hidden
  /// arbitration (the arbiter grants the next initiator during the current transaction).
  int arbitration_clocks = 0;
  /// Split-completion latency, ns: from the split response to the first split completion of
  /// that request (the memory latency behind the bridge: rope, zx1 Pluto, DRAM). 0 = unknown
  /// (only dma_read_latency_bound_gbps needs it); must be finite and >= 0.
  double split_completion_latency_ns = 0;
};

/// Throws hcasim::InputError naming the first bad field ("pcix.clock_mhz: 120 is not 66, 100
/// or 133"). Limits: see each field of Config.
void validate(const Config&);

/// Clock frequency, MHz: PCI-X 66 = 200/3, 100 = 100, 133 = 400/3 (the bus modes' nominal
/// rates; 1066.7 MB/s / 8 B = 133.33 MHz and 533 MB/s / 8 B = 66.67 MHz in [Tom's]).
double clock_frequency_mhz(const Config&);

/// Clock period, ns: 1000 / clock_frequency_mhz: 15 (66), 10 (100), 7.5 (133).
double clock_period_ns(const Config&);

/// Bytes per data phase: width_bits / 8 (4 or 8).
uint32_t bus_width_bytes(const Config&);

/// Peak data rate of the bus, Gbit/s: bus_width_bytes * 8 / clock_period_ns, every clock a
/// data phase. 64-bit 133 MHz: 8 B / 7.5 ns = 1.0667 B/ns = 1066.7 MB/s = 8.5333 Gbit/s
/// ([Tom's]: 1066 MB/s).
double peak_data_rate_gbps(const Config&);

/// Data phases of a burst over the bytes [addr, addr + len): the bus_width_bytes-aligned
/// blocks it touches (an unaligned start or end still takes a whole phase, with byte
/// enables). 0 for len = 0.
uint64_t data_phases(const Config&, uint64_t addr, uint64_t len);

/// Bus clocks of one burst memory write by the device of len bytes at addr (1..4096 B,
/// std::invalid_argument otherwise: a programming error):
/// (1 + dual_address_cycle) + kAttributeClocks + host_decode_clocks + target_wait_states
/// + data_phases + idle_clocks + arbitration_clocks.
/// 4096 B aligned, 64-bit 133 MHz, DAC, decode A: 2 + 1 + 1 + 0 + 512 + 1 + 0 = 517 clocks
/// = 3877.5 ns.
uint64_t write_transaction_clocks(const Config&, uint64_t addr, uint64_t len);

/// Bus clocks of one Memory Read Block request ended by a split response:
/// (1 + dual_address_cycle) + kAttributeClocks + host_decode_clocks + target_wait_states
/// + kSplitResponseClocks + idle_clocks + arbitration_clocks (defaults: 2+1+1+0+1+1+0 = 6).
uint64_t read_request_clocks(const Config&);

/// Bus clocks of one split completion of len bytes at addr (1..4096 B, else
/// std::invalid_argument), initiated by the bridge with the device as target:
/// kSplitCompletionAddressClocks + kAttributeClocks + device_decode_clocks
/// + target_wait_states + data_phases + idle_clocks + arbitration_clocks.
/// 512 B aligned, 64-bit, decode A: 1 + 1 + 1 + 0 + 64 + 1 + 0 = 68 clocks.
uint64_t split_completion_clocks(const Config&, uint64_t addr, uint64_t len);

/// Bus totals of one set of transactions.
struct Traffic {
  uint64_t data_bytes = 0;    ///< payload moved (the DMA length; 0 for read requests)
  uint64_t clocks = 0;        ///< bus clocks busy, idle and arbitration clocks included
  uint64_t transactions = 0;  ///< bus transactions
  Traffic& operator+=(const Traffic& o) {
    data_bytes += o.data_bytes;
    clocks += o.clocks;
    transactions += o.transactions;
    return *this;
  }
  friend bool operator==(const Traffic&, const Traffic&) = default;
};

/// Device -> host memory write of len bytes at addr: burst writes cut at the multiples of
/// min(write_burst, write_disconnect_size) (both powers of two up to 4096, so also at every
/// 4 KB boundary, kBridgeBoundary), each costing write_transaction_clocks; an unaligned
/// start gives a short first burst. len = 0 gives nothing. Constant time in len.
Traffic dma_write(const Config&, uint64_t addr, uint64_t len);

/// Transactions of a DMA read.
struct ReadTraffic {
  Traffic requests;     ///< Memory Read Block requests (device as initiator); data_bytes = 0
  Traffic completions;  ///< split completions (bridge as initiator); data_bytes = len
  uint64_t clocks() const { return requests.clocks + completions.clocks; }
  friend bool operator==(const ReadTraffic&, const ReadTraffic&) = default;
};

/// Host memory -> device read of len bytes at addr as split transactions. Requests: cut at
/// the multiples of max_memory_read_byte_count, so none asks for more than MMRBC ([MSDN]) or
/// crosses 4 KB; an unaligned start gives a short first request (the same convention as
/// pcie::dma_read). Completions: each request's data comes back in split completions that
/// end on the multiples of min(split_completion_size, MMRBC). len = 0 gives nothing.
/// Constant time in len. Example, defaults (MMRBC 512), 4096 B aligned: 8 requests * 6 +
/// 8 completions * 68 = 592 clocks.
ReadTraffic dma_read(const Config&, uint64_t addr, uint64_t len);

/// Bus time of `clocks` clocks, ns: clocks * clock_period_ns.
double bus_time_ns(const Config&, uint64_t clocks);

/// Sustained payload rate of a long one-way DMA write stream, Gbit/s: aligned bursts of
/// B = min(write_burst, write_disconnect_size) bytes back to back,
/// B * 8 / (write_transaction_clocks(0, B) * clock_period_ns).
/// 64-bit 133 MHz, 4 KB bursts, DAC, decode A: 32768 / (517 * 7.5) = 8.4508 Gbit/s
/// = 1056.3 MB/s.
double dma_write_ceiling_gbps(const Config&);

/// Sustained payload rate of a long one-way DMA read stream, Gbit/s, as far as the bus
/// allows (outstanding requests and latency permitting, see dma_read_latency_bound_gbps):
/// M = max_memory_read_byte_count bytes per request, M * 8 / (dma_read(0, M).clocks() *
/// clock_period_ns). Defaults (M = 512): 4096 / (74 * 7.5) = 7.3802 Gbit/s = 922.5 MB/s;
/// M = 4096: 32768 / (522 * 7.5) = 8.3699 Gbit/s = 1046.2 MB/s.
double dma_read_ceiling_gbps(const Config&);

/// Bus time, ns, of long aligned streams that move write_bytes by DMA write and read_bytes
/// by DMA read on the one shared bus: write_bytes * 8 / dma_write_ceiling_gbps + read_bytes
/// * 8 / dma_read_ceiling_gbps. The bus is half duplex and shared: a device that DMA-reads
/// its send data and DMA-writes its receive data spends the sum. Arbitration between the
/// device and the bridge is charged per transaction (arbitration_clocks) in both streams, so
/// the mix adds nothing. Throws InputError unless both volumes are finite and >= 0.
double mixed_bus_time_ns(const Config&, double write_bytes, double read_bytes);

/// Total payload rate, Gbit/s, of a long mixed stream in which the fraction read_share of the
/// payload is DMA-read and the rest DMA-written: 1 / (read_share / dma_read_ceiling +
/// (1 - read_share) / dma_write_ceiling). read_share = 0.5 is a device that receives as much
/// as it sends; each direction then gets half of the total. Throws InputError unless
/// 0 <= read_share <= 1.
double mixed_ceiling_gbps(const Config&, double read_share);

/// Latency bound of DMA reads, Gbit/s: max_outstanding_split * max_memory_read_byte_count
/// * 8 / split_completion_latency_ns (each outstanding request fetches at most MMRBC bytes
/// per latency; optimistic, since the request and completion transactions themselves also
/// take time). Like pcie::dma_read_latency_bound_gbps. Throws InputError unless
/// split_completion_latency_ns > 0.
double dma_read_latency_bound_gbps(const Config&);

}  // namespace hcasim::model::pcix
