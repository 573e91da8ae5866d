// libFuzzer target: the emulated HCA's frame decoder (emu/wire.h), which reads what another
// process sends. A frame that decodes must encode to exactly the same bytes (every field is
// kept and reserved bits are refused), so decode and encode agree on the format. decode does
// not check the ICRC (the QP's read loop calls icrc_ok first), so mutated inputs reach the
// field checks; the re-encoded frame's ICRC is right, and equal to the input's when that was.
#include <algorithm>
#include <cstdlib>
#include <span>

#include "emu/wire.h"

using namespace hcasim::emu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= kLengthSize) {
    try {
      decode_length(std::span<const uint8_t, kLengthSize>(data, kLengthSize));
    } catch (const WireError&) {
    }
  }
  try {
    const Packet p = decode(std::span<const uint8_t>(data, size));
    const std::vector<uint8_t> frame = encode(p);
    const std::span<const uint8_t> in(data, size), body(frame.data() + kLengthSize, frame.size() - kLengthSize);
    if (body.size() != size || !std::equal(body.begin(), body.end() - kIcrcSize, data) || !icrc_ok(body)) std::abort();
    if (icrc_ok(in) && !std::equal(body.begin(), body.end(), data)) std::abort();
  } catch (const WireError&) {
  }
  return 0;
}
