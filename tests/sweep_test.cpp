// `hcasim sweep` and `hcasim compare` as a user runs them: a sweep's points are the tool's own
// runs (the CSV rows of `hcasim netperf` / `hcasim ib_write_*` by hand), the plot's data is the
// CSV, bad input is one line and writes nothing, and compare's errors are `hcasim run`'s.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenarios/sweep.h"
#include "tests/hcasim_run.h"
#include "util/csv.h"

extern char** environ;

namespace fs = std::filesystem;
using hcasim::test::Outcome;
using hcasim::test::slurp;

namespace {

class Sweep : public hcasim::test::HcasimCommandTest {
 protected:
  Sweep() : HcasimCommandTest("sweep") {}
  /// The data lines of a CSV file (header dropped).
  static std::vector<std::string> data_lines(const fs::path& csv) {
    std::istringstream in(slurp(csv));
    std::vector<std::string> lines;
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line))
      if (!line.empty()) lines.push_back(line);
    return lines;
  }
  static std::string header_line(const fs::path& csv) {
    std::istringstream in(slurp(csv));
    std::string line;
    std::getline(in, line);
    return line;
  }
  /// The files of dir_ other than run()'s own out and err.
  std::vector<std::string> written() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != "out" && e.path().filename() != "err") names.push_back(e.path().filename().string());
    return names;
  }
};

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(SweepSizes, RangesDoubleAndListsKeepTheirOrder) {
  using hcasim::scenarios::parse_size_list;
  // 64..4M: 2^6 .. 2^22, 17 sizes.
  const auto range = parse_size_list("64..4M", "-m");
  ASSERT_EQ(range.size(), 17u);
  EXPECT_EQ(range.front(), 64u);
  EXPECT_EQ(range[1], 128u);
  EXPECT_EQ(range.back(), 4u << 20);
  // An end that is not start x 2^k: the doublings at or below it (3, 6, 12; 24 > 20), then the end.
  EXPECT_EQ(parse_size_list("3..20", "-m"), (std::vector<uint64_t>{3, 6, 12, 20}));
  EXPECT_EQ(parse_size_list("100..1000", "-m"), (std::vector<uint64_t>{100, 200, 400, 800, 1000}));
  EXPECT_EQ(parse_size_list("5..5", "-m"), (std::vector<uint64_t>{5}));
  // k is 10^3 (netperf's convert()): 64000, 128000, 256000.
  EXPECT_EQ(parse_size_list("64k..256k", "-m"), (std::vector<uint64_t>{64000, 128000, 256000}));
  EXPECT_EQ(parse_size_list("64,1K,64K", "-m"), (std::vector<uint64_t>{64, 1024, 65536}));
  EXPECT_EQ(parse_size_list("1M", "-s"), (std::vector<uint64_t>{1u << 20}));
  EXPECT_THROW(parse_size_list("64..", "-m"), hcasim::InputError);
  EXPECT_THROW(parse_size_list("..64", "-m"), hcasim::InputError);
  EXPECT_THROW(parse_size_list("4M..64", "-m"), hcasim::InputError);
  EXPECT_THROW(parse_size_list("0..64", "-m"), hcasim::InputError);
  EXPECT_THROW(parse_size_list("64,,1K", "-m"), hcasim::InputError);
}

TEST(SweepArgs, OptionsStandAnywhereAndTheSizeIsFound) {
  using hcasim::scenarios::parse_sweep_args;
  const auto o = parse_sweep_args({"netperf", "-l", "1", "--", "-m", "1K,4K", "--vary", "sdp.zcopy_thresh=0,1",
                                   "-j", "2", "--vary=pcie.max_read_request=128,512"});
  EXPECT_EQ(o.tool, "netperf");
  EXPECT_EQ(o.words, (std::vector<std::string>{"-l", "1", "--", "-m", "1K,4K"}));
  EXPECT_EQ(o.size_word, 4u);
  EXPECT_EQ(o.sizes, (std::vector<uint64_t>{1024, 4096}));
  ASSERT_EQ(o.vary.size(), 2u);
  EXPECT_EQ(o.vary[1].key, "pcie.max_read_request");
  EXPECT_EQ(o.vary[1].values, (std::vector<std::string>{"128", "512"}));
  EXPECT_EQ(o.jobs, 2);
  const auto p = parse_sweep_args({"ib_write_bw", "-n", "100", "--size=2..8"});
  EXPECT_EQ(p.size_prefix, "--size=");
  EXPECT_EQ(p.sizes, (std::vector<uint64_t>{2, 4, 8}));
  EXPECT_TRUE(parse_sweep_args({"ib_write_lat", "-a", "-n", "100"}).perftest_all);
  EXPECT_THROW(parse_sweep_args({"netperf", "-l", "1"}), hcasim::InputError);  // no -m
  EXPECT_THROW(parse_sweep_args({"ib_write_lat", "-a", "-s", "2,4"}), hcasim::InputError);
  EXPECT_THROW(parse_sweep_args({"ib_atomic_bw", "-s", "2"}), hcasim::InputError);
}

TEST_F(Sweep, CsvRowsAreNetperfRunByHand) {
  const Outcome s = run(fmt::format("sweep netperf -c -C -l 0.5 -- -m 4K,64K --vary sdp.zcopy_thresh=0,1 -j 2 --csv {}",
                                    (dir_ / "sweep.csv").string()));
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(s.err, "");  // no progress bar off a terminal
  const auto rows = data_lines(dir_ / "sweep.csv");
  ASSERT_EQ(rows.size(), 4u);
  // The table: title, two heading lines, a line per point.
  EXPECT_EQ(count_lines(s.out), 3 + 4) << s.out;
  EXPECT_NE(s.out.find("sdp.zcopy_thresh=1"), std::string::npos) << s.out;
  size_t i = 0;
  for (const char* z : {"0", "1"})
    for (const char* m : {"4096", "65536"}) {
      const fs::path by_hand = dir_ / fmt::format("netperf-{}-{}.csv", z, m);
      const Outcome n = run(fmt::format("netperf --set sdp.zcopy_thresh={} -c -C -l 0.5 -- -m {} --csv {}", z, m,
                                        by_hand.string()));
      ASSERT_EQ(n.status, 0) << n.err;
      EXPECT_EQ(header_line(dir_ / "sweep.csv"), "variant," + header_line(by_hand));
      const auto hand = data_lines(by_hand);
      ASSERT_EQ(hand.size(), 1u);
      EXPECT_EQ(rows[i], fmt::format("sdp.zcopy_thresh={},{}", z, hand[0])) << "point " << i;
      // A real figure: TCP_STREAM, the size asked for, a throughput above 100 Mbit/s.
      const auto cells = hcasim::util::parse_csv(rows[i], "row").front();
      EXPECT_EQ(cells[1], "TCP_STREAM");
      EXPECT_EQ(cells[2], m);
      EXPECT_GT(std::stod(cells[7]), 100.0) << rows[i];
      ++i;
    }
}

TEST_F(Sweep, PerftestPointsArePerftestRunByHand) {
  // -s list: one child per size; -a: perftest's own 2..8M (23 sizes) in one child.
  const Outcome s = run(fmt::format("sweep ib_write_bw -n 200 -s 4K,64K --vary pcie.max_read_request=128,4096 --csv {}",
                                    (dir_ / "bw.csv").string()));
  ASSERT_EQ(s.status, 0) << s.err;
  const auto rows = data_lines(dir_ / "bw.csv");
  ASSERT_EQ(rows.size(), 4u);
  const Outcome n = run(fmt::format("ib_write_bw -n 200 -s 65536 --set pcie.max_read_request=4096 --csv {}",
                                    (dir_ / "hand.csv").string()));
  ASSERT_EQ(n.status, 0) << n.err;
  EXPECT_EQ(rows[3], "pcie.max_read_request=4096," + data_lines(dir_ / "hand.csv").at(0));
  // The plot's data of a bw sweep: size, BW average (Gb/s), message rate, the CSV's cells.
  const Outcome p = run(fmt::format("sweep ib_write_bw -n 200 -s 4K,64K --vary pcie.max_read_request=128,4096 --plot {}",
                                    (dir_ / "bw").string()));
  ASSERT_EQ(p.status, 0) << p.err;
  std::vector<std::string> expected, data;
  for (const auto& r : rows) {
    const auto cells = hcasim::util::parse_csv(r, "row").front();  // variant + perftest's 11 columns
    expected.push_back(fmt::format("{} {} {}", cells[4], cells[10], cells[11]));
  }
  std::istringstream dat(slurp(dir_ / "bw.dat"));
  for (std::string line; std::getline(dat, line);)
    if (!line.empty() && line[0] != '#') data.push_back(line);
  EXPECT_EQ(data, expected);
  EXPECT_EQ(p.out, s.out);  // the table does not depend on the outputs asked for
  const Outcome a = run(fmt::format("sweep ib_write_lat -a -n 100 --csv {}", (dir_ / "lat.csv").string()));
  ASSERT_EQ(a.status, 0) << a.err;
  const Outcome h = run(fmt::format("ib_write_lat -a -n 100 --csv {}", (dir_ / "lat-hand.csv").string()));
  ASSERT_EQ(h.status, 0) << h.err;
  const auto lat = data_lines(dir_ / "lat.csv"), lat_hand = data_lines(dir_ / "lat-hand.csv");
  ASSERT_EQ(lat.size(), 23u);
  ASSERT_EQ(lat_hand.size(), 23u);
  for (size_t i = 0; i < lat.size(); ++i) EXPECT_EQ(lat[i], "," + lat_hand[i]);
}

TEST_F(Sweep, PlotDataIsTheCsvAndTheReferenceIsDrawn) {
  const std::string reference = std::string(HCASIM_REFERENCE_DIR) + "/seed000/seed000_sdp_netperf_mlx4.csv";
  const Outcome s = run(fmt::format("sweep netperf -c -C -l 0.5 -- -m 1K,64K --vary sdp.zcopy_thresh=0,1 --csv {} "
                                    "--plot {} --reference {}",
                                    (dir_ / "s.csv").string(), (dir_ / "p").string(), reference));
  ASSERT_EQ(s.status, 0) << s.err;
  const std::string png = slurp(dir_ / "p.png"), svg = slurp(dir_ / "p.svg");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  // p.dat: a block per variant, each line size throughput sd_local sd_remote, the CSV's cells.
  std::map<std::string, std::vector<std::string>> csv;  // "variant size" -> cells
  const auto rows = data_lines(dir_ / "s.csv");
  ASSERT_EQ(rows.size(), 4u);
  const auto header = hcasim::util::parse_csv(header_line(dir_ / "s.csv"), "h").front();
  auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  std::vector<std::string> expected;  // the data lines p.dat must hold, block by block
  for (const auto& r : rows) {
    const auto cells = hcasim::util::parse_csv(r, "row").front();
    expected.push_back(fmt::format("{} {} {} {}", cells[col("send_size_bytes")], cells[col("throughput_mbps")],
                                   cells[col("sd_local_us_per_kb")], cells[col("sd_remote_us_per_kb")]));
  }
  std::istringstream dat(slurp(dir_ / "p.dat"));
  std::vector<std::string> data;
  std::string line;
  int blocks = 0;
  while (std::getline(dat, line)) {
    if (line.rfind("# index ", 0) == 0) ++blocks;
    if (!line.empty() && line[0] != '#') data.push_back(line);
  }
  EXPECT_EQ(blocks, 2);
  EXPECT_EQ(data, expected);
  // The reference: seed 000's T3 SDP -m 64K row (65536 B, 8323.20 Mbit/s, 1.020 and 1.074
  // us/KB) as written in the CSV, in the T3_m_flag SDP block.
  const std::string ref = slurp(dir_ / "p.ref.dat");
  const size_t block = ref.find("# index 4: measured T3_m_flag SDP\n");
  ASSERT_NE(block, std::string::npos) << ref;
  EXPECT_NE(ref.find("65536 8323.20 1.020 1.074\n", block), std::string::npos) << ref;
  // The script plots both files, on a log2 x axis.
  const std::string gp = slurp(dir_ / "p.gp");
  EXPECT_NE(gp.find("set logscale x 2"), std::string::npos);
  EXPECT_NE(gp.find("'p.ref.dat' index 4"), std::string::npos);
}

TEST_F(Sweep, BadInputIsOneLineAndWritesNothing) {
  const std::string outputs = fmt::format("--csv {} --plot {}", (dir_ / "s.csv").string(), (dir_ / "p").string());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sweep netperf -l 0.1 -- -m 64..", "hcasim: error: -m 64..: a range needs a start and an end (e.g. 64..4M)\n"},
      {"sweep netperf -l 0.1 -- -m 4M..64", "hcasim: error: -m 4M..64: the range's start 4M is above its end 64\n"},
      {"sweep netperf -l 0.1 -- -m 64 --vary pcie.no_such_key=1,2",
       "hcasim: error: --vary pcie.no_such_key: unknown platform parameter (platform connectx-ddr-pcie1x8)\n"},
      {"sweep netperf -l 0.1 -- -m 64 --vary platform=connectx-ddr-pcie1x8,no-such-host",
       "hcasim: error: --vary platform no-such-host: no such platform file or name (looked in "},
      {"sweep netperf -l 0.1 -- -m 64 --vary host.clock=2,100",
       "hcasim: error: --vary host.clock: 100 GHz is out of range (0.01..10) (platform connectx-ddr-pcie1x8)\n"},
      {"sweep netperf -l 0.1 -j 0 -- -m 64", "hcasim: error: -j: '0' must be 1..4096\n"},
      {"sweep ib_write_bw -s 64..", "hcasim: error: -s 64..: a range needs a start and an end (e.g. 64..4M)\n"},
      {"sweep ib_write_lat -s 2,4 --vary hca.blueflame=on,off --set hca.blueflame=off",
       "hcasim: error: --vary hca.blueflame: also given as --set hca.blueflame=off; give one of them\n"},
      {"sweep netperf -l 0.1", "hcasim: error: -m: give the sizes as -- -m LIST or A..B (e.g. -- -m 64..4M)\n"},
  };
  for (const auto& [args, error] : cases) {
    const Outcome r = run(args + " " + outputs);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err.rfind(error, 0), 0u) << args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_TRUE(written().empty()) << args;
  }
  // Outputs that would overwrite each other, and a reference with no plot to draw it on.
  const std::string png = (dir_ / "p.png").string(), prefix = (dir_ / "p").string();
  const std::vector<std::pair<std::string, std::string>> outputs_cases = {
      {"sweep netperf -l 0.1 -- -m 64 --csv " + png + " --plot " + prefix,
       "hcasim: error: --csv " + png + ": --plot " + prefix + " writes that file too\n"},
      {"sweep netperf -l 0.1 -- -m 64 --csv " + (dir_ / "s.csv").string() + " --reference " +
           std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt",
       "hcasim: error: --reference: the measured points go on the plot: give --plot PREFIX too\n"},
  };
  for (const auto& [args, error] : outputs_cases) {
    const Outcome r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err, error) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_TRUE(written().empty()) << args;
  }
}

TEST_F(Sweep, CompareOfSeed000RunsGivesRunsErrors) {
  // validation/seed000/runs.txt holds seed 000's T2 and T3 runs as pasted, in the order of the
  // scenario's T2 and T3 points. Both at -l 1 instead of the typed 60 s (and the V tables' 30 s),
  // the same text otherwise: compare and run must simulate the same commands and print the same
  // figures and errors.
  const std::string source = fs::path(HCASIM_REFERENCE_DIR).parent_path().string();
  const std::regex length(R"(-l (60|30)\b)");
  std::ofstream(dir_ / "seed000.toml") << std::regex_replace(slurp(source + "/scenarios/seed000.toml"), length, "-l 1");
  std::ofstream(dir_ / "runs.txt") << std::regex_replace(slurp(source + "/validation/seed000/runs.txt"), length, "-l 1");
  const Outcome r = run(fmt::format("run {} --csv {}", (dir_ / "seed000.toml").string(), (dir_ / "run.csv").string()));
  ASSERT_LE(r.status, 1) << r.err;
  const Outcome c = run(fmt::format("compare {} --csv {}", (dir_ / "runs.txt").string(), (dir_ / "compare.csv").string()));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("compared: 12 points, none gated\n"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("\nruns.txt:6       sdp.zcopy_thresh=0 -r 64K "), std::string::npos) << c.out;
  const auto a = hcasim::util::parse_csv(slurp(dir_ / "run.csv"), "run.csv");
  const auto b = hcasim::util::parse_csv(slurp(dir_ / "compare.csv"), "compare.csv");
  ASSERT_EQ(a[0], b[0]);  // the same header
  ASSERT_EQ(b.size(), 13u);
  std::vector<std::vector<std::string>> t2_t3;
  for (const auto& row : a)
    if (row[1] == "T2_r_flag" || row[1] == "T3_m_flag") t2_t3.push_back(row);
  ASSERT_EQ(t2_t3.size(), 12u);
  for (size_t k = 0; k < 12; ++k) {
    EXPECT_EQ(t2_t3[k][3], b[k + 1][3]) << "size flag, run " << k;
    EXPECT_EQ(b[k + 1][5], "false");  // not gated
    for (size_t col = 6; col < a[0].size(); ++col) {
      const std::string& name = a[0][col];
      if (name.rfind("meas_", 0) == 0 || name.rfind("sim_", 0) == 0 || name.rfind("err_", 0) == 0) {
        EXPECT_EQ(t2_t3[k][col], b[k + 1][col]) << name << ", run " << k;
      }
    }
  }
  // A real comparison: T3 SDP -m 64K measured 8323.20 Mbit/s, and the error is (simulated -
  // measured) / measured in %.
  const auto& t3 = b[7];
  EXPECT_EQ(t3[3], "-m 64K");
  EXPECT_EQ(t3[6], "8323.2");
  EXPECT_NEAR(std::stod(t3[8]), (std::stod(t3[7]) - 8323.2) / 8323.2 * 100.0, 1e-3);
}

TEST_F(Sweep, ProgressBarOnlyOnATerminal) {
  // stderr a terminal: run_children's bar "[####....]  D/4 LABEL", redrawn in place, erased at
  // the end; the table still on stdout alone.
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  const std::string out = (dir_ / "table").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, slave, 2);
  posix_spawn_file_actions_addclose(&fa, master);
  std::vector<std::string> args{HCASIM_BINARY, "sweep", "netperf", "-l", "0.2", "--", "-m", "1K..8K", "-j", "1"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(slave);
  std::string seen;
  while (true) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 30000) <= 0) break;
    char buf[512];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // the sweep closed the terminal: it ended
    seen.append(buf, static_cast<size_t>(n));
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(master);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  EXPECT_NE(seen.find("] "), std::string::npos) << seen;
  EXPECT_NE(seen.find("4/4 -m 8K"), std::string::npos) << seen;
  EXPECT_NE(seen.find("\r\033[K"), std::string::npos) << seen;
  EXPECT_EQ(count_lines(slurp(out)), 3 + 4);
}

TEST_F(Sweep, CompareRefusesAMeasuredValueThatIsNotPositive) {
  // hcasim's own netperf output pasted with its throughput negated: errors relative to a
  // measurement of -X are meaningless, so compare names the row and stops.
  const Outcome np = run("netperf -l 0.05 -- -m 64K");
  ASSERT_EQ(np.status, 0) << np.err;
  std::vector<std::string> lines;
  std::istringstream in(np.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_FALSE(lines.empty());
  std::istringstream row(lines.back());
  std::vector<std::string> fields;
  for (std::string f; row >> f;) fields.push_back(f);
  ASSERT_EQ(fields.size(), 5u) << lines.back();  // recv socket, send socket, message, elapsed, throughput
  lines.back() = fmt::format("{} {} {} {} -{}", fields[0], fields[1], fields[2], fields[3], fields[4]);
  std::ofstream file(dir_ / "neg.txt");
  file << "$ netperf -l 0.05 -- -m 64K\n";
  for (const auto& l : lines) file << l << "\n";
  file.close();
  const auto row_line = static_cast<int>(lines.size()) + 1;  // the command is line 1
  const Outcome c = run("compare " + (dir_ / "neg.txt").string());
  EXPECT_EQ(c.status, 2);
  EXPECT_EQ(c.out, "");
  const std::string prefix = fmt::format("hcasim: error: {}:{}: measured throughput is -", (dir_ / "neg.txt").string(), row_line);
  EXPECT_EQ(c.err.rfind(prefix, 0), 0u) << c.err;
  EXPECT_TRUE(c.err.ends_with(": compare needs a value > 0\n")) << c.err;
  EXPECT_EQ(count_lines(c.err), 1) << c.err;
}

TEST_F(Sweep, CompareReadsPingpongRuns) {
  // hcasim's own ibv_rc_pingpong output pasted after its command: compare simulates the same
  // command, so the simulated usec/iter is `hcasim ibv_rc_pingpong --csv`'s and the measured one
  // its printed %.2f (rc_pingpong.c: usec / iters). The error is at most the printed rounding,
  // 0.005 us over usec/iter; Mbit/sec = 4096 x 100 x 2 x 8 / (usec/iter x 100) likewise.
  const Outcome pp = run(fmt::format("ibv_rc_pingpong -n 100 -s 4096 --csv {} server1", (dir_ / "pp.csv").string()));
  ASSERT_EQ(pp.status, 0) << pp.err;
  std::ofstream(dir_ / "pp.txt") << "$ ibv_rc_pingpong -n 100 -s 4096 server1\n" << pp.out;
  const Outcome c = run(fmt::format("compare {} --csv {}", (dir_ / "pp.txt").string(), (dir_ / "c.csv").string()));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("rdma-core pingpong: usec/iter (one round trip), Mbit/sec"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("compared: 1 points, none gated\n"), std::string::npos) << c.out;
  const auto sim = hcasim::util::parse_csv(slurp(dir_ / "pp.csv"), "pp.csv");
  const auto cmp = hcasim::util::parse_csv(slurp(dir_ / "c.csv"), "c.csv");
  ASSERT_EQ(cmp.size(), 2u);
  auto col = [](const std::vector<std::string>& header, const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  EXPECT_EQ(cmp[1][col(cmp[0], "pp_bytes")], "4096");
  EXPECT_EQ(cmp[1][col(cmp[0], "sim_usec_per_iter")], sim[1][col(sim[0], "usec_per_iter")]);
  EXPECT_EQ(cmp[1][col(cmp[0], "sim_mbit_s")], sim[1][col(sim[0], "mbit_s")]);
  const double usec = std::stod(sim[1][col(sim[0], "usec_per_iter")]);
  EXPECT_NEAR(std::stod(cmp[1][col(cmp[0], "meas_usec_per_iter")]), std::round(usec * 100) / 100, 1e-9);
  EXPECT_LT(std::fabs(std::stod(cmp[1][col(cmp[0], "err_usec_per_iter_pct")])), 0.005 / usec * 100 + 1e-4);
  const double mbit = 4096.0 * 100 * 2 * 8 / (usec * 100);
  EXPECT_NEAR(std::stod(cmp[1][col(cmp[0], "sim_mbit_s")]), mbit, mbit * 1e-9);
  // The JSON report: one point of kind "pingpong", its figures as in the CSV.
  const Outcome j = run(fmt::format("compare {} --json", (dir_ / "pp.txt").string()));
  ASSERT_EQ(j.status, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  const auto& point = doc["run_files"][0]["points"][0];
  EXPECT_EQ(point["kind"], "pingpong");
  EXPECT_EQ(point["bytes"], 4096);
  EXPECT_DOUBLE_EQ(point["usec_per_iter"]["simulated"].get<double>(), usec);
  EXPECT_EQ(doc["run_files"][0]["tables"]["pingpong"][0]["points"], 1);
}

TEST_F(Sweep, CompareReadsBandwidthRuns) {
  // A run file holding hcasim's own ib_write_bw output: compare simulates the same command, so
  // the simulated BW average is `hcasim ib_write_bw --csv`'s and the measured one is its printed
  // MB/sec (2 decimals, 2^20 B) in Gb/s: errors within the printed rounding, 0.005 MB/s.
  const Outcome bw = run(fmt::format("ib_write_bw -n 200 -s 4096 --csv {}", (dir_ / "bw.csv").string()));
  ASSERT_EQ(bw.status, 0) << bw.err;
  std::ofstream(dir_ / "runs.txt") << "$ ib_write_bw -n 200 -s 4096\n" << bw.out;
  const Outcome c = run(fmt::format("compare {} --csv {}", (dir_ / "runs.txt").string(), (dir_ / "c.csv").string()));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("perftest bandwidth: BW average in Gb/s"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("compared: 1 points, none gated\n"), std::string::npos) << c.out;
  const auto sim = hcasim::util::parse_csv(slurp(dir_ / "bw.csv"), "bw.csv");
  const auto cmp = hcasim::util::parse_csv(slurp(dir_ / "c.csv"), "c.csv");
  ASSERT_EQ(cmp.size(), 2u);
  auto col = [](const std::vector<std::string>& header, const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  EXPECT_EQ(cmp[1][col(cmp[0], "bw_bytes")], "4096");
  EXPECT_EQ(cmp[1][col(cmp[0], "sim_bw_avg_gbit_s")], sim[1][col(sim[0], "bw_avg_gbit_s")]);
  const double meas = std::stod(cmp[1][col(cmp[0], "meas_bw_avg_gbit_s")]);
  const double mib_s = std::stod(sim[1][col(sim[0], "bw_avg_mib_s")]);
  EXPECT_NEAR(meas, std::round(mib_s * 100) / 100 * 1048576 * 8 / 1e9, 1e-9);
  EXPECT_LT(std::fabs(std::stod(cmp[1][col(cmp[0], "err_bw_avg_pct")])), 0.005 / mib_s * 100 + 1e-4);
}

namespace {

/// The blank-separated fields of the last non-blank line of `text` that has `n` of them.
std::vector<std::string> last_row_of(const std::string& text, size_t n) {
  std::istringstream in(text);
  std::vector<std::string> found;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> f;
    for (std::string w; words >> w;) f.push_back(w);
    if (f.size() == n) found = f;
  }
  return found;
}

/// The column `name` of `header`.
size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  EXPECT_NE(it, header.end()) << name;
  return static_cast<size_t>(it - header.begin());
}

}  // namespace

TEST_F(Sweep, ScenarioPointsOfBandwidthRrAndPingpongAreGated) {
  // A scenario whose references are hcasim's own figures x 1.05: every error is 1 / 1.05 - 1 =
  // -4.76 %. BW average and the TCP_RR rate and service demands are within throughput and
  // service_demand (10 %); usec/iter is beyond usec_per_iter (3 %): that point alone FAILs.
  const Outcome bw = run(fmt::format("ib_write_bw -s 65536 -n 200 --csv {}", (dir_ / "bw.csv").string()));
  const Outcome rr = run(fmt::format("netperf -t TCP_RR -l 0.1 -c -C --csv {}", (dir_ / "rr.csv").string()));
  const Outcome pp = run(fmt::format("ibv_rc_pingpong -n 100 --csv {} server1", (dir_ / "pp.csv").string()));
  ASSERT_EQ(bw.status + rr.status + pp.status, 0) << bw.err << rr.err << pp.err;
  const auto cell = [&](const char* file, const std::string& name) {
    const auto rows = hcasim::util::parse_csv(slurp(dir_ / file), file);
    return std::stod(rows[1][column(rows[0], name)]) * 1.05;
  };
  std::ofstream(dir_ / "ref-bw.csv") << "case,bytes,bw_avg_gbit_s,msg_rate_mpps\n"
                                     << fmt::format("a,65536,{},{}\n", cell("bw.csv", "bw_avg_gbit_s"),
                                                    cell("bw.csv", "msg_rate_mpps"));
  std::ofstream(dir_ / "ref-rr.csv") << "case,transaction_rate_per_s,sd_local_us_per_tr,sd_remote_us_per_tr\n"
                                     << fmt::format("a,{},{},{}\n", cell("rr.csv", "transaction_rate_per_s"),
                                                    cell("rr.csv", "sd_local_us_per_kb"),
                                                    cell("rr.csv", "sd_remote_us_per_kb"));
  std::ofstream(dir_ / "ref-pp.csv") << "case,usec_per_iter,mbit_s\n"
                                     << fmt::format("a,{},{}\n", cell("pp.csv", "usec_per_iter"),
                                                    cell("pp.csv", "mbit_s"));
  const auto point = [&](const char* table, const char* command, const char* ref) {
    return fmt::format("[[point]]\ntable = \"{}\"\nmode = \"-\"\ncommand = \"{}\"\n"
                       "reference = {{ file = \"{}\", match = {{ case = \"a\" }} }}\n",
                       table, command, (dir_ / ref).string());
  };
  std::ofstream(dir_ / "s.toml") << "name = \"kinds\"\nplatform = \"connectx-ddr-pcie1x8\"\n"
                                 << "[tolerance]\nthroughput = 0.10\nservice_demand = 0.10\nusec_per_iter = 0.03\n"
                                 << point("BW", "ib_write_bw -s 65536 -n 200", "ref-bw.csv")
                                 << point("RR", "netperf -t TCP_RR -l 0.1 -c -C", "ref-rr.csv")
                                 << point("PP", "ibv_rc_pingpong -n 100 server1", "ref-pp.csv");
  const Outcome r = run(fmt::format("run {} --csv {}", (dir_ / "s.toml").string(), (dir_ / "r.csv").string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("tolerance: throughput 10%, service demand 10%, usec/iter 3%\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL: 1 of 3 gated points out of tolerance:\n  PP - 4096 B (usec/iter -4.8% beyond 3%)\n"),
            std::string::npos)
      << r.out;
  const auto csv = hcasim::util::parse_csv(slurp(dir_ / "r.csv"), "r.csv");
  ASSERT_EQ(csv.size(), 4u);
  const std::vector<std::pair<size_t, const char*>> errors = {
      {1, "err_bw_avg_pct"}, {2, "err_transaction_rate_pct"}, {2, "err_sd_local_us_per_tr_pct"},
      {2, "err_sd_remote_us_per_tr_pct"}, {3, "err_usec_per_iter_pct"}, {3, "err_mbit_s_pct"}};
  for (const auto& [row, name] : errors) EXPECT_NEAR(std::stod(csv[row][column(csv[0], name)]), -4.7619, 1e-3) << name;
  EXPECT_EQ(csv[1][column(csv[0], "status")], "ok");
  EXPECT_EQ(csv[2][column(csv[0], "status")], "ok");
  EXPECT_EQ(csv[3][column(csv[0], "status")], "FAIL");
  // validate sums each kind's table up in its own unit: relative, 4.8 % median and max.
  const Outcome v = run(fmt::format("validate {} --json", (dir_ / "s.toml").string()));
  EXPECT_EQ(v.status, 1) << v.err;
  const auto doc = nlohmann::json::parse(v.out);
  std::map<std::string, std::string> kinds;
  for (const auto& t : doc["summary"]["tables"]) {
    kinds[t["table"].get<std::string>()] = t["kind"].get<std::string>();
    EXPECT_NEAR(t["metrics"][0]["max_abs_error_pct"].get<double>(), 4.7619, 1e-3) << t.dump();
  }
  EXPECT_EQ(kinds, (std::map<std::string, std::string>{{"BW", "bandwidth"}, {"RR", "netperf_rr"}, {"PP", "pingpong"}}));
}

TEST_F(Sweep, CompareReadsNetperfRrRuns) {
  // Two TCP_RR runs pasted as netperf 2.4.3 prints them (send_tcp_rr, -P 0: the row and the
  // remote socket sizes): hcasim's own output of the first command, and a row typed by hand for
  // the second. compare simulates each command as typed, so its simulated rate is what `hcasim
  // netperf` prints for the same command, and the error is (simulated - measured) / measured.
  const std::string own = "netperf -t TCP_RR -c -C -P 0 -l 0.05 -- -r 64,1024";
  const Outcome np = run(own);
  ASSERT_EQ(np.status, 0) << np.err;
  const std::vector<std::string> printed = last_row_of(np.out, 10);  // lss lsr req rsp elapsed rate util util sd sd
  ASSERT_EQ(printed.size(), 10u) << np.out;
  EXPECT_EQ(printed[2], "64");
  EXPECT_EQ(printed[3], "1024");
  const std::string plain = "netperf -t TCP_RR -P 0 -l 0.05";
  const Outcome np2 = run(plain);
  ASSERT_EQ(np2.status, 0) << np2.err;
  const std::vector<std::string> printed2 = last_row_of(np2.out, 6);
  ASSERT_EQ(printed2.size(), 6u) << np2.out;
  std::ofstream(dir_ / "runs.txt") << "$ " << own << "\n"
                                   << np.out << "$ " << plain << "\n"
                                   << "16384  87380  1        1       0.05     50000.00   \n"
                                   << "16384  87380 \n";
  const Outcome c = run(fmt::format("compare {} --csv {}", (dir_ / "runs.txt").string(), (dir_ / "c.csv").string()));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("netperf TCP_RR: transaction rate in transactions/s, service demand in us/Tr"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("transactions/s"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("throughput, Mbit/s"), std::string::npos) << c.out;  // no stream run
  EXPECT_NE(c.out.find("compared: 2 points, none gated\n"), std::string::npos) << c.out;
  // The report's row: measured and simulated rate, both what hcasim netperf printed.
  EXPECT_NE(c.out.find(fmt::format("runs.txt:1       -       -r 64,1024 {:>10} {:>10} ", printed[5], printed[5])),
            std::string::npos)
      << c.out;
  const auto cmp = hcasim::util::parse_csv(slurp(dir_ / "c.csv"), "c.csv");
  ASSERT_EQ(cmp.size(), 3u);
  const auto& h = cmp[0];
  const auto& a = cmp[1];
  EXPECT_EQ(a[column(h, "command")], own);
  EXPECT_EQ(std::stod(a[column(h, "meas_transaction_rate_per_s")]), std::stod(printed[5]));
  EXPECT_EQ(fmt::format("{:.2f}", std::stod(a[column(h, "sim_transaction_rate_per_s")])), printed[5]);
  // The service demands in us/Tr and the utilisations, printed with 3 and 2 decimals.
  EXPECT_NEAR(std::stod(a[column(h, "sim_sd_local_us_per_tr")]), std::stod(printed[8]), 0.0005 + 1e-9);
  EXPECT_NEAR(std::stod(a[column(h, "sim_sd_remote_us_per_tr")]), std::stod(printed[9]), 0.0005 + 1e-9);
  EXPECT_NEAR(std::stod(a[column(h, "sim_util_local_pct")]), std::stod(printed[6]), 0.005 + 1e-9);
  EXPECT_EQ(std::stod(a[column(h, "meas_sd_local_us_per_tr")]), std::stod(printed[8]));
  // A TCP_RR row leaves the stream's columns empty.
  EXPECT_EQ(a[column(h, "meas_throughput_mbps")], "");
  EXPECT_EQ(a[column(h, "sim_throughput_mbps")], "");
  EXPECT_EQ(a[column(h, "meas_sd_local")], "");
  EXPECT_EQ(a[column(h, "sim_sd_local")], "");
  // The typed row: measured 50000, the simulation as `hcasim netperf` printed it.
  const auto& b = cmp[2];
  EXPECT_EQ(b[column(h, "meas_transaction_rate_per_s")], "50000");
  const double sim = std::stod(b[column(h, "sim_transaction_rate_per_s")]);
  EXPECT_EQ(fmt::format("{:.2f}", sim), printed2[5]);
  EXPECT_NEAR(std::stod(b[column(h, "err_transaction_rate_pct")]), (sim - 50000) / 50000 * 100, 1e-4);
  EXPECT_EQ(b[column(h, "meas_util_local_pct")], "");  // no -c
  // --json: kind netperf_rr and the same figures.
  const Outcome j = run(fmt::format("compare {} --json", (dir_ / "runs.txt").string()));
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_NE(j.out.find("\"kind\": \"netperf_rr\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"transaction_rate_per_s\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"service_demand_local_us_per_tr\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"netperf_rr\": ["), std::string::npos) << j.out;
}

TEST_F(Sweep, CompareReadsNetperfMaertsRuns) {
  // hcasim's own TCP_MAERTS output pasted (-P 1 with its titles, and -P 0 whose row ends in a
  // line of one blank with no newline, the next prompt after it): compare simulates the same
  // commands, so the simulated throughput is what `hcasim netperf` printed: equal to the printed
  // 2 decimals up to their rounding (netperf divides by its elapsed time as a C float, the CSV
  // by the double).
  const std::string titled = "netperf -t TCP_MAERTS -c -C -l 0.05 -- -m 64K";
  const std::string rows = "netperf -t TCP_MAERTS -P 0 -l 0.05 -- -m 16K";
  const Outcome a = run(titled);
  const Outcome b = run(rows);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(b.out.back(), ' ');  // tput_fmt_1's "   \n %s"
  const std::vector<std::string> pa = last_row_of(a.out, 9);
  const std::vector<std::string> pb = last_row_of(b.out, 5);
  ASSERT_EQ(pa.size(), 9u) << a.out;
  ASSERT_EQ(pb.size(), 5u) << b.out;
  EXPECT_EQ(pa[2], "65536");
  EXPECT_EQ(pb[2], "16384");
  std::ofstream(dir_ / "runs.txt") << "$ " << titled << "\n" << a.out << "$ " << rows << "\n" << b.out << "$ date\n";
  const Outcome c = run(fmt::format("compare {} --csv {}", (dir_ / "runs.txt").string(), (dir_ / "c.csv").string()));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("throughput, Mbit/s"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("SD local, us/KB"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("netperf TCP_RR"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("compared: 2 points, none gated\n"), std::string::npos) << c.out;
  const auto cmp = hcasim::util::parse_csv(slurp(dir_ / "c.csv"), "c.csv");
  ASSERT_EQ(cmp.size(), 3u);
  const auto& h = cmp[0];
  EXPECT_EQ(std::find(h.begin(), h.end(), "meas_transaction_rate_per_s"), h.end());  // no TCP_RR run
  for (const auto& [row, printed] : {std::pair{cmp[1], pa}, std::pair{cmp[2], pb}}) {
    SCOPED_TRACE(row[column(h, "command")]);
    EXPECT_EQ(row[column(h, "meas_throughput_mbps")], fmt::format("{}", std::stod(printed[4])));
    EXPECT_NEAR(std::stod(row[column(h, "sim_throughput_mbps")]), std::stod(printed[4]), 0.005 + 1e-6);
  }
  EXPECT_NEAR(std::stod(cmp[1][column(h, "sim_sd_local")]), std::stod(pa[7]), 0.0005 + 1e-6);
  EXPECT_NEAR(std::stod(cmp[1][column(h, "sim_util_remote_pct")]), std::stod(pa[6]), 0.005 + 1e-6);
  EXPECT_EQ(cmp[2][column(h, "meas_sd_local")], "");  // no -c
}

TEST_F(Sweep, CompareReadsEveryPerftestTool) {
  // A run file of hcasim's own output of the six perftest tools compare read no run of before
  // (200 iterations each): each run is simulated as typed, so the simulated figure is the tool's
  // own --csv and the error is the printed rounding only: t_typical printed to 0.01 us (an
  // error within 0.005 us), BW average to 0.01 MB/s (relative error within 0.005 / MB/s).
  struct Tool {
    std::string command;
    bool bw;
  };
  const std::vector<Tool> tools = {{"ib_send_lat -n 200 -s 64", false},  {"ib_read_lat -n 200 -s 64", false},
                                   {"ib_atomic_lat -n 200", false},      {"ib_send_bw -n 200 -s 4096", true},
                                   {"ib_read_bw -n 200 -s 4096", true}, {"ib_atomic_bw -n 200", true}};
  std::ofstream runs(dir_ / "runs.txt");
  std::vector<std::vector<std::vector<std::string>>> own;  // each tool's --csv
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string csv = (dir_ / fmt::format("own{}.csv", i)).string();
    const Outcome t = run(fmt::format("{} --csv {}", tools[i].command, csv));
    ASSERT_EQ(t.status, 0) << tools[i].command << ": " << t.err;
    runs << "$ " << tools[i].command << "\n" << t.out;
    own.push_back(hcasim::util::parse_csv(slurp(csv), csv));
  }
  runs.close();
  const Outcome c = run(fmt::format("compare {} --csv {}", (dir_ / "runs.txt").string(), (dir_ / "c.csv").string()));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("compared: 6 points, none gated\n"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("perftest latency in us: half the round trip (ib_send_lat), the whole round trip "
                       "(ib_read_lat, ib_atomic_lat); error = simulated - measured\n"),
            std::string::npos)
      << c.out;
  const auto cmp = hcasim::util::parse_csv(slurp(dir_ / "c.csv"), "c.csv");
  ASSERT_EQ(cmp.size(), 7u);
  auto col = [](const std::vector<std::string>& header, const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return static_cast<size_t>(it - header.begin());
  };
  for (size_t i = 0; i < tools.size(); ++i) {
    SCOPED_TRACE(tools[i].command);
    const auto& row = cmp[i + 1];
    const auto& sim = own[i];
    ASSERT_EQ(sim.size(), 2u);
    EXPECT_EQ(row[col(cmp[0], "command")], tools[i].command);
    if (tools[i].bw) {
      EXPECT_EQ(row[col(cmp[0], "bw_bytes")], sim[1][col(sim[0], "bytes")]);
      EXPECT_EQ(row[col(cmp[0], "sim_bw_avg_gbit_s")], sim[1][col(sim[0], "bw_avg_gbit_s")]);
      const double mib_s = std::stod(sim[1][col(sim[0], "bw_avg_mib_s")]);
      EXPECT_NEAR(std::stod(row[col(cmp[0], "meas_bw_avg_gbit_s")]), std::round(mib_s * 100) / 100 * 1048576 * 8 / 1e9,
                  1e-9);
      EXPECT_LT(std::fabs(std::stod(row[col(cmp[0], "err_bw_avg_pct")])), 0.005 / mib_s * 100 + 1e-4);
    } else {
      EXPECT_EQ(row[col(cmp[0], "bytes")], sim[1][col(sim[0], "bytes")]);
      EXPECT_EQ(row[col(cmp[0], "sim_t_typical_us")], sim[1][col(sim[0], "t_typical_us")]);
      const double t = std::stod(sim[1][col(sim[0], "t_typical_us")]);
      EXPECT_DOUBLE_EQ(std::stod(row[col(cmp[0], "meas_t_typical_us")]), std::round(t * 100) / 100);
      EXPECT_LE(std::fabs(std::stod(row[col(cmp[0], "err_t_typical_us")])), 0.005 + 1e-9);
    }
  }
  // The atomic tests move 8 B.
  EXPECT_EQ(cmp[3][col(cmp[0], "bytes")], "8");
  EXPECT_EQ(cmp[6][col(cmp[0], "bw_bytes")], "8");
}

TEST_F(Sweep, ListedCommandsRunByGnuParallelCollectToTheSameReport) {
  // --list-commands DIR | parallel, then --collect DIR: the same report and CSV, byte for byte,
  // as the run or sweep that ran its points itself. GNU parallel is installed by
  // scripts/install-deps.sh; without it the pipeline fails, and so does the test.
  const std::string source = fs::path(HCASIM_REFERENCE_DIR).parent_path().string();
  const std::regex length(R"(-l (60|30)\b)");
  const fs::path scenario = dir_ / "seed000.toml";
  std::ofstream(scenario) << std::regex_replace(slurp(source + "/scenarios/seed000.toml"), length, "-l 1");
  const std::string hcasim = HCASIM_BINARY;
  const fs::path listed = dir_ / "listed";
  const std::string pipeline = fmt::format("{} run {} --list-commands {} | parallel --halt now,fail=1 -j 2 > /dev/null 2>&1",
                                           hcasim, scenario.string(), listed.string());
  ASSERT_EQ(std::system(pipeline.c_str()), 0) << pipeline;
  const auto commands = slurp(listed / "commands.txt");
  // 36 points, 18 distinct commands: T3 repeats T1, and the three netperf versions type one.
  EXPECT_EQ(count_lines(commands), 18) << commands;
  EXPECT_NE(commands.find(" --csv " + (listed / "run-0001.csv").string() + "\n"), std::string::npos) << commands;
  const Outcome collected = run(fmt::format("run {} --collect {} --csv {}", scenario.string(), listed.string(),
                                            (dir_ / "collected.csv").string()));
  const Outcome local = run(fmt::format("run {} --csv {}", scenario.string(), (dir_ / "local.csv").string()));
  EXPECT_EQ(collected.status, local.status) << collected.err;
  EXPECT_EQ(collected.out, local.out);
  EXPECT_EQ(slurp(dir_ / "collected.csv"), slurp(dir_ / "local.csv"));
  EXPECT_NE(local.out.find("T3_m_flag        BZCOPY  -m 1M "), std::string::npos) << local.out;

  // A sweep the same way.
  const std::string sweep = "sweep netperf -c -C -l 0.5 -- -m 1K..8K --vary sdp.zcopy_thresh=0,1";
  const fs::path points = dir_ / "points";
  const std::string sweep_pipeline = fmt::format("{} {} --list-commands {} | parallel -j 2 > /dev/null 2>&1", hcasim,
                                                 sweep, points.string());
  ASSERT_EQ(std::system(sweep_pipeline.c_str()), 0) << sweep_pipeline;
  const Outcome s_collected = run(fmt::format("{} --collect {} --csv {}", sweep, points.string(), (dir_ / "sc.csv").string()));
  const Outcome s_local = run(fmt::format("{} --csv {}", sweep, (dir_ / "sl.csv").string()));
  ASSERT_EQ(s_collected.status, 0) << s_collected.err;
  EXPECT_EQ(s_collected.out, s_local.out);
  EXPECT_EQ(slurp(dir_ / "sc.csv"), slurp(dir_ / "sl.csv"));
  EXPECT_EQ(count_lines(slurp(dir_ / "sc.csv")), 1 + 8);

  // Collecting for another listing, or with a point's CSV missing: one line, nothing written.
  const Outcome other = run(fmt::format("sweep netperf -c -C -l 0.5 -- -m 1K..16K --collect {} --csv {}", points.string(),
                                        (dir_ / "x.csv").string()));
  EXPECT_EQ(other.status, 2);
  EXPECT_EQ(other.err, fmt::format("hcasim: error: --collect {}: its commands.txt is not this listing (listed for "
                                   "another scenario, sweep or option, or another hcasim?)\n",
                                   points.string()));
  fs::remove(points / "run-0003.csv");
  const Outcome missing = run(fmt::format("{} --collect {} --csv {}", sweep, points.string(), (dir_ / "x.csv").string()));
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, fmt::format("hcasim: error: --collect {0}: run 3 (-m 4K sdp.zcopy_thresh=0): no "
                                     "{0}/run-0003.csv: was its command run?\n",
                                     points.string()));
  EXPECT_FALSE(fs::exists(dir_ / "x.csv"));
  // A point's CSV that is not one: the error names that file.
  {
    std::ofstream(points / "run-0003.csv") << "garbage,1,2\n";
  }
  const Outcome garbage = run(fmt::format("{} --collect {} --csv {}", sweep, points.string(), (dir_ / "x.csv").string()));
  EXPECT_EQ(garbage.status, 2);
  EXPECT_NE(garbage.err.find(fmt::format("{}/run-0003.csv", points.string())), std::string::npos) << garbage.err;
  EXPECT_EQ(garbage.err.find("-m 4K sdp.zcopy_thresh=0 CSV"), std::string::npos) << garbage.err;
  EXPECT_FALSE(fs::exists(dir_ / "x.csv"));
}
