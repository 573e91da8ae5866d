// libFuzzer target: the SDP wire headers (sdp/bsdh.h): BSDH, Hello (HH), HelloAck (HAH) and
// ChRcvBuf decoders take any bytes; what decodes must encode back to the same defined bytes.
#include <cstdlib>
#include <cstring>

#include "sdp/bsdh.h"

using namespace hcasim::sdp;

namespace {
template <class H>
void round_trip(std::span<const uint8_t> in) {
  try {
    const H h = H::decode(in);
    const auto out = h.to_bytes();
    // Reserved fields are not kept, so compare a second decode instead of the raw bytes.
    const H again = H::decode(out);
    if (again.to_bytes() != out) std::abort();
  } catch (const ProtocolError&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  round_trip<Bsdh>(in);
  round_trip<HelloHeader>(in);
  round_trip<HelloAckHeader>(in);
  round_trip<ChRcvBufHeader>(in);
  try {
    Bsdh::decode(in).check_len(size);
  } catch (const ProtocolError&) {
  }
  return 0;
}
