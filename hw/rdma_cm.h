#pragma once
/// \file What the hardware backend's connections, listeners and devices share about the RDMA
/// CM (librdmacm): its events, waiting for them with a deadline, and one-line descriptions of the
/// ones that end a connection setup. Internal to hw/.
#include <rdma/rdma_cma.h>

#include <chrono>
#include <memory>
#include <string>

namespace hcasim::hw::detail {

using Clock = std::chrono::steady_clock;

/// strerror_r(3), GNU flavour (glibc with _GNU_SOURCE, which g++ and clang++ define): the CM
/// thread and the engine's threads may report errors at once.
std::string errstr(int e);

/// Milliseconds left until `deadline`, 0 once it passed (at most 2^30).
int remaining_ms(Clock::time_point deadline);

/// An RDMA CM event, acknowledged (rdma_ack_cm_event(3)) when it goes out of scope. Its
/// private data lives until then.
struct AckCmEvent {
  void operator()(rdma_cm_event* e) const noexcept { ::rdma_ack_cm_event(e); }
};
using CmEvent = std::unique_ptr<rdma_cm_event, AckCmEvent>;

/// The next event on `ch` (whose fd is non-blocking), or null once timeout_ms passed
/// (timeout_ms < 0: no limit). Throws sdp::DeviceError when rdma_get_cm_event(3) fails.
CmEvent next_cm_event(rdma_event_channel* ch, int timeout_ms);

/// One line for a CM event that ended a connection setup with `where` ("10.0.0.2:5001"):
/// address and route errors, an unreachable peer, a REJ with its reason and printable private
/// data (reject_reason_str, printable_private_data), a disconnect or device removal.
std::string describe_cm_failure(const rdma_cm_event& ev, const std::string& where);

/// Waits for `want` on `ch`; throws sdp::DeviceError describing the event that came instead, or
/// the timeout.
CmEvent expect_cm_event(rdma_event_channel* ch, rdma_cm_event_type want, int timeout_ms, const std::string& where);

}  // namespace hcasim::hw::detail
