// Whole SDP streams on the simulated hosts, with real bytes checked at the receiver, over
// configurations where the interrupt context and the application race for the socket: fast
// copies, fast links, tiny and odd send sizes, both bcopy and bzcopy. A regression test for
// completions processed out of CQ order and sends posted out of mseq order (both once seen
// with copy rates of 4-20 B/ns). Each case runs in its own process (ctest).
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "model/platform.h"
#include "sim/netperf_sim.h"

using namespace hcasim;

struct StreamCase {
  std::vector<std::string> sets;
  uint64_t send_size;
};

/// gtest prints the case as its send size and settings (test names and failure messages).
void PrintTo(const StreamCase& c, std::ostream* os) {
  *os << "-m " << c.send_size;
  for (const auto& s : c.sets) *os << " --set " << s;
}

class Stream : public ::testing::TestWithParam<StreamCase> {};

TEST_P(Stream, EveryByteArrivesInOrder) {
  model::Platform p = model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                                 "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
  for (const auto& s : GetParam().sets) p.set(s);
  frontends::TcpStreamConfig c;
  c.length_s = 0.02;
  c.send_size = GetParam().send_size;
  c.verify_data = true;
  const auto r = sim::run_tcp_stream(p, p, c);  // throws when a byte is missing or wrong
  EXPECT_TRUE(r.data_verified);
  EXPECT_EQ(r.bytes_received, r.bytes_sent);
  EXPECT_GT(r.bytes_received, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Races, Stream,
    ::testing::Values(StreamCase{{"sdp.zcopy_thresh=0", "cpu.copy_tx_rate=15"}, 65536},
                      StreamCase{{"sdp.zcopy_thresh=0", "cpu.copy_tx_rate=20"}, 16384},
                      StreamCase{{"sdp.zcopy_thresh=0", "pcie.gen=2", "ib.speed=QDR", "cpu.copy_tx_rate=4"}, 65536},
                      StreamCase{{"sdp.zcopy_thresh=0", "cpu.copy_rx_rate=0.3"}, 1000},
                      StreamCase{{"sdp.zcopy_thresh=1", "pcie.gen=3", "ib.speed=QDR"}, 1 << 20},
                      StreamCase{{"sdp.zcopy_thresh=1"}, 100000},
                      StreamCase{{"sdp.zcopy_thresh=0"}, 1}),
    [](const ::testing::TestParamInfo<StreamCase>& tpi) {
      std::string name = "m";
      name += std::to_string(tpi.param.send_size);
      for (const auto& s : tpi.param.sets)
        for (char c : s) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });
