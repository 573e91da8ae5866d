#include "hw/rdma_cm.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "hw/rdma_device.h"
#include "sdp/device.h"

namespace hcasim::hw {

namespace detail {

std::string errstr(int e) {
  char buf[128];
  return ::strerror_r(e, buf, sizeof buf);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

CmEvent next_cm_event(rdma_event_channel* ch, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (::rdma_get_cm_event(ch, &ev) == 0) return CmEvent(ev);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      throw sdp::DeviceError(fmt::format("rdma_get_cm_event: {}", errstr(errno)));
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      wait_ms = remaining_ms(deadline);
      if (wait_ms == 0) return nullptr;
    }
    pollfd p{ch->fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) < 0 && errno != EINTR)
      throw sdp::DeviceError(fmt::format("poll on the RDMA CM event channel: {}", errstr(errno)));
  }
}

namespace {
std::string status_str(int status) {
  return status < 0 ? errstr(-status) : fmt::format("status {}", status);
}

}  // namespace

std::string describe_cm_failure(const rdma_cm_event& ev, const std::string& where) {
  switch (ev.event) {
    case RDMA_CM_EVENT_ADDR_ERROR:
      return fmt::format("cannot resolve {} to an RDMA address: {} (is it the IP address of an IPoIB or RoCE "
                         "interface?)",
                         where, status_str(ev.status));
    case RDMA_CM_EVENT_ROUTE_ERROR: return fmt::format("no route to {}: {}", where, status_str(ev.status));
    case RDMA_CM_EVENT_UNREACHABLE:
      return fmt::format("{} unreachable: {} (no answer from its RDMA CM)", where, status_str(ev.status));
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return fmt::format("connection with {} failed: {}", where, status_str(ev.status));
    case RDMA_CM_EVENT_REJECTED: {
      constexpr int kInvalidServiceId = 8;  // the IB CM's answer to a REQ nobody listens for
      const std::string reason = reject_reason_str(ev.status);
      const std::string text = printable_private_data(
          {static_cast<const uint8_t*>(ev.param.conn.private_data), ev.param.conn.private_data_len});
      if (ev.status == kInvalidServiceId)
        return fmt::format("connection to {} refused: nothing listens there ({})", where, reason);
      if (!text.empty()) return fmt::format("connection with {} rejected: {} ({})", where, text, reason);
      return fmt::format("connection with {} rejected ({})", where, reason);
    }
    case RDMA_CM_EVENT_DISCONNECTED:
      return fmt::format("{} disconnected during the connection setup", where);
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return fmt::format("the RDMA device was removed during the connection setup with {}", where);
    default:
      return fmt::format("connection setup with {}: unexpected {} ({})", where, ::rdma_event_str(ev.event),
                         status_str(ev.status));
  }
}

CmEvent expect_cm_event(rdma_event_channel* ch, rdma_cm_event_type want, int timeout_ms, const std::string& where) {
  CmEvent ev = next_cm_event(ch, timeout_ms);
  if (!ev)
    throw sdp::DeviceError(fmt::format("{}: no {} within {} ms", where, ::rdma_event_str(want), timeout_ms));
  if (ev->event != want || ev->status != 0) throw sdp::DeviceError(describe_cm_failure(*ev, where));
  return ev;
}

}  // namespace detail

using detail::errstr;

std::string reject_reason_str(int status) {
  if (status < 0) return errstr(-status);
  // enum ib_cm_rej_reason (Linux include/rdma/ib_cm.h), after the IBA's REJ reasons.
  static constexpr std::array<const char*, 36> kReasons = {
      nullptr,
      "no QP available",
      "no EEC available",
      "no resources",
      "timeout",
      "unsupported request",
      "invalid communication ID",
      "invalid communication instance",
      "invalid service ID",
      "invalid transport type",
      "stale connection",
      "RDC does not exist",
      "invalid GID",
      "invalid LID",
      "invalid SL",
      "invalid traffic class",
      "invalid hop limit",
      "invalid packet rate",
      "invalid alternate GID",
      "invalid alternate LID",
      "invalid alternate SL",
      "invalid alternate traffic class",
      "invalid alternate hop limit",
      "invalid alternate packet rate",
      "port CM redirect",
      "port redirect",
      "invalid MTU",
      "insufficient responder resources",
      "consumer defined",
      "invalid RNR retry count",
      "duplicate local communication ID",
      "invalid class version",
      "invalid flow label",
      "invalid alternate flow label",
      nullptr,
      "vendor option not supported",
  };
  const char* name = static_cast<std::size_t>(status) < kReasons.size() ? kReasons[static_cast<std::size_t>(status)]
                                                                        : nullptr;
  return name != nullptr ? fmt::format("IB CM REJ reason {}, {}", status, name)
                         : fmt::format("IB CM REJ reason {}", status);
}

std::string printable_private_data(std::span<const uint8_t> data) {
  std::size_t n = 0;
  while (n < data.size() && data[n] != 0) {
    if (data[n] < 0x20 || data[n] > 0x7e) return "";
    ++n;
  }
  if (n == 0) return "";
  for (std::size_t i = n; i < data.size(); ++i)
    if (data[i] != 0) return "";
  return std::string(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace hcasim::hw
