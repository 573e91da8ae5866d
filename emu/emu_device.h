#pragma once
/// \file emulate mode: the emulated HCA in wall-clock time, one per process, with packets
/// between processes over TCP (Boost.Asio; emu/wire.h has the frame format), as an sdp::Device.
///
/// The transport is the HCA core's (hca/queue_pair.h), the one the simulated HCA runs too: RC QPs
/// with PSNs per packet of the path MTU (2048 B), ACK/NAK, RNR NAK and go-back-N retransmission,
/// RDMA READ and atomics; protection domains and MRs with lkey = rkey, bounds and access flags (an
/// SGE outside its MR completes with LOC_PROT_ERR, an RDMA to a bad rkey, range or access with
/// REM_ACCESS_ERR: the responder answers NAK Remote Access Error, writes nothing and goes to ERROR);
/// the QP state machine and the ERROR state (outstanding WRs complete with WR_FLUSH_ERR, or with
/// RETRY_EXC_ERR for WRs on the wire when the peer vanished without a DREQ); one CQ per QP,
/// completion events by ibv_req_notify_cq arming; connection setup with the CM's REQ / REP / RTU
/// (private data) or REJ, and DREQ.
///
/// Faults on the wire (model/fault.h, hca/wire_faults.h) act on every packet the QP sends
/// (requests, ACK/NAKs, READ responses): loss, corruption (the ICRC trailer fails, the receiver
/// drops the frame, IBA 7.8.1), duplication, reordering; the recovery is the core's: the local ACK
/// timer (4.096 us x 2^qp.timeout), go-back-N after a timeout or a NAK PSN sequence error,
/// qp.retry_cnt retries then RETRY_EXC_ERR and ERROR; RNR NAK with qp.rnr_retry.
///
/// Not emulated: timing (no model; as fast as the machine goes). Without injected faults TCP
/// delivers every frame; a vanished peer is seen as the TCP connection closing.
#include <cstdint>
#include <memory>
#include <string>

#include "model/fault.h"
#include "sdp/device.h"

namespace hcasim::emu {

/// Opens an emulated HCA with a memory arena of `memory_bytes` and its own I/O thread; its QPs
/// inject `faults` on what they send and recover with `retry`. Throws sdp::DeviceError when the memory
/// cannot be reserved.
std::unique_ptr<sdp::Device> open_emu_device(uint64_t memory_bytes, const model::FaultConfig& faults = {},
                                            const model::RcRetry& retry = {});

/// Extra verbs of an emulated QP, for tests: the QP's rnr_retry (0-7, 7 = for ever;
/// ibv_modify_qp's rnr_retry, IBA 10.2.4.3). The SDP programs keep 7, as ib_sdp does.
/// Throws sdp::VerbsError when `verbs` is not an emulated QP or rnr_retry > 7.
void set_rnr_retry(sdp::Verbs& verbs, uint8_t rnr_retry);

/// Why an emulated QP went to the ERROR state ("" while it has not), for messages.
std::string error_reason(sdp::Verbs& verbs);

/// What the faults did on an emulated QP's sending side so far (zeros for another Verbs).
model::FaultStats fault_stats(sdp::Verbs& verbs);
/// Frames an emulated QP received and dropped for a bad ICRC so far (0 for another Verbs).
uint64_t icrc_drops(sdp::Verbs& verbs);

}  // namespace hcasim::emu
