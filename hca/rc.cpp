#include <array>

#include <fmt/format.h>

#include "hca/rc.h"

namespace hcasim::hca {

double rnr_timer_ns(uint8_t code) {
  // IBA 1.2.1 table 45, in units of 10 ns (0.01 ms = 1000 units): codes 0..31.
  static constexpr std::array<uint32_t, 32> k10ns = {
      65536000, 1000,    2000,    3000,    4000,    6000,    8000,    12000,   16000,   24000,   32000,
      48000,    64000,   96000,   128000,  192000,  256000,  384000,  512000,  768000,  1024000, 1536000,
      2048000,  3072000, 4096000, 6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000};
  return 10.0 * k10ns[code & 0x1F];
}

void RnrCounter::bad_limit(uint8_t limit) {
  throw sdp::VerbsError(fmt::format("modify_qp: rnr_retry {} > 7", limit));
}

}  // namespace hcasim::hca
