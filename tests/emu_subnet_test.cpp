// The emulated subnet's directory (emu/subnet.h) against another local user: a directory that
// is a symbolic link, another user's or writable by others is refused with one line; nothing in
// it is followed, nothing blocks, garbage and dead claims are reclaimed, a full subnet is an
// error, and a forked child leaves its parent's claim alone.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "emu/subnet.h"
#include "sdp/device.h"

using namespace hcasim;
namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory as the subnet's parent, with $HCASIM_SUBNET set to `sub` in it.
class Subnet : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/tmp/hcasim-subnet-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/sub";
    ::setenv(emu::kSubnetEnv, dir_.c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
    ::unsetenv(emu::kSubnetEnv);
  }
  /// The DeviceError message of claiming a LID, or "" when the claim succeeds.
  static std::string claim_error() {
    try {
      emu::SubnetPort p(4242);
      return "";
    } catch (const sdp::DeviceError& e) {
      return e.what();
    }
  }
  std::string read(const std::string& name) const {
    std::ifstream f(dir_ + "/" + name);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ + "/" + name) << text; }
  /// A live claim line of this process, as SubnetPort writes it.
  static std::string live_line(unsigned port) {
    return fmt::format("{} {} {}\n", ::getpid(), port, emu::process_start_time(::getpid()));
  }

  std::string root_, dir_;
};

/// The PID of a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t c = ::fork();
  if (c == 0) ::_exit(0);
  int st = 0;
  ::waitpid(c, &st, 0);
  return c;
}

}  // namespace

TEST_F(Subnet, AnAbsentDirectoryIsMade0700AndTheFirstPortIsLid1) {
  emu::SubnetPort p(4242);
  EXPECT_EQ(p.lid(), 1);
  struct stat st {};
  ASSERT_EQ(::lstat(dir_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(read("lid-0001"), live_line(4242));
  EXPECT_EQ(emu::find_port(1), 4242);
  emu::SubnetPort q(4343);
  EXPECT_EQ(q.lid(), 2);
}

TEST_F(Subnet, ASymbolicLinkIsRefusedAndNotFollowed) {
  // Another user plants /tmp/hcasim-subnet-UID as a link to a directory of theirs.
  const std::string theirs = root_ + "/theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(theirs.c_str(), dir_.c_str()), 0);
  const std::string e = claim_error();
  EXPECT_EQ(e, fmt::format("emulated subnet {}: not a directory (a symbolic link or a file); remove it or set "
                           "HCASIM_SUBNET to a directory of your own",
                           dir_));
  EXPECT_TRUE(fs::is_empty(theirs));
  EXPECT_EQ(emu::find_port(1), std::nullopt);
}

TEST_F(Subnet, ATrailingSlashDoesNotMakeALinkFollowed) {
  // "DIR/" resolves a final symbolic link whatever O_NOFOLLOW says: the slash is taken off first.
  const std::string theirs = root_ + "/theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(theirs.c_str(), dir_.c_str()), 0);
  ::setenv(emu::kSubnetEnv, (dir_ + "//").c_str(), 1);
  EXPECT_EQ(emu::subnet_dir(), dir_);
  EXPECT_EQ(claim_error(), fmt::format("emulated subnet {}: not a directory (a symbolic link or a file); remove it or "
                                       "set HCASIM_SUBNET to a directory of your own",
                                       dir_));
  EXPECT_TRUE(fs::is_empty(theirs));
  ::setenv(emu::kSubnetEnv, "/", 1);
  EXPECT_EQ(emu::subnet_dir(), "/");
}

TEST_F(Subnet, ATemporaryClaimLeftUnderThisPidIsReclaimed) {
  // A process that crashed mid-claim left ".claim-PID-N"; this process now has its PID.
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  for (int n = 0; n < 256; ++n) write(fmt::format(".claim-{}-{}", ::getpid(), n), "left by a crash");
  EXPECT_EQ(claim_error(), "");
  for (const auto& e : fs::directory_iterator(dir_)) ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(Subnet, ANonEmptyDirectoryIsSetAsideWithALineAndItsLidClaimed) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir_ + "/lid-0001").c_str(), 0700), 0);
  std::ofstream(dir_ + "/lid-0001/notes") << "the user's\n";
  ::testing::internal::CaptureStderr();
  auto p = std::make_unique<emu::SubnetPort>(4242);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(p->lid(), 1);
  EXPECT_EQ(read("lid-0001"), live_line(4242));
  std::vector<std::string> aside;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().filename().string().starts_with("garbage-")) aside.push_back(e.path().filename().string());
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_TRUE(aside[0].starts_with(fmt::format("garbage-lid-0001-{}-", ::getpid()))) << aside[0];
  EXPECT_EQ(read(aside[0] + "/notes"), "the user's\n");
  EXPECT_EQ(said, fmt::format("hcasim: emulated subnet {0}: lid-0001 was a directory, not a claim; moved to {0}/{1} "
                              "(remove it)\n",
                              dir_, aside[0]));
}

TEST_F(Subnet, ADirectoryOthersCanWriteIsRefused) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  EXPECT_EQ(claim_error(), fmt::format("emulated subnet {}: mode 0777 lets group or others write it; chmod 700 it", dir_));
  ASSERT_EQ(::chmod(dir_.c_str(), 0720), 0);
  EXPECT_NE(claim_error().find("mode 0720"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);  // readable by others is no threat: LIDs are not secret
  EXPECT_EQ(claim_error(), "");
}

TEST_F(Subnet, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
  EXPECT_EQ(claim_error(), fmt::format("emulated subnet {}: owned by uid 65534, not by this user (uid 0); remove it or "
                                       "set HCASIM_SUBNET to a directory of your own",
                                       dir_));
}

TEST_F(Subnet, PlantedEntriesAreReclaimedWithoutFollowingOrBlocking) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  // LID 1: a link to a file of the victim's; 2: a FIFO (open(2) would wait for a writer);
  // 3: garbage; 4: a claim whose process is gone; 5: this process's PID with another start
  // time (a PID reused after a crash); 6: a directory.
  const std::string victim = root_ + "/victim";
  std::ofstream(victim) << "keep\n";
  ASSERT_EQ(::symlink(victim.c_str(), (dir_ + "/lid-0001").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_ + "/lid-0002").c_str(), 0600), 0);
  write("lid-0003", "GET / HTTP/1.0\n");
  write("lid-0004", fmt::format("{} 4000 1\n", dead_pid()));
  write("lid-0005", fmt::format("{} 4000 1\n", ::getpid()));
  ASSERT_EQ(::mkdir((dir_ + "/lid-0006").c_str(), 0700), 0);
  write(fmt::format(".claim-{}-0", dead_pid()), "left by a crash");
  std::vector<std::unique_ptr<emu::SubnetPort>> held;  // each claim held: the next takes the next LID
  for (unsigned want = 1; want <= 6; ++want) {
    held.push_back(std::make_unique<emu::SubnetPort>(4242));
    EXPECT_EQ(held.back()->lid(), want);
  }
  std::ifstream f(victim);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "keep");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_TRUE(e.path().filename().string().starts_with("lid-000")) << e.path();
}

TEST_F(Subnet, ALiveClaimIsKeptAndFindPortReadsOnlyClaims) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  write("lid-0001", live_line(5000));
  ASSERT_EQ(::mkfifo((dir_ + "/lid-0002").c_str(), 0600), 0);
  write("lid-0003", fmt::format("{} 5000 1\n", ::getpid()));
  write("lid-0004", live_line(70000));
  EXPECT_EQ(emu::find_port(1), 5000);
  EXPECT_EQ(emu::find_port(2), std::nullopt);  // a FIFO: not opened for a claim, no hang
  EXPECT_EQ(emu::find_port(3), std::nullopt);  // not this process: another start time
  EXPECT_EQ(emu::find_port(4), std::nullopt);  // no TCP port
  EXPECT_EQ(emu::find_port(0), std::nullopt);
  EXPECT_EQ(emu::find_port(0xC000), std::nullopt);  // multicast range (IBA 4.1.3)
  emu::SubnetPort p(4242);
  EXPECT_EQ(p.lid(), 2);
  EXPECT_EQ(read("lid-0001"), live_line(5000));
}

TEST_F(Subnet, EveryLidTakenIsAnErrorNotLidZero) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  const std::string line = live_line(5000);
  for (unsigned lid = 1; lid <= emu::kMaxUnicastLid; ++lid) write(fmt::format("lid-{:04x}", lid), line);
  EXPECT_EQ(claim_error(), fmt::format("emulated subnet {}: every LID (1 to 49151) is taken", dir_));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_TRUE(e.path().filename().string().starts_with("lid-")) << "left behind: " << e.path();
}

TEST_F(Subnet, AForkedChildThatExitsLeavesTheParentsClaim) {
  auto p = std::make_unique<emu::SubnetPort>(4242);
  ASSERT_EQ(p->lid(), 1);
  const pid_t c = ::fork();
  if (c == 0) {
    p.reset();  // the child's copy of the port goes, as at its exit
    ::_exit(0);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(c, &st, 0), c);
  EXPECT_EQ(read("lid-0001"), live_line(4242));
  EXPECT_EQ(emu::find_port(1), 4242);
  p.reset();  // the owner's own close removes it
  EXPECT_FALSE(fs::exists(dir_ + "/lid-0001"));
}
