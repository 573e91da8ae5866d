// End-to-end checks of build/hcasim as a user runs it: determinism, bad input, real-byte data
// verification. Each test starts the binary in a child process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {
struct Outcome {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hcasim-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Outcome run(const std::string& args) {
    const std::string cmd = std::string(HCASIM_BINARY) + " " + args + " > " + (dir_ / "out").string() + " 2> " +
                            (dir_ / "err").string();
    const int rc = std::system(cmd.c_str());
    Outcome r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = slurp(dir_ / "out");
    r.err = slurp(dir_ / "err");
    return r;
  }
  fs::path dir_;
};
}  // namespace

TEST_F(Cli, SameCommandTwiceGivesIdenticalOutputAndCsv) {
  const std::string args = "netperf -c -C -P 1 -l 0.2 --set sdp.zcopy_thresh=0 -- -m 64K --csv ";
  Outcome a = run(args + (dir_ / "a.csv").string());
  Outcome b = run(args + (dir_ / "b.csv").string());
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(slurp(dir_ / "a.csv"), slurp(dir_ / "b.csv"));
  EXPECT_NE(a.out.find("TCP STREAM TEST"), std::string::npos) << a.out;
}

TEST_F(Cli, VerifyDataMovesAndChecksRealBytes) {
  Outcome r = run("netperf -P 0 -l 0.01 --verify-data --set sdp.zcopy_thresh=1 -- -m 100000");
  EXPECT_EQ(r.status, 0) << r.err;
  Outcome s = run("netperf -P 0 -l 0.01 --verify-data --set sdp.zcopy_thresh=0 -- -m 3000");
  EXPECT_EQ(s.status, 0) << s.err;
}

TEST_F(Cli, BadInputIsOneLineExitTwoAndNoCsv) {
  const fs::path csv = dir_ / "never.csv";
  const std::string tail = " --csv " + csv.string();
  struct Case {
    std::string args, needle;
  };
  const Case cases[] = {
      {"netperf -Z", "-Z"},
      {"netperf -l 1 -- -m 12Q", "-m"},
      {"netperf --set foo.bar=1", "foo.bar"},
      {"netperf --set pcie.max_payload=100", "pcie.max_payload"},
      {"netperf --platform /nonexistent/p.toml", "/nonexistent/p.toml"},
      {"netperf -T 99,0 -l 0.01", "-T"},
  };
  for (const auto& c : cases) {
    Outcome r = run(c.args + tail);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(csv)) << c.args;
  }
}

TEST_F(Cli, MalformedPlatformFileNamesFileAndLine) {
  const fs::path p = dir_ / "bad.toml";
  std::ofstream(p) << "[pcie]\ngen = { value = 1, unit = \"\" }\n";
  Outcome r = run("netperf -l 0.01 --platform " + p.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(p.string() + ":2"), std::string::npos) << r.err;
}

// perftest tools: the same command and seed give the same report, byte for byte; another seed
// moves the noise (t_max), not the deterministic part (t_min of 2 B BlueFlame).
TEST_F(Cli, IbWriteLatIsDeterministicForAGivenSeed) {
  const std::string args = "ib_write_lat --platform connectx3-pcie3x8 -d mlx4_0 -F -s 2 -n 5000 --csv ";
  Outcome a = run(args + (dir_ / "a.csv").string());
  Outcome b = run(args + (dir_ / "b.csv").string());
  Outcome c = run(args + (dir_ / "c.csv").string() + " --seed 9");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(slurp(dir_ / "a.csv"), slurp(dir_ / "b.csv"));
  EXPECT_NE(slurp(dir_ / "a.csv"), slurp(dir_ / "c.csv"));
  // The classic five columns, as the seed prints them.
  EXPECT_NE(a.out.find(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"), std::string::npos)
      << a.out;
}

TEST_F(Cli, PerftestBadInputIsOneLineAndStatus2) {
  for (const std::string args :
       {"ib_write_lat -s 0", "ib_write_lat -s abc", "ib_write_lat -n 3", "ib_write_lat -I 5000", "ib_write_lat -b",
        "ib_write_lat -q 2", "ib_write_bw -D 5", "ib_send_bw -c UD", "ib_write_lat --set hca.blueflame=maybe",
        "ib_write_lat --set host.write_combining=2", "ib_write_lat --platform nosuch", "ib_write_bw -t 0",
        "ib_write_lat -s 4096 -I 913", "ib_write_lat --columns wide"}) {
    Outcome r = run(args + " --csv " + (dir_ / "x.csv").string());
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("hcasim: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    EXPECT_FALSE(fs::exists(dir_ / "x.csv")) << args;
  }
}

// --csv writes a temporary file and renames it over the target: a symlink, FIFO or device
// there would be replaced, so anything but a regular file is refused (and left alone).
TEST_F(Cli, CsvRefusesToReplaceWhatIsNotARegularFile) {
  const fs::path target = dir_ / "target.csv";
  const fs::path link = dir_ / "link.csv";
  { std::ofstream(target) << "keep\n"; }
  fs::create_symlink(target, link);
  Outcome r = run("ib_write_lat -n 5 --csv " + link.string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, "hcasim: error: --csv " + link.string() + ": cannot write (it exists and is not a regular file)\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "keep\n");
}
