// libFuzzer target: the emulated HCA's frame decoder (emu/wire.h), which reads what another
// process sends. A frame that decodes must encode to exactly the same bytes (every field is
// kept and reserved bits are refused), so decode and encode agree on the format.
#include <cstdlib>

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
    if (frame.size() != size + kLengthSize || !std::equal(frame.begin() + kLengthSize, frame.end(), data)) std::abort();
  } catch (const WireError&) {
  }
  return 0;
}
