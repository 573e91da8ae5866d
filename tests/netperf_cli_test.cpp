// `hcasim netperf` command line (frontends/netperf_cli.h): netperf 2.4 flags as netperf reads
// them, the seed's exact command lines, hcasim's long options and every error message.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "frontends/config_error.h"
#include "frontends/netperf_cli.h"
#include "util/number.h"

namespace hcasim::frontends {
namespace {

/// Splits on blanks (the command lines below have no quotes).
std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

NetperfOptions parse(const std::string& line) { return parse_netperf_args(words(line)); }

/// The InputError message parsing `line` throws ("" when it does not throw).
std::string error_of(const std::vector<std::string>& args) {
  try {
    parse_netperf_args(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string error_of(const std::string& line) { return error_of(words(line)); }

bool has_note(const NetperfOptions& o, const std::string& note) {
  for (const auto& n : o.notes)
    if (n == note) return true;
  return false;
}

constexpr const char* kHNote =
    "hcasim: note: -H ignored: the remote host is --remote-platform; its name only appears in "
    "the banner";

TEST(NetperfCli, DefaultsAreNetperfs) {
  const NetperfOptions o = parse_netperf_args({});
  EXPECT_EQ(o.test, "TCP_STREAM");
  EXPECT_DOUBLE_EQ(o.length_s, 10.0);
  EXPECT_FALSE(o.local_cpu);
  EXPECT_FALSE(o.remote_cpu);
  EXPECT_TRUE(o.print_headers);
  EXPECT_EQ(o.verbosity, 1);
  EXPECT_EQ(o.format, 'm');
  EXPECT_EQ(o.host, "localhost");
  EXPECT_FALSE(o.cpu_binding_requested);
  EXPECT_EQ(o.send_size, 0u);
  EXPECT_EQ(o.recv_size, 0u);
  EXPECT_EQ(o.local_send_socket, 0u);
  EXPECT_EQ(o.remote_recv_socket, 0u);
  EXPECT_EQ(o.platform, "connectx-ddr-pcie1x8");
  EXPECT_FALSE(o.remote_platform);
  EXPECT_TRUE(o.sets.empty());
  EXPECT_FALSE(o.stats);
  EXPECT_FALSE(o.csv_path);
  EXPECT_FALSE(o.verify_data);
  EXPECT_EQ(o.seed, 1u);
  EXPECT_TRUE(o.notes.empty());
}

// Seed 000, T3: "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K".
TEST(NetperfCli, SeedMFlagLine) {
  const NetperfOptions o = parse("-C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K");
  EXPECT_TRUE(o.local_cpu);
  EXPECT_TRUE(o.remote_cpu);
  EXPECT_FALSE(o.local_cpu_rate);
  EXPECT_FALSE(o.remote_cpu_rate);
  EXPECT_FALSE(o.print_headers);
  EXPECT_EQ(o.test, "TCP_STREAM");
  EXPECT_EQ(o.host, "193.168.10.143");
  EXPECT_DOUBLE_EQ(o.length_s, 60.0);
  EXPECT_EQ(o.send_size, 65536u);
  EXPECT_EQ(o.test_words, (std::vector<std::string>{"-m", "64K"}));
  EXPECT_EQ(o.notes, std::vector<std::string>{kHNote});
}

// nettest_bsd.c (netperf 2.4): 'D' takes no value in the test options' getopt string and sets
// loc_nodelay and rem_nodelay; clustered with a flag that takes one, as getopt reads it.
TEST(NetperfCli, DashDSetsNodelayOnBothSockets) {
  EXPECT_FALSE(parse("-- -m 512").nodelay);
  const NetperfOptions o = parse("-- -D -m 512");
  EXPECT_TRUE(o.nodelay);
  EXPECT_EQ(o.send_size, 512u);
  const NetperfOptions c = parse("-- -Dm 512");
  EXPECT_TRUE(c.nodelay);
  EXPECT_EQ(c.send_size, 512u);
  EXPECT_TRUE(hcasim::frontends::to_tcp_stream_config(o).nodelay);
}

TEST(NetperfCli, LeadingNetperfWordIsSkipped) {
  const NetperfOptions o =
      parse("netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 1M");
  EXPECT_EQ(o.send_size, 1048576u);
  EXPECT_DOUBLE_EQ(o.length_s, 60.0);
  // Only in first position: elsewhere it is a stray word.
  EXPECT_EQ(error_of("-l 60 netperf"),
            "unexpected argument 'netperf' (netperf options are -X, test options go after --)");
}

// The versions message: "netperf -v2 -4 -H 193.168.10.143 -l 30 -t TCP_STREAM -c -C -- -m size".
TEST(NetperfCli, SeedVersionsLine) {
  const NetperfOptions o = parse("-v2 -4 -H 193.168.10.143 -l 30 -t TCP_STREAM -c -C -- -m 128K");
  EXPECT_EQ(o.verbosity, 2);
  EXPECT_DOUBLE_EQ(o.length_s, 30.0);
  EXPECT_TRUE(o.local_cpu);
  EXPECT_TRUE(o.remote_cpu);
  EXPECT_TRUE(o.print_headers);
  EXPECT_EQ(o.send_size, 131072u);
  EXPECT_EQ(o.notes,
            (std::vector<std::string>{
                "hcasim: note: -4 ignored: the simulated data connection is InfiniBand (SDP, or IPoIB with --transport ipoib), not chosen by address family",
                kHNote}));
}

// T2: "-- -r 64K": TCP_STREAM ignores -r and sends the send socket size.
TEST(NetperfCli, SeedRFlagLine) {
  const NetperfOptions o = parse("-C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -r 64K");
  EXPECT_EQ(o.send_size, 0u);
  ASSERT_TRUE(o.request_size);
  EXPECT_EQ(*o.request_size, "64K");
  EXPECT_EQ(o.test_words, (std::vector<std::string>{"-r", "64K"}));
  EXPECT_EQ(request_size_note(o, 16384),
            "hcasim: note: TCP_STREAM ignores -r; sends are the send socket size (16384 B)");
  EXPECT_EQ(request_size_note(parse("-- -m 64K"), 65536), "");
  EXPECT_EQ(request_size_note(parse("-- -r 1M -m 64K"), 65536),
            "hcasim: note: TCP_STREAM ignores -r; sends are -m's size (65536 B)");
  EXPECT_EQ(parse("-- -r 64K,1M").request_size.value(), "64K,1M");
}

// As pasted from the seed: "-l 60 ---m 64K" (the mail client ate the space of "-- -m").
TEST(NetperfCli, TripleDashIsReadAsDoubleDashAndOption) {
  const NetperfOptions o = parse("-C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 64K");
  EXPECT_EQ(o.send_size, 65536u);
  EXPECT_TRUE(has_note(o, "hcasim: note: read '---m' as '-- -m' (a space lost in a pasted "
                          "command)"));
  const NetperfOptions r = parse("-l 60 ---r 128K");
  EXPECT_EQ(r.request_size.value(), "128K");
  EXPECT_EQ(r.send_size, 0u);
}

TEST(NetperfCli, CpuBindingForms) {
  NetperfOptions o = parse("-T0,0");
  EXPECT_TRUE(o.cpu_binding_requested);
  EXPECT_EQ(o.local_cpu_bind, 0);
  EXPECT_EQ(o.remote_cpu_bind, 0);

  o = parse("-T 2,2");
  EXPECT_EQ(o.local_cpu_bind, 2);
  EXPECT_EQ(o.remote_cpu_bind, 2);

  o = parse("-T ,1");
  EXPECT_FALSE(o.local_cpu_bind);
  EXPECT_EQ(o.remote_cpu_bind, 1);

  o = parse("-T 0,");
  EXPECT_EQ(o.local_cpu_bind, 0);
  EXPECT_FALSE(o.remote_cpu_bind);

  // break_args(): one value without a comma sets both.
  o = parse("-T3");
  EXPECT_EQ(o.local_cpu_bind, 3);
  EXPECT_EQ(o.remote_cpu_bind, 3);

  const TcpStreamConfig c = to_tcp_stream_config(parse("-T ,1"));
  EXPECT_FALSE(c.local_cpu);
  EXPECT_EQ(c.remote_cpu, 1);
}

TEST(NetperfCli, AttachedValues) {
  const NetperfOptions o = parse("-l60 -P0 -tTCP_STREAM -v0 -fK -Hhost1");
  EXPECT_DOUBLE_EQ(o.length_s, 60.0);
  EXPECT_FALSE(o.print_headers);
  EXPECT_EQ(o.test, "TCP_STREAM");
  EXPECT_EQ(o.verbosity, 0);
  EXPECT_EQ(o.format, 'K');
  EXPECT_EQ(o.host, "host1");
  const NetperfOptions t = parse("-- -m64K -M4K -s128K -S256K");
  EXPECT_EQ(t.send_size, 65536u);
  EXPECT_EQ(t.recv_size, 4096u);
  EXPECT_EQ(t.local_send_socket, 131072u);
  EXPECT_EQ(t.remote_recv_socket, 262144u);
  EXPECT_EQ(t.test_words, (std::vector<std::string>{"-m64K", "-M4K", "-s128K", "-S256K"}));
}

TEST(NetperfCli, TestNameIsCaseInsensitiveLikeNetperf) {
  EXPECT_EQ(parse("-t tcp_stream").test, "TCP_STREAM");
}

TEST(NetperfCli, GroupedFlagsAndFractionalLength) {
  const NetperfOptions o = parse("-cC -l 0.5");
  EXPECT_TRUE(o.local_cpu);
  EXPECT_TRUE(o.remote_cpu);
  EXPECT_DOUBLE_EQ(o.length_s, 0.5);
  const NetperfOptions g = parse("-cl 20");  // getopt: a value option ends the group
  EXPECT_TRUE(g.local_cpu);
  EXPECT_DOUBLE_EQ(g.length_s, 20.0);
}

TEST(NetperfCli, CpuRateIsTakenOnlyWhenNumeric) {
  NetperfOptions o = parse("-c 50 -C 75.5 -l 10");
  EXPECT_TRUE(o.local_cpu);
  EXPECT_TRUE(o.remote_cpu);
  EXPECT_DOUBLE_EQ(o.local_cpu_rate.value(), 50.0);
  EXPECT_DOUBLE_EQ(o.remote_cpu_rate.value(), 75.5);
  EXPECT_DOUBLE_EQ(o.length_s, 10.0);
  EXPECT_TRUE(has_note(o, "hcasim: note: -c RATE ignored: simulated CPU time needs no calibration"));

  o = parse("-c -l 10");  // next word is an option: no rate
  EXPECT_TRUE(o.local_cpu);
  EXPECT_FALSE(o.local_cpu_rate);
  EXPECT_DOUBLE_EQ(o.length_s, 10.0);

  o = parse("-C -- -m 1M");  // "--" is not a rate
  EXPECT_TRUE(o.remote_cpu);
  EXPECT_FALSE(o.remote_cpu_rate);
  EXPECT_EQ(o.send_size, 1048576u);

  // A word starting with a digit that is not a number stays a word (and is then stray).
  EXPECT_EQ(error_of("-c 5x"),
            "unexpected argument '5x' (netperf options are -X, test options go after --)");
}

TEST(NetperfCli, FormatUnits) {
  for (const char* f : {"k", "m", "g", "K", "M", "G"})
    EXPECT_EQ(parse(std::string("-f ") + f).format, f[0]);
  EXPECT_EQ(error_of("-f x"), "-f: 'x' is not one of k m g K M G");
  EXPECT_EQ(error_of("-f MM"), "-f: 'MM' is not one of k m g K M G");
}

TEST(NetperfCli, SocketBufferPairsFollowBreakArgs) {
  // -s send[,recv] is local, TCP_STREAM uses send; -S send[,recv] is remote, it uses recv.
  NetperfOptions o = parse("-- -s 64K,32K -S 32K,128K");
  EXPECT_EQ(o.local_send_socket, 65536u);
  EXPECT_EQ(o.remote_recv_socket, 131072u);
  o = parse("-- -s 64K -S 128K");  // no comma: both values
  EXPECT_EQ(o.local_send_socket, 65536u);
  EXPECT_EQ(o.remote_recv_socket, 131072u);
  o = parse("-- -S 128K,");  // remote send only
  EXPECT_EQ(o.remote_recv_socket, 0u);
  o = parse("-- -s ,64K");  // local recv only
  EXPECT_EQ(o.local_send_socket, 0u);
  o = parse("-- -M 1000k");
  EXPECT_EQ(o.recv_size, 1000000u);
}

TEST(NetperfCli, IgnoredOptionsGiveOneNoteEach) {
  const NetperfOptions o = parse("-i 10,3 -I 99,5 -i 4 -6 -H a -H b,4");
  EXPECT_EQ(o.host, "b");
  EXPECT_EQ(o.notes,
            (std::vector<std::string>{
                "hcasim: note: -i/-I ignored: the simulation is deterministic, one iteration "
                "gives the interval",
                "hcasim: note: -6 ignored: the simulated data connection is InfiniBand (SDP, or IPoIB with --transport ipoib), not chosen by address family",
                kHNote}));
}

TEST(NetperfCli, HcasimLongOptionsInAnyOrder) {
  const NetperfOptions o = parse_netperf_args(
      {"--platform", "p1.toml", "-l", "5", "--remote-platform=p2", "--set", "pcie.max_payload=256",
       "-c", "--stats", "--set=sdp.zcopy_thresh=0", "--csv", "out.csv", "--", "-m", "64K",
       "--verify-data", "--seed", "42"});
  EXPECT_EQ(o.platform, "p1.toml");
  EXPECT_EQ(o.remote_platform.value(), "p2");
  EXPECT_EQ(o.sets, (std::vector<std::string>{"pcie.max_payload=256", "sdp.zcopy_thresh=0"}));
  EXPECT_TRUE(o.stats);
  EXPECT_EQ(o.csv_path.value(), "out.csv");
  EXPECT_TRUE(o.verify_data);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_TRUE(o.local_cpu);
  EXPECT_DOUBLE_EQ(o.length_s, 5.0);
  EXPECT_EQ(o.send_size, 65536u);
  EXPECT_EQ(o.test_words, (std::vector<std::string>{"-m", "64K"}));

  const TcpStreamConfig c = to_tcp_stream_config(o);
  EXPECT_DOUBLE_EQ(c.length_s, 5.0);
  EXPECT_EQ(c.send_size, 65536u);
  EXPECT_EQ(c.recv_size, 0u);
  EXPECT_EQ(c.local_send_socket, 0u);
  EXPECT_EQ(c.remote_recv_socket, 0u);
  EXPECT_TRUE(c.verify_data);
  EXPECT_EQ(c.seed, 42u);
}

TEST(NetperfCli, ErrorsNameTheFlag) {
  EXPECT_EQ(error_of("-Z"), "unknown option -Z");
  EXPECT_EQ(error_of("-cZ"), "unknown option -Z");
  EXPECT_EQ(error_of("-l abc"), "-l: 'abc' is not a number");
  EXPECT_EQ(error_of("-l 60s"), "-l: '60s' is not a number");
  EXPECT_EQ(error_of("-l inf"), "-l: 'inf' is not a number");
  EXPECT_EQ(error_of("-l -1000"),
            "-l -1000: a negative -l is netperf's byte/transaction count; hcasim runs timed "
            "tests only (give seconds > 0)");
  EXPECT_EQ(error_of("-l 0"), "-l 0: the test length must be > 0 seconds");
  EXPECT_EQ(error_of("-l"), "-l: missing value");
  EXPECT_EQ(error_of("-l -- -m 64K"), "-l: missing value");
  EXPECT_EQ(error_of("-t UDP_STREAM"), "-t UDP_STREAM: hcasim simulates TCP_STREAM, TCP_MAERTS and TCP_RR");
  EXPECT_EQ(error_of("-tTCP_CRR"), "-t TCP_CRR: hcasim simulates TCP_STREAM, TCP_MAERTS and TCP_RR");
  EXPECT_EQ(error_of("-P 2"), "-P: '2' is not 0 or 1");
  EXPECT_EQ(error_of("-T a"), "-T: 'a' is not a CPU number");
  EXPECT_EQ(error_of("-T 1,-2"), "-T: '-2' is out of range (0..4095)");
  EXPECT_EQ(error_of("-v x"), "-v: 'x' is not a number");
  EXPECT_EQ(error_of("-v -1"), "-v: '-1' is out of range (0..1000)");
  EXPECT_EQ(error_of("-i x"), "-i: 'x' is not a number");
  EXPECT_EQ(error_of("-I 99,y"), "-I: 'y' is not a number");
  EXPECT_EQ(error_of("-N"), "-N: netperf option not supported by hcasim");
  EXPECT_EQ(error_of("-d"), "-d: netperf option not supported by hcasim");
  EXPECT_EQ(error_of("foo"),
            "unexpected argument 'foo' (netperf options are -X, test options go after --)");

  EXPECT_EQ(error_of("-- -m 12Q"),
            "-m: bad size '12Q' (use a number with an optional K/M/G or k/m/g suffix)");
  EXPECT_EQ(error_of("-- -M x"),
            "-M: bad size 'x' (use a number with an optional K/M/G or k/m/g suffix)");
  EXPECT_EQ(error_of("-- -s 64K,abc"),
            "-s: bad size 'abc' (use a number with an optional K/M/G or k/m/g suffix)");
  EXPECT_EQ(error_of("-- -S -1"),
            "-S: bad size '-1' (use a number with an optional K/M/G or k/m/g suffix)");
  EXPECT_EQ(error_of("-- -r 64Q"),
            "-r: bad size '64Q' (use a number with an optional K/M/G or k/m/g suffix)");
  EXPECT_EQ(error_of("-- -m"), "-m: missing value");
  EXPECT_EQ(error_of("-- -L 1.2.3.4"), "-L: netperf test option not supported by hcasim");
  EXPECT_EQ(error_of("-- -Q"), "unknown test option -Q");
  EXPECT_EQ(error_of("-- -m 64K junk"), "unexpected argument 'junk' after --");
  EXPECT_EQ(error_of("-- -m 64K --"), "unexpected argument '--' after --");

  EXPECT_EQ(error_of("--frobnicate"), "unknown option --frobnicate");
  EXPECT_EQ(error_of("--platform"), "--platform: missing value");
  EXPECT_EQ(error_of("-- -m 64K --csv"), "--csv: missing value");
  EXPECT_EQ(error_of("--seed x"), "--seed: 'x' is not a non-negative integer");
  EXPECT_EQ(error_of("--seed -3"), "--seed: '-3' is not a non-negative integer");
  EXPECT_EQ(error_of("--set novalue"), "--set: 'novalue' is not section.key=value");
  EXPECT_EQ(error_of(std::vector<std::string>{"--platform", ""}), "--platform: empty value");
  EXPECT_EQ(error_of(std::vector<std::string>{"--csv="}), "--csv: empty value");
}

TEST(NetperfCli, ProfileIsAFlagWithoutValue) {
  EXPECT_FALSE(parse("-l 1 -- -m 64K").profile);
  EXPECT_TRUE(parse("-l 1 --profile -- -m 64K").profile);
  EXPECT_TRUE(parse("--profile -c").profile);
  EXPECT_TRUE(parse("-l 1 -- -m 64K --profile").profile);  // long options after "--" too
  const NetperfOptions o = parse("--profile -l 1 -- -m 64K --profile");
  EXPECT_TRUE(o.profile);
  EXPECT_EQ(o.test_words, (std::vector<std::string>{"-m", "64K"}));
  EXPECT_EQ(to_tcp_stream_config(o).send_size, 65536u);

  EXPECT_EQ(error_of("--profile=1"), "--profile: takes no value (got '1')");
  EXPECT_EQ(error_of("--profile="), "--profile: takes no value (got '')");
  EXPECT_EQ(error_of("--profile yes -l 1"), "--profile: takes no value (got 'yes')");
  EXPECT_EQ(error_of("-- -m 64K --profile 2"), "--profile: takes no value (got '2')");
  EXPECT_EQ(error_of("--profiles"), "unknown option --profiles");
}

TEST(NetperfCli, ParseNumber) {
  EXPECT_DOUBLE_EQ(util::parse_number("60").value(), 60.0);
  EXPECT_DOUBLE_EQ(util::parse_number("+2.5").value(), 2.5);
  EXPECT_DOUBLE_EQ(util::parse_number("-1e3").value(), -1000.0);
  EXPECT_FALSE(util::parse_number(""));
  EXPECT_FALSE(util::parse_number("1,5"));
  EXPECT_FALSE(util::parse_number("nan"));
  EXPECT_FALSE(util::parse_number("0x10"));
  EXPECT_FALSE(util::parse_number("1 "));
}

TEST(NetperfCli, VerifyDataMemoryIsTwiceTheSendSizePlusTheReceiveSize) {
  EXPECT_EQ(verify_data_bytes(parse("--verify-data -- -m 1G")), uint64_t{2} << 30);
  EXPECT_EQ(verify_data_bytes(parse("--verify-data -- -m 1G -M 1M")), (uint64_t{2} << 30) + (1u << 20));
  EXPECT_EQ(verify_data_bytes(parse("-- -m 1G")), 0u);  // byte counts, no real bytes
  EXPECT_NO_THROW(check_verify_data_memory(parse("--verify-data -- -m 64K")));
}

TEST(NetperfCli, ConfigFieldsAreWordedAsNetperfsOptions) {
  EXPECT_STREQ(worded(ConfigError("remote_cpu", "remote CPU 9 does not exist"), netperf_option).what(),
               "-T: remote CPU 9 does not exist");
  EXPECT_EQ(netperf_option("local_send_socket"), "-s");
  EXPECT_EQ(netperf_option("remote_recv_socket"), "-S");
  EXPECT_EQ(netperf_option("transport"), "--transport ipoib");
}

TEST(NetperfCli, TheIpoibPathRefusesVerifyDataAndFaultsInFlagWords) {
  // sim/ipoib_sim.cpp keeps only a precondition in TcpStreamConfig's words.
  const auto refusal = [](const std::string& line) -> std::string {
    try {
      to_tcp_stream_config(parse(line));
    } catch (const InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(refusal("--transport ipoib --verify-data"),
            "--verify-data: the IPoIB path (--transport ipoib) moves byte counts, not bytes; use --transport sdp");
  EXPECT_EQ(refusal("--transport ipoib --set fault.loss=1e-3"),
            "fault.*: faults on the wire are modelled for SDP only, not for --transport ipoib");
  EXPECT_EQ(refusal("--transport sdp --set fault.loss=1e-3"), "(accepted)");
}

}  // namespace
// -t TCP_RR -- -r REQ[,RSP] as nettest_bsd.c scan_sockets_args reads it with break_args: one
// value sets both sizes, "a," the request only, ",b" the response only; netperf's default 1,1.
TEST(NetperfCli, RequestResponseSizesFollowBreakArgs) {
  const auto c1 = to_tcp_stream_config(parse("-t TCP_RR"));
  EXPECT_EQ(c1.test, NetperfTest::Rr);
  EXPECT_EQ(c1.request_size, 1u);
  EXPECT_EQ(c1.response_size, 1u);
  const auto c2 = to_tcp_stream_config(parse("-t TCP_RR -- -r 64"));
  EXPECT_EQ(c2.request_size, 64u);
  EXPECT_EQ(c2.response_size, 64u);
  const auto c3 = to_tcp_stream_config(parse("-t TCP_RR -- -r 1K,"));
  EXPECT_EQ(c3.request_size, 1024u);
  EXPECT_EQ(c3.response_size, 1u);
  const auto c4 = to_tcp_stream_config(parse("-tTCP_RR -- -r,4k -s 32K -S ,8K"));
  EXPECT_EQ(c4.request_size, 1u);
  EXPECT_EQ(c4.response_size, 4000u);
  EXPECT_EQ(c4.local_send_socket, 32768u);  // -s 32K sets both local buffers
  EXPECT_EQ(c4.local_recv_socket, 32768u);
  EXPECT_EQ(c4.remote_send_socket, 0u);     // -S ,8K only the remote receive buffer
  EXPECT_EQ(c4.remote_recv_socket, 8192u);
  // -l -N of TCP_RR is a transaction count.
  const auto c5 = to_tcp_stream_config(
      parse_netperf_args({"-t", "TCP_RR", "-l", "-1000"}, /*allow_byte_count=*/true));
  EXPECT_EQ(c5.transactions, 1000u);
  EXPECT_EQ(c5.length_bytes, 0u);
  EXPECT_EQ(to_tcp_stream_config(parse("-t tcp_maerts")).test, NetperfTest::Maerts);
}

}  // namespace hcasim::frontends

TEST(NetperfCli, NegativeLengthIsAByteCountOnlyWhereAllowed) {
  // netperf: "-l testlen: ... (<0 bytes|trans)"; hcasim-sdp-client allows it, the simulator not.
  const auto o = hcasim::frontends::parse_netperf_args({"-l", "-1073741824", "--", "-m", "64K"}, /*allow_byte_count=*/true);
  EXPECT_EQ(o.length_bytes, 1073741824u);
  EXPECT_THROW(hcasim::frontends::parse_netperf_args({"-l", "-1073741824"}), hcasim::InputError);
  EXPECT_THROW(hcasim::frontends::parse_netperf_args({"-l", "-1.5"}, true), hcasim::InputError);
}

