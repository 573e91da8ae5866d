// Hostile inputs, one table: flags, platform files, scenario files, reference CSVs, run files,
// calibrate and validate arguments, the real-time programs' flags, and malformed packets sent
// to a running hcasim-sdp-server. Every case checks the exit status exactly, that stderr is
// one line matching the case's regex (naming what and where: FILE:LINE, the flag, the peer),
// and that no output file it asked for (-o, --csv, --report) exists afterwards.
//
// Exit status convention (docs/testing.md "Hostile inputs"): 2 for bad input (a flag, a size, a file),
// 1 for a runtime failure (no device, a refused connection, a test that failed), 3 for an
// internal error of the simulator. A packet case is a server that keeps serving: the server
// logs one line naming the problem and the peer, and a following good client completes a
// short stream.
#include <gtest/gtest.h>

#include "tests/proc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <zlib.h>

#include "emu/wire.h"
#include "tests/cm_handshake.h"
#include "sdp/bsdh.h"

namespace fs = std::filesystem;
using hcasim::test::Clock;
using hcasim::test::Proc;
using hcasim::test::slurp;

namespace {

/// Which program a case runs.
enum class Prog { Hcasim, Client, Server, Packet };

/// What a packet case sends to the server after connecting: raw bytes, after a good CM REQ /
/// REP / RTU exchange when `established`.
struct Packet {
  bool established = false;
  std::vector<uint8_t> bytes{};
};

struct Case {
  std::string name{};
  Prog prog = Prog::Hcasim;
  std::vector<std::string> args{};                         ///< after the program; @DIR@ = the scratch dir
  std::vector<std::pair<std::string, std::string>> files{};  ///< written into the scratch dir first
  int status = 2;
  std::string line{};               ///< the one stderr line (without its newline) matches it whole;
                                    ///< @DIR@ = the scratch dir; packet cases: the server's line
  std::vector<std::string> absent{};///< files that must not exist afterwards (@DIR@ ...)
  Packet packet{};
  std::vector<std::string> fifos{};  ///< FIFOs made in the scratch dir first (nobody writes them)
  std::vector<std::pair<std::string, uint64_t>> sparse{};  ///< files of that many zero bytes (holes)
  uint64_t address_space_kb = 0;  ///< the program's RLIMIT_AS (ulimit -v), when not 0
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// ---- file contents ------------------------------------------------------------------------------

const fs::path kSource = fs::path(HCASIM_REFERENCE_DIR).parent_path();

std::string shipped_platform() { return slurp(kSource / "scenarios/platforms/connectx-ddr-pcie1x8.toml"); }

/// A shipped platform file with the line that starts with `key = ` in [section] replaced by
/// `replacement`; `line` gets its number (1-based).
std::string edited_platform(const std::string& section, const std::string& key, const std::string& replacement,
                            int& line) {
  std::istringstream in(shipped_platform());
  std::string out, l, current;
  int n = 0;
  line = 0;
  while (std::getline(in, l)) {
    ++n;
    if (!l.empty() && l[0] == '[') current = l;
    if (line == 0 && current == "[" + section + "]" && l.rfind(key + " = ", 0) == 0) {
      l = replacement;
      line = n;
    }
    out += l + "\n";
  }
  if (line == 0) throw std::runtime_error("edited_platform: no " + section + "." + key);
  return out;
}

/// `[[point]]`s of a one-table scenario file: a netperf command and a reference CSV.
std::string scenario(const std::string& point_extra, const std::string& command = "netperf -l 1 -- -m 64K",
                     const std::string& csv = "@DIR@/ref.csv") {
  return "name = \"hostile\"\n"
         "description = \"hostile inputs\"\n"
         "platform = \"connectx-ddr-pcie1x8\"\n"
         "source = \"tests/hostile_inputs_test.cpp\"\n"
         "\n"
         "[tolerance]\n"
         "throughput = 0.15\n"
         "service_demand = 0.25\n"
         "\n"
         "[[point]]\n"
         "table = \"T\"\n"
         "mode = \"SDP\"\n"
         "set = [\"sdp.zcopy_thresh=0\"]\n"
         "command = \"" + command + "\"\n"
         "reference = { file = \"" + csv + "\", match = { size = \"64K\" } }\n"
         "gated = true\n" + point_extra;
}

const std::string kGoodCsv =
    "size,throughput_mbps,sd_local_us_per_kb,sd_remote_us_per_kb\n"
    "64K,8000,1.0,1.2\n";

// ---- packets ------------------------------------------------------------------------------------

void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}
void put16(std::vector<uint8_t>& v, uint16_t x) {
  v.push_back(static_cast<uint8_t>(x >> 8));
  v.push_back(static_cast<uint8_t>(x));
}

/// A frame of emu/wire.h with any length field: length, op, a zero byte, the P_Key (the default
/// one on a transport packet, which the QP's P_Key check passes; reserved 0 on a CM message),
/// dest_qpn, psn, rest, and a good ICRC (the CRC-32 of everything after the length field), so
/// that the receiver gets past its ICRC check to the fault the case is about. `length` counts
/// header and rest; the field says length + 4 (the ICRC).
std::vector<uint8_t> raw_frame(uint32_t length, uint8_t op, const std::vector<uint8_t>& rest = {},
                               uint32_t dest_qpn = 0, uint32_t psn = 0) {
  std::vector<uint8_t> v;
  put32(v, length + static_cast<uint32_t>(hcasim::emu::kIcrcSize));
  v.push_back(op);
  v.push_back(0);
  put16(v, op < 0xC0 ? hcasim::hca::kDefaultPkey : 0);
  put32(v, dest_qpn);
  put32(v, psn);
  v.insert(v.end(), rest.begin(), rest.end());
  put32(v, static_cast<uint32_t>(::crc32_z(0, v.data() + 4, v.size() - 4)));
  return v;
}

/// Names QP `qpn` in a whole frame's BTH DestQP (its ICRC made again): on an established
/// connection the server's QP drops, unanswered, a frame naming another QP (IBA 9.6), as a real
/// HCA does, so the cases address its QP to reach the fault they are about. Anything that is
/// not one whole frame (a bare length field) is left as it is.
void address_to(std::vector<uint8_t>& v, uint32_t qpn) {
  if (v.size() < 4 + hcasim::emu::kHeaderSize + hcasim::emu::kIcrcSize ||
      (uint32_t{v[0]} << 24 | uint32_t{v[1]} << 16 | uint32_t{v[2]} << 8 | v[3]) != v.size() - 4)
    return;
  std::vector<uint8_t> q;
  put32(q, qpn);
  std::copy(q.begin(), q.end(), v.begin() + 8);
  q.clear();
  put32(q, static_cast<uint32_t>(::crc32_z(0, v.data() + 4, v.size() - 8)));
  std::copy(q.begin(), q.end(), v.end() - 4);
}

/// A frame whose length field is right: 12 + rest + the ICRC.
std::vector<uint8_t> frame(uint8_t op, const std::vector<uint8_t>& rest = {}, uint32_t dest_qpn = 0) {
  return raw_frame(static_cast<uint32_t>(12 + rest.size()), op, rest, dest_qpn);
}

/// A CM REQ from QPN 1 carrying `private_data`, its length field saying `declared`.
std::vector<uint8_t> cm_req(const std::vector<uint8_t>& private_data, int declared = -1) {
  std::vector<uint8_t> ext;
  put32(ext, 1);  // local QPN
  put16(ext, 1);  // the sender port's LID
  put16(ext, static_cast<uint16_t>(declared < 0 ? private_data.size() : static_cast<size_t>(declared)));
  ext.insert(ext.end(), private_data.begin(), private_data.end());
  return frame(0xC0, ext);
}

/// A good SDP Hello in the 92 bytes of REQ private data.
std::vector<uint8_t> good_hello() {
  hcasim::sdp::HelloHeader h;
  h.bsdh.bufs = 4;
  h.localrcvsz = 32768 + 16;
  h.desremrcvsz = 32768 + 16;
  const auto b = h.to_bytes();
  std::vector<uint8_t> out(b.begin(), b.end());
  out.resize(hcasim::sdp::HelloHeader::kPrivateDataSize, 0);
  return out;
}

/// An SDP Data message (BSDH: MID Data, 4 credits, mseq 1) carrying `data`.
std::vector<uint8_t> sdp_data(const std::string& data) {
  hcasim::sdp::Bsdh b;
  b.mid = hcasim::sdp::Mid::Data;
  b.bufs = 4;
  b.len = static_cast<uint32_t>(hcasim::sdp::Bsdh::kSize + data.size());
  b.mseq = 1;
  std::vector<uint8_t> out(b.len);
  b.encode(std::span<uint8_t, hcasim::sdp::Bsdh::kSize>(out.data(), hcasim::sdp::Bsdh::kSize));
  std::copy(data.begin(), data.end(), out.begin() + hcasim::sdp::Bsdh::kSize);
  return out;
}

/// A blocking TCP connection to 127.0.0.1:port.
class RawPeer {
 public:
  explicit RawPeer(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    int one = 1;
    if (ok_) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawPeer() { close(); }
  bool ok() const { return ok_; }
  bool send(const std::vector<uint8_t>& b) {
    size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  /// Reads exactly n bytes within 5 s.
  bool read(uint8_t* out, size_t n) {
    const auto until = Clock::now() + std::chrono::seconds(5);
    for (size_t got = 0; got < n;) {
      pollfd p{fd_, POLLIN, 0};
      if (Clock::now() > until) return false;
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t k = ::recv(fd_, out + got, n - got, 0);
      if (k <= 0) return false;
      got += static_cast<size_t>(k);
    }
    return true;
  }
  /// One frame, decoded by emu/wire.h.
  hcasim::emu::Packet read_frame() {
    std::array<uint8_t, 4> len{};
    if (!read(len.data(), len.size())) throw std::runtime_error("no frame from the server");
    std::vector<uint8_t> body(hcasim::emu::decode_length(len));
    if (!read(body.data(), body.size())) throw std::runtime_error("truncated frame from the server");
    return hcasim::emu::decode(body);
  }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

// ---- checks -------------------------------------------------------------------------------------

std::string regex_escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

std::string substitute(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

/// The lines of `s` (without their newlines).
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// Waits at most `limit` for the server's stderr to have `n` whole lines.
std::vector<std::string> server_lines(const Proc& srv, size_t n,
                                      std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  std::vector<std::string> l;
  for (auto until = Clock::now() + limit; Clock::now() < until;) {
    const std::string e = srv.err();
    l = split_lines(e);
    if (l.size() >= n && !e.empty() && e.back() == '\n') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return l;
}

class Hostile : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hcasim-hostile-" + std::to_string(::getpid()) + "-" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string expand(const std::string& s) const { return substitute(s, "@DIR@", dir_.string()); }
  fs::path dir_;
};

void run_packet_case(const Case& c, const std::string& line_re) {
  Proc srv(c.name + "-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  {
    RawPeer peer(port);
    ASSERT_TRUE(peer.ok());
    // A process of this user (it passes the subnet's handshake) with a malformed CM exchange.
    ASSERT_TRUE(hcasim::testing::cm_prove(peer.fd())) << srv.err();
    uint32_t rep_qpn = 0;
    if (c.packet.established) {
      ASSERT_TRUE(peer.send(cm_req(good_hello())));
      const hcasim::emu::Packet rep = peer.read_frame();
      ASSERT_EQ(rep.op, hcasim::emu::Op::CmRep) << srv.err();
      rep_qpn = rep.local_qpn;
      ASSERT_TRUE(peer.send(frame(0xC2, {}, rep_qpn)));
    }
    std::vector<uint8_t> bytes = c.packet.bytes;
    if (c.packet.established) address_to(bytes, rep_qpn);
    peer.send(bytes);  // the server may close first
    // The server's line comes before the close, or after it (a truncated frame).
    server_lines(srv, 2, std::chrono::seconds(1));
  }
  const std::vector<std::string> l = server_lines(srv, 2);
  ASSERT_EQ(l.size(), 2u) << "\"listening on\", then one line for the bad peer:\n" << srv.err();
  EXPECT_TRUE(std::regex_match(l[1], std::regex(line_re))) << l[1] << "\ndoes not match\n" << line_re;
  // The server keeps serving: a good client streams 100000 bytes.
  Proc good(c.name + "-good", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l",
                               "-100000"});
  ASSERT_EQ(good.wait(std::chrono::seconds(30)), 0) << good.err() << srv.err();
  EXPECT_NE(good.err().find("sent 100000 bytes"), std::string::npos) << good.err();
  EXPECT_NE(good.err().find(": match"), std::string::npos) << good.err();
  const auto after = server_lines(srv, 3);
  ASSERT_EQ(after.size(), 3u) << srv.err();
  EXPECT_NE(after[2].find("received 100000 bytes"), std::string::npos) << srv.err();
  EXPECT_EQ(srv.wait(std::chrono::milliseconds(50)), -1) << "the server ended: " << srv.err();
}

TEST_P(Hostile, OneLineNamedExitStatusNothingHalfWritten) {
  const Case& c = GetParam();
  for (const auto& [name, content] : c.files) std::ofstream(dir_ / name, std::ios::binary) << expand(content);
  for (const auto& name : c.fifos) ASSERT_EQ(::mkfifo((dir_ / name).c_str(), 0600), 0) << name;
  for (const auto& [name, size] : c.sparse) {
    std::ofstream(dir_ / name, std::ios::binary).flush();
    fs::resize_file(dir_ / name, size);
  }
  // The regex: @DIR@ stands for the scratch directory, matched literally.
  const std::string line_re = substitute(c.line, "@DIR@", regex_escape(dir_.string()));
  if (c.prog == Prog::Packet) {
    run_packet_case(c, line_re);
    return;
  }
  std::vector<std::string> argv{c.prog == Prog::Hcasim   ? HCASIM_BINARY
                                : c.prog == Prog::Client ? HCASIM_SDP_CLIENT
                                                         : HCASIM_SDP_SERVER};
  for (const auto& a : c.args) argv.push_back(expand(a));
#ifdef HCASIM_SANITIZE
  // AddressSanitizer reserves terabytes of shadow address space at start: under a ulimit -v the
  // child cannot even start ("failed to allocate ... stack depot"), whatever it would then do.
  if (c.address_space_kb) GTEST_SKIP() << "ulimit -v cases need a build without AddressSanitizer";
#endif
  // ulimit -v for the child: this process's soft limit while it is spawned (inherited), then back.
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &before), 0);
  if (c.address_space_kb) {
    rlimit lower = before;
    lower.rlim_cur = c.address_space_kb * 1024;
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &lower), 0);
  }
  Proc p(c.name, argv);
  if (c.address_space_kb) {
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &before), 0);
  }
  const int status = p.wait(std::chrono::seconds(20));
  const std::string err = p.err();
  EXPECT_EQ(status, c.status) << err;
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.back(), '\n') << err;
  const std::string line = err.substr(0, err.size() - 1);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "more than one line:\n" << err;
  EXPECT_TRUE(std::regex_match(line, std::regex(line_re))) << line << "\ndoes not match\n" << line_re;
  EXPECT_EQ(p.out(), "") << "stdout after bad input";
  for (const auto& a : c.absent) EXPECT_FALSE(fs::exists(expand(a))) << expand(a) << " was written";
}

// ---- the table ----------------------------------------------------------------------------------

std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(std::move(c)); };
  const std::string csv = "@DIR@/out.csv";
  const std::string E = "hcasim: error: ";

  // ---- hcasim netperf flags
  add({.name = "netperf_bad_m_size", .args = {"netperf", "--csv", csv, "--", "-m", "12Q"},
       .line = E + "-m: bad size '12Q' \\(use a number .*\\)", .absent = {csv}});
  add({.name = "netperf_unknown_flag", .args = {"netperf", "-Z", "--csv", csv}, .line = E + "unknown option -Z",
       .absent = {csv}});
  add({.name = "netperf_zero_length", .args = {"netperf", "-l", "0", "--csv", csv},
       .line = E + "-l 0: the test length must be > 0 seconds", .absent = {csv}});
  add({.name = "netperf_nan_length", .args = {"netperf", "-l", "nan"}, .line = E + "-l: 'nan' is not a number"});
  // Global -D (demo mode): the interval and the first guess of units.
  add({.name = "netperf_demo_zero_interval", .args = {"netperf", "-D", "0", "--csv", csv},
       .line = E + "-D 0: an interval of 0 s asks for an interim result after every send\\(\\); give an interval > 0 "
                   "seconds",
       .absent = {csv}});
  add({.name = "netperf_demo_bad_interval", .args = {"netperf", "-D", "1x", "--csv", csv},
       .line = E + "-D 1x: the interval '1x' is not a number of seconds", .absent = {csv}});
  add({.name = "netperf_demo_zero_units", .args = {"netperf", "-D", "1,0", "--csv", csv},
       .line = E + "-D 1,0: a first guess of 0 units per interval; give at least 1", .absent = {csv}});
  add({.name = "netperf_demo_bad_units", .args = {"netperf", "-D", "1,12Q", "--csv", csv},
       .line = E + "-D: bad size '12Q' \\(use a number .*\\)", .absent = {csv}});
  // Test-specific -P: ports.
  add({.name = "netperf_port_too_large", .args = {"netperf", "--csv", csv, "--", "-P", "70000"},
       .line = E + "-P: '70000' is out of range \\(0..65535\\)", .absent = {csv}});
  add({.name = "netperf_port_service_name", .args = {"netperf", "--csv", csv, "--", "-P", "http,5000"},
       .line = E + "-P: 'http' is not a port number \\(hcasim looks up no service names\\)", .absent = {csv}});
  // Output selectors: netperf's refusal of a missing selection file, a selector the simulation
  // cannot fill, a value attached to -o.
  add({.name = "netperf_selector_file_missing", .args = {"netperf", "--csv", csv, "--", "-o", "NOSUCH"},
       .line = E + "-o NOSUCH: Could not open output selection file 'NOSUCH' errno 2 \\(not a selector name either\\)",
       .absent = {csv}});
  add({.name = "netperf_selector_unfillable", .args = {"netperf", "-c", "--csv", csv, "--", "-O", "LOCAL_CPU_PERCENT_USER"},
       .line = E + "-O LOCAL_CPU_PERCENT_USER: hcasim cannot fill this selector for TCP_STREAM: the simulated CPU time "
                   "is not split .*",
       .absent = {csv}});
  add({.name = "netperf_selector_all", .args = {"netperf", "--", "-k", "all"}, .line = E + "-k all: every netperf 2.7 .*"});
  add({.name = "netperf_selector_attached", .args = {"netperf", "--", "-oTHROUGHPUT"},
       .line = E + "-o: takes its output selectors as the next word .*"});
  add({.name = "netperf_selector_json", .args = {"netperf", "--json", "--", "-o", "THROUGHPUT"},
       .line = E + "-o: output selectors are netperf's text output; not with --json"});
  // Where the selection file goes: a directory, a FIFO (netperf would wait for ever), a device;
  // lists that select nothing (netperf would print only its banner).
  add({.name = "netperf_selector_directory", .args = {"netperf", "--csv", csv, "--", "-o", "/"},
       .line = E + "-o /: a directory, not a regular file \\(hcasim reads its inputs only from regular files\\)",
       .absent = {csv}});
  add({.name = "netperf_selector_fifo", .args = {"netperf", "--", "-O", "@DIR@/sel.fifo"},
       .line = E + "-O @DIR@/sel\\.fifo: a FIFO, not a regular file \\(hcasim reads its inputs only from regular "
                   "files\\)"});
  v.back().fifos = {"sel.fifo"};
  add({.name = "netperf_selector_device", .args = {"netperf", "--", "-k", "/dev/zero"},
       .line = E + "-k /dev/zero: a character device, not a regular file \\(hcasim reads its inputs only from "
                   "regular files\\)"});
  add({.name = "netperf_selector_empty_list", .args = {"netperf", "--", "-o", ","},
       .line = E + "-o ,: selects no output \\(no selector netperf knows\\): the run would print no result"});
  add({.name = "netperf_selector_empty_file", .args = {"netperf", "--", "-k", "@DIR@/sel.txt"},
       .files = {{"sel.txt", ""}},
       .line = E + "-k @DIR@/sel\\.txt: selects no output \\(no selector netperf knows\\): the run would print no "
                   "result"});
  // Accepted: a simulation of 10^30 s that never ended.
  add({.name = "netperf_length_beyond_netperf", .args = {"netperf", "-l", "1e30", "--csv", csv},
       .line = E + "-l 1e30: above netperf's limit of 2147483647 seconds", .absent = {csv}});
  add({.name = "netperf_length_just_beyond_netperf", .args = {"netperf", "-l", "2147483648", "--csv", csv},
       .line = E + "-l 2147483648: above netperf's limit of 2147483647 seconds", .absent = {csv}});
  // 0 bytes moved printed a throughput of 0, 17.59 % utilisation and a service demand of 0.000
  // (0 / 0), exit 0.
  add({.name = "netperf_too_short_to_move_a_message", .args = {"netperf", "-l", "1e-300", "-c", "-C", "--csv", csv},
       .line = E + "-l 1e-300: too short to move one message \\(under 1 ns\\); give a longer -l",
       .absent = {csv}});
  // Over IPoIB, the same -l printed a result row of one message (2146.76 10^6bits/s in 0.00 s), exit 0.
  add({.name = "netperf_ipoib_too_short_to_move_a_message",
       .args = {"netperf", "--transport", "ipoib", "-l", "1e-300", "-c", "-C", "--csv", csv},
       .line = E + "-l 1e-300: too short to move one message \\(under 1 ns\\); give a longer -l",
       .absent = {csv}});
  // Under ulimit -v 1500000 a 1 GB --verify-data run died by SIGABRT (exit 134) without a word.
  add({.name = "netperf_verify_data_beyond_ulimit_v",
       .args = {"netperf", "-P", "0", "-l", "0.05", "--verify-data", "--csv", csv, "--", "-m", "1G"},
       .line = E + "--verify-data: -m 1073741824 needs about 2\\.0 GiB of real bytes \\(netperf's send ring and receive "
                   "buffer\\), more than this process may still allocate: ulimit -v is 1\\.4 GiB, 0\\.[0-9] GiB in use",
       .absent = {csv}});
  v.back().address_space_kb = 1500000;
  add({.name = "netperf_rr_verify_data_beyond_ulimit_v",
       .args = {"netperf", "-t", "TCP_RR", "-P", "0", "-l", "0.05", "--verify-data", "--csv", csv, "--", "-r", "512M"},
       .line = E + "--verify-data: -r 536870912,536870912 needs about 2\\.0 GiB of real bytes \\(a request and a "
                   "response buffer on each host\\), more than this process may still allocate: ulimit -v is 1\\.4 "
                   "GiB, 0\\.[0-9] GiB in use",
       .absent = {csv}});
  v.back().address_space_kb = 1500000;
  add({.name = "client_length_beyond_netperf", .prog = Prog::Client, .args = {"--device", "emu", "-l", "1e30"},
       .line = "hcasim-sdp-client: -l 1e30: above netperf's limit of 2147483647 seconds"});
  add({.name = "netperf_T_not_a_cpu", .args = {"netperf", "-T", "bad", "--csv", csv},
       .line = E + "-T: 'bad' is not a CPU number", .absent = {csv}});
  add({.name = "netperf_T_cpu_the_platform_lacks", .args = {"netperf", "-T", "0,99", "-l", "0.01", "--csv", csv},
       .line = E + "-T: remote CPU 99 does not exist \\(connectx-ddr-pcie1x8 has 8 CPUs\\)", .absent = {csv}});
  add({.name = "netperf_H_missing_value", .args = {"netperf", "-H"}, .line = E + "-H: missing value"});
  // hcasim's own options that take a value: an option after one is not read as its value (getopt's
  // rule would read "--transport -P 0" as the transport -P and a stray 0, and write "--csv -c"'s
  // CSV to a file named -c); a value that starts with '-' is given as --OPTION=VALUE.
  auto value_is_an_option = [&](const std::string& name, std::vector<std::string> args, const std::string& flag,
                                const std::string& next, std::vector<std::string> absent = {}) {
    add({.name = name + "_value_is_an_option", .args = std::move(args),
         .line = E + flag + ": missing value \\(the next word, '" + next +
                 "', is an option; a value that starts with '-' is written " + flag + "=VALUE\\)",
         .absent = std::move(absent)});
  };
  value_is_an_option("netperf_transport", {"netperf", "--transport", "-P", "0", "--csv", csv}, "--transport", "-P",
                     {csv});
  add({.name = "netperf_transport_not_sdp_or_ipoib", .args = {"netperf", "--transport", "tcp", "--csv", csv},
       .line = E + "--transport: 'tcp' is not sdp or ipoib", .absent = {csv}});
  value_is_an_option("netperf_platform", {"netperf", "--platform", "-c", "-C", "--csv", csv}, "--platform", "-c",
                     {csv});
  value_is_an_option("netperf_remote_platform", {"netperf", "--remote-platform", "--stats"}, "--remote-platform",
                     "--stats");
  value_is_an_option("netperf_set", {"netperf", "--set", "-P", "0"}, "--set", "-P");
  value_is_an_option("netperf_seed", {"netperf", "--seed", "-l", "1"}, "--seed", "-l");
  add({.name = "netperf_seed_negative", .args = {"netperf", "--seed", "-1"},
       .line = E + "--seed: '-1' is not a non-negative integer"});
  value_is_an_option("netperf_csv", {"netperf", "-l", "0.01", "--csv", "-c"}, "--csv", "-c", {"-c"});
  value_is_an_option("netperf_trace", {"netperf", "-l", "0.01", "--trace", "-C"}, "--trace", "-C", {"-C"});
  value_is_an_option("netperf_steady", {"netperf", "--steady", "-c"}, "--steady", "-c");
  value_is_an_option("netperf_trace_window", {"netperf", "--trace", "@DIR@/t.json", "--trace-window", "-l", "1"},
                     "--trace-window", "-l", {"@DIR@/t.json"});
  value_is_an_option("ib_write_lat_columns", {"ib_write_lat", "--columns", "-n", "10"}, "--columns", "-n");
  value_is_an_option("ib_write_bw_platform", {"ib_write_bw", "--platform", "-n", "10"}, "--platform", "-n");
  value_is_an_option("ib_read_lat_seed", {"ib_read_lat", "--seed", "-n", "10"}, "--seed", "-n");
  value_is_an_option("ib_send_bw_set", {"ib_send_bw", "--set", "-a"}, "--set", "-a");
  value_is_an_option("ib_write_lat_csv", {"ib_write_lat", "-n", "10", "--csv", "-F"}, "--csv", "-F", {"-F"});
  value_is_an_option("rc_pingpong_platform", {"ibv_rc_pingpong", "--platform", "-n", "10"}, "--platform", "-n");
  value_is_an_option("ud_pingpong_seed", {"ibv_ud_pingpong", "--seed", "-n", "10"}, "--seed", "-n");
  value_is_an_option("params_platform", {"params", "--platform", "--json"}, "--platform", "--json");
  value_is_an_option("compare_set", {"compare", "--set", "--json", "@DIR@/runs.txt"}, "--set", "--json");
  value_is_an_option("calibrate_platform", {"calibrate", "--platform", "--json"}, "--platform", "--json");
  value_is_an_option("sweep_csv", {"sweep", "netperf", "--csv", "-l", "1", "--", "-m", "1K,2K"}, "--csv", "-l", {"-l"});
  add({.name = "netperf_m_above_netperf_limit", .args = {"netperf", "--", "-m", "3G"},
       .line = E + "-m: 3221225472 B is above netperf's limit of 2147483647 B"});
  add({.name = "netperf_P_not_0_or_1", .args = {"netperf", "-P", "2"}, .line = E + "-P: '2' is not 0 or 1"});
  add({.name = "netperf_not_tcp_stream", .args = {"netperf", "-t", "UDP_STREAM"},
       .line = E + "-t UDP_STREAM: hcasim simulates TCP_STREAM, TCP_MAERTS and TCP_RR"});
  // TCP_RR's -r: sizes netperf's break_args reads, at least a byte each, at most netperf's int.
  add({.name = "netperf_rr_request_zero", .args = {"netperf", "-t", "TCP_RR", "--csv", csv, "--", "-r", "0"},
       .line = E + "-r 0: a TCP_RR request of 0 bytes moves nothing \\(netperf's recv loop would never end\\); give "
                   "at least 1 byte",
       .absent = {csv}});
  add({.name = "netperf_rr_response_zero", .args = {"netperf", "-t", "TCP_RR", "--", "-r", "64,0"},
       .line = E + "-r 64,0: a TCP_RR response of 0 bytes moves nothing .*"});
  add({.name = "netperf_rr_request_negative", .args = {"netperf", "-t", "TCP_RR", "--", "-r", "-1"},
       .line = E + "-r: bad size '-1' .*"});
  add({.name = "netperf_rr_request_not_a_size", .args = {"netperf", "-t", "TCP_RR", "--", "-r", "abc"},
       .line = E + "-r: bad size 'abc' .*"});
  add({.name = "netperf_rr_three_sizes", .args = {"netperf", "-t", "TCP_RR", "--", "-r", "1,2,3"},
       .line = E + "-r 1,2,3: takes two sizes at most, REQ\\[,RSP\\]"});
  add({.name = "netperf_rr_request_above_netperf_limit", .args = {"netperf", "-t", "TCP_RR", "--", "-r", "4G,1"},
       .line = E + "-r: 4294967296 B is above netperf's limit of 2147483647 B"});
  add({.name = "netperf_rr_response_above_netperf_limit", .args = {"netperf", "-t", "TCP_RR", "--", "-r", "1,2G"},
       .line = E + "-r: 2147483648 B is above netperf's limit of 2147483647 B"});
  add({.name = "netperf_rr_send_size", .args = {"netperf", "-t", "TCP_RR", "--", "-m", "64K"},
       .line = E + "-m: TCP_RR sends requests and responses of -r's sizes; -m and -M belong to TCP_STREAM and "
                   "TCP_MAERTS"});
  add({.name = "netperf_rr_ipoib_verify_data",
       .args = {"netperf", "-t", "TCP_RR", "--transport", "ipoib", "--verify-data"},
       .line = E + "--verify-data: the IPoIB path \\(--transport ipoib\\) moves byte counts, not bytes; use --transport sdp"});
  add({.name = "netperf_rr_steady", .args = {"netperf", "-t", "TCP_RR", "--steady", "0.01"},
       .line = E + "--steady: a steady-state measurement is made for TCP_STREAM and TCP_MAERTS, not TCP_RR"});
  add({.name = "netperf_rr_explain", .args = {"netperf", "-t", "TCP_RR", "--explain"},
       .line = E + "--explain: explained for TCP_STREAM only, not TCP_RR"});
  add({.name = "netperf_rr_trace", .args = {"netperf", "-t", "TCP_RR", "--trace", "@DIR@/t.json"},
       .line = E + "--trace: traced for TCP_STREAM only, not TCP_RR", .absent = {"@DIR@/t.json"}});
  add({.name = "netperf_maerts_trace", .args = {"netperf", "-t", "TCP_MAERTS", "--trace", "@DIR@/t.json"},
       .line = E + "--trace: traced for TCP_STREAM only, not TCP_MAERTS", .absent = {"@DIR@/t.json"}});
  add({.name = "netperf_maerts_explain", .args = {"netperf", "-t", "TCP_MAERTS", "--explain"},
       .line = E + "--explain: explained for TCP_STREAM only, not TCP_MAERTS"});
  add({.name = "netperf_rr_too_short", .args = {"netperf", "-t", "TCP_RR", "-l", "1e-6", "--csv", csv},
       .line = E + "-l 1e-06: too short to complete one transaction .*", .absent = {csv}});
  add({.name = "netperf_maerts_T_cpu_the_platform_lacks",
       .args = {"netperf", "-t", "TCP_MAERTS", "-T", "0,99", "-l", "0.01", "--csv", csv},
       .line = E + "-T: remote CPU 99 does not exist \\(connectx-ddr-pcie1x8 has 8 CPUs\\)", .absent = {csv}});
  add({.name = "netperf_csv_in_missing_dir", .args = {"netperf", "-l", "0.01", "--csv", "@DIR@/no/such/dir/x.csv"},
       .line = E + "--csv @DIR@/no/such/dir/x\\.csv: cannot write \\(no such directory\\)"});
  add({.name = "unknown_command", .args = {"bogus"}, .line = E + "unknown command 'bogus' .*"});
  // A second --csv silently replaced the first: one of the two was never written.
  add({.name = "netperf_csv_twice", .args = {"netperf", "-l", "0.01", "--csv", "@DIR@/a.csv", "--csv", "@DIR@/b.csv"},
       .line = E + "--csv: given twice \\(@DIR@/a\\.csv, then @DIR@/b\\.csv\\): one run writes one --csv",
       .absent = {"@DIR@/a.csv", "@DIR@/b.csv"}});
  add({.name = "ib_write_lat_csv_twice", .args = {"ib_write_lat", "-n", "200", "--csv", "@DIR@/a.csv", "--csv=@DIR@/b.csv"},
       .line = E + "--csv: given twice \\(@DIR@/a\\.csv, then @DIR@/b\\.csv\\): one run writes one --csv",
       .absent = {"@DIR@/a.csv", "@DIR@/b.csv"}});
  // Every other single-valued option given twice kept the last silently (validate ran its
  // whole sweep and wrote only the second --report).
  add({.name = "validate_report_twice", .args = {"validate", "--report", "@DIR@/r1", "--report", "@DIR@/r2"},
       .line = E + "--report: given twice \\(@DIR@/r1, then @DIR@/r2\\): one run writes one --report",
       .absent = {"@DIR@/r1", "@DIR@/r2"}});
  add({.name = "validate_duration_twice", .args = {"validate", "--duration", "1", "--duration", "2"},
       .line = E + "--duration: given twice \\(1, then 2\\); give it once"});
  add({.name = "validate_iterations_twice", .args = {"validate", "--iterations", "1", "--iterations", "2"},
       .line = E + "--iterations: given twice \\(1, then 2\\); give it once"});
  add({.name = "validate_jobs_twice", .args = {"validate", "-j", "1", "--jobs", "2"},
       .line = E + "-j: given twice \\(1, then 2\\); give it once"});
  add({.name = "run_jobs_twice", .args = {"run", "-j", "1", "-j", "2", "seed000", "--csv", csv},
       .line = E + "-j: given twice \\(1, then 2\\); give it once", .absent = {csv}});
  add({.name = "run_unknown_option", .args = {"run", "seed000", "--duration", "1", "--csv", csv},
       .line = E + "run: unknown option --duration \\(it takes -j/--jobs, --csv, --list-commands, --collect, --json\\)",
       .absent = {csv}});
  add({.name = "run_two_scenarios", .args = {"run", "seed000", "seed001", "--csv", csv},
       .line = E + "run: unexpected argument 'seed001'", .absent = {csv}});
  add({.name = "netperf_seed_twice", .args = {"netperf", "-l", "0.01", "--seed", "1", "--seed", "2", "--csv", csv},
       .line = E + "--seed: given twice \\(1, then 2\\); give it once", .absent = {csv}});
  add({.name = "netperf_transport_twice",
       .args = {"netperf", "-l", "0.01", "--transport", "ipoib", "--transport", "sdp", "--csv", csv},
       .line = E + "--transport: given twice \\(ipoib, then sdp\\); give it once", .absent = {csv}});
  add({.name = "netperf_platform_twice",
       .args = {"netperf", "-l", "0.01", "--platform", "seed000", "--platform", "seed001", "--csv", csv},
       .line = E + "--platform: given twice \\(seed000, then seed001\\); give it once", .absent = {csv}});
  add({.name = "netperf_remote_platform_twice",
       .args = {"netperf", "-l", "0.01", "--remote-platform", "seed000", "--remote-platform", "seed000"},
       .line = E + "--remote-platform: given twice \\(seed000, then seed000\\); give it once"});
  add({.name = "ib_write_bw_platform_twice",
       .args = {"ib_write_bw", "-n", "100", "--platform=seed000", "--platform", "seed001", "--csv", csv},
       .line = E + "--platform: given twice \\(seed000, then seed001\\); give it once", .absent = {csv}});
  add({.name = "ib_write_lat_columns_twice", .args = {"ib_write_lat", "-n", "100", "--columns", "classic", "--columns", "extended"},
       .line = E + "--columns: given twice \\(classic, then extended\\); give it once"});
  add({.name = "ib_send_bw_seed_twice", .args = {"ib_send_bw", "-n", "100", "--seed", "1", "--seed=2"},
       .line = E + "--seed: given twice \\(1, then 2\\); give it once"});
  // --trace on the perftest tools and on IPoIB: checked before the run, nothing written.
  const std::string trace = "@DIR@/t.json";
  add({.name = "ib_write_lat_trace_window_without_trace", .args = {"ib_write_lat", "-n", "100", "--trace-window", "0,1"},
       .line = E + "--trace-window: needs --trace FILE \\(the window bounds what the trace file holds\\)"});
  add({.name = "ib_write_bw_trace_window_not_start_len",
       .args = {"ib_write_bw", "-n", "100", "--trace", trace, "--trace-window", "0.5"},
       .line = E + "--trace-window: '0\\.5' is not START,LEN \\(simulated seconds after the client's first post, "
                   "START >= 0, LEN > 0\\)",
       .absent = {trace}});
  add({.name = "ib_send_bw_trace_window_negative_start",
       .args = {"ib_send_bw", "-n", "100", "--trace", trace, "--trace-window=-1,1"},
       .line = E + "--trace-window: '-1,1' is not START,LEN .*", .absent = {trace}});
  add({.name = "ib_read_lat_trace_window_zero_length",
       .args = {"ib_read_lat", "-n", "100", "--trace", trace, "--trace-window", "0,0"},
       .line = E + "--trace-window: '0,0' is not START,LEN .*", .absent = {trace}});
  add({.name = "ib_atomic_bw_trace_window_infinite",
       .args = {"ib_atomic_bw", "-n", "100", "--trace", trace, "--trace-window", "0,inf"},
       .line = E + "--trace-window: '0,inf' is not START,LEN .*", .absent = {trace}});
  add({.name = "ib_write_lat_trace_window_twice",
       .args = {"ib_write_lat", "-n", "100", "--trace", trace, "--trace-window", "0,1", "--trace-window", "0,2"},
       .line = E + "--trace-window: given twice \\(0,1, then 0,2\\); give it once", .absent = {trace}});
  add({.name = "ib_write_lat_trace_missing_value", .args = {"ib_write_lat", "-n", "100", "--trace"},
       .line = E + "--trace: missing value"});
  add({.name = "ib_write_lat_trace_empty", .args = {"ib_write_lat", "-n", "100", "--trace="},
       .line = E + "--trace: empty value"});
  add({.name = "ib_write_bw_trace_twice",
       .args = {"ib_write_bw", "-n", "100", "--trace", trace, "--trace", "@DIR@/u.json"},
       .line = E + "--trace: given twice \\(@DIR@/t\\.json, then @DIR@/u\\.json\\): one run writes one --trace",
       .absent = {trace, "@DIR@/u.json"}});
  add({.name = "ib_send_lat_trace_is_the_csv", .args = {"ib_send_lat", "-n", "100", "--trace", trace, "--csv", trace},
       .line = E + "--trace @DIR@/t\\.json: also the --csv file; give each its own file", .absent = {trace}});
  add({.name = "ib_read_bw_trace_to_stdout", .args = {"ib_read_bw", "-n", "100", "--trace", "/dev/stdout"},
       .line = E + "--trace /dev/stdout: the trace would land inside the tool's output on stdout; write it to a file"});
  add({.name = "ib_atomic_lat_trace_in_missing_dir", .args = {"ib_atomic_lat", "-n", "100", "--trace", "@DIR@/no/t.json"},
       .line = E + "--trace @DIR@/no/t\\.json: cannot write \\(no such directory\\)"});
  add({.name = "sweep_perftest_trace", .args = {"sweep", "ib_write_bw", "-n", "100", "-s", "1K,2K", "--trace", trace},
       .line = E + "--trace: sweep runs many points into one table; trace one point with hcasim ib_write_bw --trace",
       .absent = {trace}});
  add({.name = "sweep_netperf_profile", .args = {"sweep", "netperf", "-l", "0.01", "--profile", "--", "-m", "64,128"},
       .line = E + "--profile: sweep prints one table of points; run one point with hcasim netperf --profile for its "
                   "CPU profile"});
  add({.name = "sweep_perftest_stats", .args = {"sweep", "ib_write_bw", "-n", "100", "-s", "2,4", "--stats"},
       .line = E + "--stats: sweep prints one table of points; run one point with hcasim ib_write_bw --stats for its "
                   "counters"});
  add({.name = "netperf_ipoib_trace_window_bad",
       .args = {"netperf", "--transport", "ipoib", "-l", "0.01", "--trace", trace, "--trace-window", "x,1"},
       .line = E + "--trace-window: 'x,1' is not START,LEN \\(simulated seconds after the stream's start, "
                   "START >= 0, LEN > 0\\)",
       .absent = {trace}});

  // ---- perftest flags
  add({.name = "ib_write_lat_size_zero", .args = {"ib_write_lat", "-s", "0", "--csv", csv},
       .line = E + "-s: '0' is out of range \\(perftest: 1\\.\\.2147483647 B\\)", .absent = {csv}});
  add({.name = "ib_write_lat_too_few_iterations", .args = {"ib_write_lat", "-n", "3"},
       .line = E + "-n: 3 is out of range \\(perftest: 5\\.\\.100000000\\)"});
  add({.name = "ib_write_bw_zero_qps", .args = {"ib_write_bw", "-q", "0"},
       .line = E + "-q: 0 is out of range \\(perftest: 1\\.\\.16384\\)"});
  add({.name = "ib_write_bw_tx_depth_not_a_number", .args = {"ib_write_bw", "-t", "abc"},
       .line = E + "-t: 'abc' is not an integer"});
  add({.name = "ib_write_lat_unsupported_flag", .args = {"ib_write_lat", "-Z"},
       .line = E + "-Z \\(--server\\): perftest flag not supported by hcasim ib_write_lat"});
  // The READ and atomic tools: perftest's refusals by verb (perftest_parameters.c parser(),
  // change_conn_type, force_dependecies).
  add({.name = "ib_read_lat_inline", .args = {"ib_read_lat", "-I", "64", "--csv", csv},
       .line = E + "-I: perftest's inline feature is not available on READ/atomic tests", .absent = {csv}});
  add({.name = "ib_read_bw_outs_not_a_number", .args = {"ib_read_bw", "-o", "many"},
       .line = E + "-o: 'many' is not an integer"});
  add({.name = "ib_send_lat_outs", .args = {"ib_send_lat", "-o", "4"},
       .line = E + "-o: outstanding reads are for perftest's READ and atomic tests only"});
  add({.name = "ib_read_bw_uc", .args = {"ib_read_bw", "-c", "UC"},
       .line = E + "-c UC: UC connection not possible in READ/atomic tests \\(perftest\\)"});
  add({.name = "ib_atomic_lat_bad_type", .args = {"ib_atomic_lat", "-A", "SWAP", "--csv", csv},
       .line = E + "-A: 'SWAP' is not an atomic type \\(perftest takes CMP_AND_SWAP, FETCH_AND_ADD\\)",
       .absent = {csv}});
  add({.name = "ib_atomic_bw_size", .args = {"ib_atomic_bw", "-s", "16"},
       .line = E + "-s: 16 B: perftest's atomic tests move 8 B \\(message size cannot be changed for atomic tests\\)"});
  add({.name = "ib_atomic_lat_all", .args = {"ib_atomic_lat", "-a"},
       .line = E + "-a: perftest's atomic tests have one size, 8 B .*"});
  add({.name = "ib_read_lat_atomic_type", .args = {"ib_read_lat", "-A", "CMP_AND_SWAP"},
       .line = E + "-A: the atomic type is for ib_atomic_lat and ib_atomic_bw only"});
  add({.name = "ib_read_lat_explain", .args = {"ib_read_lat", "--explain"},
       .line = E + "--explain: the latency stages are ib_write_lat's; ib_read_lat has none .*"});
  add({.name = "ib_send_lat_rx_depth_zero", .args = {"ib_send_lat", "-r", "0"},
       .line = E + "-r: 0 is out of range \\(perftest: 1\\.\\.16384\\)"});
  // -e: parser() case 'e' refuses the WRITE verb, force_dependecies the duration mode.
  add({.name = "ib_write_lat_events", .args = {"ib_write_lat", "-e", "--csv", csv},
       .line = E + "-e: perftest's events feature is not available on WRITE tests", .absent = {csv}});
  // -c: change_conn_type() takes UD on the SEND verb only.
  add({.name = "ib_read_lat_ud", .args = {"ib_read_lat", "-c", "UD", "--csv", csv},
       .line = E + "-c UD: UD connection only possible in SEND tests \\(perftest\\)", .absent = {csv}});
  add({.name = "ib_send_lat_events_duration", .args = {"ib_send_lat", "--events", "-D", "2", "--csv", csv},
       .line = E + "-e: perftest's duration mode \\(-D\\) does not work with completion events", .absent = {csv}});
  // -C, -U, -H: parser() takes them on the latency tests only.
  add({.name = "ib_read_bw_report_cycles", .args = {"ib_read_bw", "-C", "--csv", csv},
       .line = E + "-C: perftest's cycles report is for the latency tests only", .absent = {csv}});
  add({.name = "ib_send_bw_histogram", .args = {"ib_send_bw", "--report-histogrm"},
       .line = E + "--report-histogrm: perftest's histogram report is for the latency tests only"});
  add({.name = "ib_read_lat_multiple_qps", .args = {"ib_read_lat", "-q", "2"},
       .line = E + "-q: multiple QPs are for perftest's bw tests only \\(ib_read_lat has one QP\\)"});
  add({.name = "set_max_qp_rd_atom_zero", .args = {"ib_read_bw", "--set", "hca.max_qp_rd_atom=0"},
       .line = E + "--set hca\\.max_qp_rd_atom: .*"});
  // -b and -D/-f: parser() cases 'b', 'D', 'f' and force_dependecies' duration checks.
  add({.name = "ib_read_lat_bidirectional", .args = {"ib_read_lat", "-b", "--csv", csv},
       .line = E + "-b: perftest's bidirectional mode is for the bw tests only", .absent = {csv}});
  add({.name = "ib_write_bw_duration_not_a_number", .args = {"ib_write_bw", "-D", "1s"},
       .line = E + "-D: '1s' is not an integer"});
  add({.name = "ib_send_lat_duration_negative", .args = {"ib_send_lat", "--duration=-5"},
       .line = E + "--duration: -5 is not a positive number of seconds \\(perftest: Duration period must be positive\\)"});
  add({.name = "ib_write_bw_duration_huge", .args = {"ib_write_bw", "-D", "99999999999"},
       .line = E + "-D: 99999999999 is out of range \\(perftest stores it in an int: .*\\)"});
  add({.name = "ib_read_bw_margin_negative", .args = {"ib_read_bw", "-D", "10", "-f", "-1"},
       .line = E + "-f: -1 is not a number of seconds \\(perftest: Margin must be non-negative\\)"});
  add({.name = "ib_atomic_lat_margin_too_long", .args = {"ib_atomic_lat", "-D", "6", "--margin", "3"},
       .line = E + "-f: a margin of 3 s on each side leaves nothing to measure in 6 s \\(perftest: DURATION > 2\\*MARGIN\\)"});
  add({.name = "ib_write_lat_margin_without_duration", .args = {"ib_write_lat", "-f", "3", "--csv", csv},
       .line = E + "-f: a margin of 3 s on each side leaves nothing to measure in perftest's default 5 s .*",
       .absent = {csv}});
  add({.name = "ib_read_lat_duration_events", .args = {"ib_read_lat", "-D", "2", "-e"},
       .line = E + "-e: perftest's duration mode \\(-D\\) does not work with completion events"});
  add({.name = "ib_send_bw_duration_csv", .args = {"ib_send_bw", "-D", "2", "--csv", csv},
       .line = E + "--csv: hcasim reports a -D run in perftest's text only \\(no --csv\\)", .absent = {csv}});
  add({.name = "ib_write_lat_bad_columns", .args = {"ib_write_lat", "--columns", "wide", "--csv", csv},
       .line = E + "--columns: 'wide' is not classic or extended", .absent = {csv}});

  // ---- the libibverbs examples (hcasim ibv_*_pingpong): rc_pingpong.c main()'s flags; the values
  // the programs would print their usage for or fail on later, refused with the flag's name
  add({.name = "rc_pingpong_mtu_not_ib", .args = {"ibv_rc_pingpong", "-m", "1000", "host"},
       .line = E + "-m: 1000 is not an IB MTU \\(256, 512, 1024, 2048 or 4096\\)"});
  add({.name = "rc_pingpong_mtu_above_port", .args = {"ibv_rc_pingpong", "-m", "4096", "host"},
       .line = E + "-m: 4096 B is above the client's port MTU 2048 B \\(ib\\.mtu\\)"});
  add({.name = "rc_pingpong_size_not_a_number", .args = {"ibv_rc_pingpong", "-s", "4k"},
       .line = E + "-s: '4k' is not a number"});
  add({.name = "rc_pingpong_size_zero", .args = {"ibv_rc_pingpong", "--size=0"},
       .line = E + "--size: 0 is out of range \\(1\\.\\.4294967295\\)"});
  add({.name = "rc_pingpong_size_negative", .args = {"ibv_rc_pingpong", "-s", "-1"},
       .line = E + "-s: '-1' is not a number"});
  add({.name = "rc_pingpong_iters_zero", .args = {"ibv_rc_pingpong", "-n", "0"},
       .line = E + "-n: 0 is out of range \\(1\\.\\.2147483647\\)"});
  add({.name = "rc_pingpong_rx_depth_zero", .args = {"ibv_rc_pingpong", "-r", "0"},
       .line = E + "-r: 0 is out of range \\(1\\.\\.2147483647\\)"});
  add({.name = "rc_pingpong_rx_depth_above_hca", .args = {"ibv_rc_pingpong", "-r", "20000"},
       .line = E + "-r: 20000 receives are above the client's hca\\.max_qp_wr 16351"});
  add({.name = "rc_pingpong_port_above_65535", .args = {"ibv_rc_pingpong", "-p", "70000"},
       .line = E + "-p: 70000 is out of range \\(0\\.\\.65535\\)"});
  add({.name = "rc_pingpong_ib_port_two", .args = {"ibv_rc_pingpong", "-i", "2"},
       .line = E + "-i: 2: the simulated HCA has one port, port 1"});
  add({.name = "rc_pingpong_sl", .args = {"ibv_rc_pingpong", "-l", "16"},
       .line = E + "-l: 16 is not a service level \\(0\\.\\.15\\)"});
  add({.name = "rc_pingpong_gid_index", .args = {"ibv_rc_pingpong", "-g", "3"},
       .line = E + "-g: 3: the simulated port has one GID, index 0"});
  add({.name = "rc_pingpong_odp", .args = {"ibv_rc_pingpong", "-o"},
       .line = E + "-o \\(--odp\\): on-demand paging is not simulated by hcasim ibv_rc_pingpong"});
  add({.name = "rc_pingpong_device_memory", .args = {"ibv_rc_pingpong", "--dm"},
       .line = E + "--dm: device memory is not simulated by hcasim ibv_rc_pingpong"});
  add({.name = "rc_pingpong_unknown_flag", .args = {"ibv_rc_pingpong", "-q", "4"},
       .line = E + "unknown option -q \\(ibv_rc_pingpong -h lists them\\)"});
  add({.name = "rc_pingpong_ambiguous", .args = {"ibv_rc_pingpong", "--s", "4"},
       .line = E + "--s: ambiguous option \\(--seed, --set, --size, --sl, --stats\\)"});
  add({.name = "rc_pingpong_two_servers", .args = {"ibv_rc_pingpong", "a", "b"},
       .line = E + "unexpected argument 'b' \\(ibv_rc_pingpong takes one servername, 'a' is already given\\)"});
  add({.name = "rc_pingpong_missing_value", .args = {"ibv_rc_pingpong", "-n"},
       .line = E + "-n: missing value"});
  add({.name = "rc_pingpong_other_device", .args = {"ibv_rc_pingpong", "-d", "mlx5_0"},
       .line = E + "-d mlx5_0: the simulated host has one device, mlx4_0 \\(hca\\.device of platform "
                   "connectx-ddr-pcie1x8\\)"});
  add({.name = "rc_pingpong_validate_too_big", .args = {"ibv_rc_pingpong", "-c", "-s", "100000000"},
       .line = E + "-s: 100000000 B: -c compares real bytes, at most 67108864 B per buffer here"});
  add({.name = "ud_pingpong_size_above_mtu", .args = {"ibv_ud_pingpong", "-s", "4096"},
       .line = E + "-s: 4096 B is larger than the client's port MTU 2048 B \\(ib\\.mtu\\): a UD message is one "
                   "datagram"});
  add({.name = "ud_pingpong_mtu_flag", .args = {"ibv_ud_pingpong", "-m", "1024"},
       .line = E + "unknown option -m \\(ibv_ud_pingpong -h lists them\\)"});
  add({.name = "uc_pingpong_odp", .args = {"ibv_uc_pingpong", "-o"},
       .line = E + "unknown option -o \\(ibv_uc_pingpong -h lists them\\)"});
  add({.name = "srq_pingpong_qps_above_rx_depth", .args = {"ibv_srq_pingpong", "-q", "32", "-r", "16"},
       .line = E + "rx_depth 16 is too small for 32 QPs -- must have at least one receive per QP\\."});
  add({.name = "srq_pingpong_too_many_qps", .args = {"ibv_srq_pingpong", "-q", "4096", "-r", "8192"},
       .line = E + "num_qp 4096 must be less than 255"});
  add({.name = "srq_pingpong_no_qp", .args = {"ibv_srq_pingpong", "-q", "0"},
       .line = E + "-q 0: no QP would send or receive; ibv_srq_pingpong would poll its CQ for ever"});
  add({.name = "srq_pingpong_rx_depth_not_a_number", .args = {"ibv_srq_pingpong", "-r", "1e3"},
       .line = E + "-r: '1e3' is not a number"});
  add({.name = "srq_pingpong_cq_too_big", .args = {"ibv_srq_pingpong", "-r", "4090"},
       .line = E + "-r: a CQ of 4090 \\+ 16 entries is above the client's hca\\.cq_entries 4096"});

  // ---- --set
  add({.name = "set_unknown_key", .args = {"netperf", "--set", "sdp.nosuch=1", "--csv", csv},
       .line = E + "--set sdp\\.nosuch: unknown platform parameter \\(platform connectx-ddr-pcie1x8\\)",
       .absent = {csv}});
  add({.name = "set_bad_value", .args = {"netperf", "--set", "sdp.zcopy_thresh=abc"},
       .line = E + "--set sdp\\.zcopy_thresh: bad value 'abc' for an integer in B"});
  add({.name = "set_negative_rate", .args = {"netperf", "-l", "0.01", "--set", "cpu.copy_tx_rate=-1", "--csv", csv},
       .line = E + "--set cpu\\.copy_tx_rate: -1 B/ns must be > 0 \\(platform connectx-ddr-pcie1x8\\)",
       .absent = {csv}});
  add({.name = "set_not_an_assignment", .args = {"netperf", "--set", "=3"},
       .line = E + "--set '=3': expected section\\.key=value"});
  add({.name = "set_newline_in_value", .args = {"netperf", "--set", "cpu.syscall=1\n2"},
       .line = E + "--set cpu\\.syscall: bad value '1 2' for a number in cycles"});
  // The zx1 hosts' PCI-X bus in the SDP path (model/bus.h): no BlueFlame there, PCI-X clocks only.
  add({.name = "set_blueflame_on_pcix",
       .args = {"netperf", "-l", "0.01", "--platform", "zx1-rx2600-pcix", "--set", "hca.blueflame=on", "--csv", csv},
       .line = E + "--set hca\\.blueflame: BlueFlame needs a PCIe slot; this HCA sits on PCI-X 133 MHz 64-bit "
                   "\\(platform zx1-rx2600-pcix\\)",
       .absent = {csv}});
  // InfiniHost III has no BlueFlame registers (nor libmthca a BlueFlame path): the device says so.
  add({.name = "set_blueflame_on_infinihost",
       .args = {"ib_write_lat", "-n", "200", "--platform", "infinihost3-pcie1x8", "--set", "hca.blueflame=on", "--csv",
                csv},
       .line = E + "--set hca\\.blueflame: BlueFlame needs a ConnectX HCA \\(mlx4 or later\\); mthca0 is an InfiniHost "
                   "\\(ib_mthca\\) \\(platform infinihost3-pcie1x8\\)",
       .absent = {csv}});
  add({.name = "set_pcix_clock_not_a_mode",
       .args = {"netperf", "-l", "0.01", "--platform", "zx1-rx2600-pcix", "--set", "pcix.clock_mhz=120", "--csv", csv},
       .line = E + "--set pcix\\.clock_mhz: 120 is not 66, 100 or 133 \\(platform zx1-rx2600-pcix\\)", .absent = {csv}});
  // 2^32 + 8 lanes wrapped to a valid x8 when the value was narrowed before its range check
  // (the schema's choices, model/pcie.cpp, are checked on the int64 value).
  add({.name = "set_integer_past_2_to_the_32",
       .args = {"netperf", "-l", "0.01", "--set", "pcie.lanes=4294967304", "--csv", csv},
       .line = E + "--set pcie\\.lanes: 4294967304 is not 1, 2, 4, 8, 12, 16 or 32 \\(platform connectx-ddr-pcie1x8\\)",
       .absent = {csv}});
  // host.cpus disagreeing with [topology] names the key the user set, not the file's line.
  add({.name = "set_host_cpus_against_topology",
       .args = {"netperf", "-l", "0.01", "--platform", "zx1-rx2600-pcix", "--set", "host.cpus=1", "--csv", csv},
       .line = E + "--set host\\.cpus: sockets x cores_per_socket = 2 x 1 = 2 but host\\.cpus = 1 "
                   "\\(platform zx1-rx2600-pcix\\)",
       .absent = {csv}});
  // A model validator's error names the --set or FILE:LINE of the key too (Platform::fail_from).
  add({.name = "set_pcie_mrrs_not_a_power_of_two",
       .args = {"netperf", "-l", "0.01", "--set", "pcie.max_read_request=3000", "--csv", csv},
       .line = E + "--set pcie\\.max_read_request: 3000 is not a power of two in 128\\.\\.4096 "
                   "\\(platform connectx-ddr-pcie1x8\\)",
       .absent = {csv}});
  add({.name = "platform_ib_mtu_not_an_ib_mtu",
       .args = {"netperf", "-l", "0.01", "--platform", "@DIR@/p.toml", "--csv", csv},
       .files = {{"p.toml", substitute(shipped_platform(), "mtu = { value = 2048", "mtu = { value = 3000")}},
       .line = E + "@DIR@/p\\.toml:[0-9]+: ib\\.mtu: 3000 is not 256, 512, 1024, 2048 or 4096",
       .absent = {csv}});

  // ---- platform files: the shipped connectx-ddr-pcie1x8 with one line changed
  auto platform_case = [&](const std::string& name, const std::string& section, const std::string& key,
                           const std::string& replacement, const std::string& what) {
    int line = 0;
    const std::string text = edited_platform(section, key, replacement, line);
    add({.name = name, .args = {"netperf", "-l", "0.01", "--platform", "@DIR@/p.toml", "--csv", csv},
         .files = {{"p.toml", text}},
         .line = E + "@DIR@/p\\.toml:" + std::to_string(line) + ":" + what, .absent = {csv}});
  };
  platform_case("platform_toml_syntax", "cpu", "syscall", "syscall = { value = 150 150, unit = \"cycles\", source = \"x\" }",
                "25: Error while parsing inline table: expected comma or closing '\\}', saw '1'");
  platform_case("platform_missing_unit", "cpu", "syscall", "syscall = { value = 150, source = \"x\" }",
                " cpu\\.syscall: missing 'unit' \\(use \"\" for counts and flags\\)");
  platform_case("platform_missing_source", "cpu", "syscall", "syscall = { value = 150, unit = \"cycles\" }",
                " cpu\\.syscall: missing 'source'");
  platform_case("platform_blank_source", "cpu", "syscall", "syscall = { value = 150, unit = \"cycles\", source = \" \" }",
                " cpu\\.syscall: empty source \\(say where the number comes from\\)");
  platform_case("platform_wrong_unit", "cpu", "syscall", "syscall = { value = 150, unit = \"us\", source = \"x\" }",
                " cpu\\.syscall: unit 'us', expected 'cycles'");
  platform_case("platform_negative_value", "cpu", "syscall", "syscall = { value = -3, unit = \"cycles\", source = \"x\" }",
                " cpu\\.syscall: -3 cycles must be >= 0");
  platform_case("platform_nan_value", "cpu", "syscall", "syscall = { value = nan, unit = \"cycles\", source = \"x\" }",
                " cpu\\.syscall: .*nan.*");
  platform_case("platform_string_value", "cpu", "syscall",
                "syscall = { value = \"fast\", unit = \"cycles\", source = \"x\" }",
                " cpu\\.syscall: expected a number, found a string \"fast\"");
  platform_case("platform_unknown_field", "cpu", "syscall",
                "syscall = { value = 150, unit = \"cycles\", source = \"x\", error = 0.1 }",
                " cpu\\.syscall: unknown field 'error' \\(a parameter has value, unit and source\\)");
  platform_case("platform_unknown_key", "cpu", "syscall",
                "syscall = { value = 150, unit = \"cycles\", source = \"x\" }\n"
                "sycsall = { value = 150, unit = \"cycles\", source = \"a typo\" }",
                "");  // the line after: fixed below
  v.back().line = E + "@DIR@/p\\.toml:[0-9]+: cpu\\.sycsall: unknown parameter \\(hcasim does not use it\\)";
  // A value that overflowed the simulated clock aborted SimGrid (exit 134, a backtrace).
  platform_case("platform_infinite_cost", "cpu", "syscall", "syscall = { value = inf, unit = \"cycles\", source = \"x\" }",
                " cpu\\.syscall: expected a finite number, found inf");
  platform_case("platform_rate_too_small", "cpu", "copy_tx_rate",
                "copy_tx_rate = { value = 1e-308, unit = \"B/ns\", source = \"x\" }",
                " cpu\\.copy_tx_rate: 1e-308 B/ns is out of range \\(1e-12\\.\\.1e12\\)");
  add({.name = "set_rate_too_small", .args = {"netperf", "-l", "0.01", "--set", "cpu.copy_tx_rate=1e-308", "--csv", csv},
       .line = E + "--set cpu\\.copy_tx_rate: 1e-308 B/ns is out of range \\(1e-12\\.\\.1e12\\) \\(platform "
                   "connectx-ddr-pcie1x8\\)",
       .absent = {csv}});
  platform_case("platform_out_of_range", "host", "cpus", "cpus = { value = 100000, unit = \"\", source = \"x\" }",
                " host\\.cpus: 100000 is outside 1\\.\\.1024");
  // The missing parameter named the platform, not the file to fix.
  add({.name = "platform_missing_parameter", .args = {"netperf", "-l", "0.01", "--platform", "@DIR@/p.toml"},
       .files = {{"p.toml", substitute(shipped_platform(), "\nsyscall = {", "\n# syscall = {")}},
       .line = E + "@DIR@/p\\.toml: missing parameter cpu\\.syscall \\(platform connectx-ddr-pcie1x8\\)"});
  add({.name = "platform_not_found", .args = {"netperf", "--platform", "nosuch", "--csv", csv},
       .line = E + "--platform nosuch: no such platform file or name \\(looked in .*\\)", .absent = {csv}});
  // A FIFO or a directory named no platform ("no such platform file or name"): now it says what it is.
  add({.name = "platform_fifo", .args = {"netperf", "--platform", "@DIR@/p.fifo", "--csv", csv},
       .line = E + "--platform @DIR@/p\\.fifo: a FIFO, not a regular file \\(hcasim reads its inputs only from regular "
                   "files\\)",
       .absent = {csv}});
  v.back().fifos = {"p.fifo"};
  add({.name = "scenario_directory", .args = {"run", "@DIR@", "--csv", csv},
       .line = E + "@DIR@: a directory, not a regular file \\(hcasim reads its inputs only from regular files\\)",
       .absent = {csv}});
  add({.name = "platform_not_utf8", .args = {"netperf", "--platform", "@DIR@/p.toml"},
       .files = {{"p.toml", "\xff\xfe garbage\n"}},
       .line = E + "@DIR@/p\\.toml:1:1: Encountered invalid utf-8 sequence"});

  // ---- scenario files (hcasim run)
  auto scenario_case = [&](const std::string& name, const std::string& text, const std::string& what,
                           const std::string& csv_text = kGoodCsv) {
    add({.name = name, .args = {"run", "@DIR@/s.toml", "-j", "1", "--csv", csv},
         .files = {{"s.toml", text}, {"ref.csv", csv_text}}, .line = E + "@DIR@/s\\.toml:" + what, .absent = {csv}});
  };
  scenario_case("scenario_bad_size_in_command", scenario("", "netperf -l 1 -- -m 12Q"),
                "10: point 1: command: -m: bad size '12Q' .*");
  scenario_case("scenario_unknown_key", scenario("bogus = 3\n"), "17: point 1: unknown key 'bogus'");
  scenario_case("scenario_point_without_table", scenario("\n[[point]]\n"), "18: point 2: missing key 'table'");
  scenario_case("scenario_unterminated_quote", scenario("", "netperf -l 1 \\\"oops"),
                "10: point 1: command: unterminated double quote in: netperf -l 1 \"oops");
  scenario_case("scenario_not_a_netperf_command", scenario("", "rm -rf /"),
                "10: point 1: command must start with netperf, ib_\\{write,send,read,atomic\\}_\\{lat,bw\\} or "
                "ibv_\\{rc,uc,ud,srq\\}_pingpong \\(or a path to one\\)");
  scenario_case("scenario_negative_tolerance", substitute(scenario(""), "throughput = 0.15", "throughput = -1"),
                "7: tolerance: 'throughput' must be > 0");
  scenario_case("scenario_gated_not_a_boolean", substitute(scenario(""), "gated = true", "gated = \"yes\""),
                "16: point 1: 'gated' must be true or false");
  scenario_case("scenario_toml_syntax", substitute(scenario(""), "name = \"hostile\"", "name = "),
                "1: Error while parsing key-value pair: expected value, saw '\\\\n'");
  scenario_case("scenario_set_unknown_key", substitute(scenario(""), "sdp.zcopy_thresh=0", "sdp.nosuch=0"),
                "10: point 1: --set sdp\\.nosuch: unknown platform parameter .*");
  // A value the model rejects is found before any run (sim::read_host_params in the parent),
  // at the point's FILE:LINE.
  scenario_case("scenario_set_fails_the_model_check",
                substitute(scenario(""), "sdp.zcopy_thresh=0", "pcie.max_read_request=3000"),
                "10: point 1: --set pcie\\.max_read_request: 3000 is not a power of two in 128\\.\\.4096 "
                "\\(platform connectx-ddr-pcie1x8\\)");
  // What only the child checks (-T against the platform's CPUs): one line naming the point's
  // FILE:LINE, the child's error quoted once and its note (-H ignored) left out.
  add({.name = "scenario_command_fails_in_the_child",
       .args = {"run", "@DIR@/s.toml", "-j", "1", "--csv", csv},
       .files = {{"s.toml", scenario("", "netperf -l 1 -H peer -T 9,9 -- -m 64K")}, {"ref.csv", kGoodCsv}},
       .line = E + "@DIR@/s\\.toml:10: point 1 \\(T SDP -m 64K\\) failed \\(exit status 2\\): -T: local CPU 9 does "
                   "not exist \\(connectx-ddr-pcie1x8 has 8 CPUs\\)",
       .absent = {csv}});
  // An output over an input replaced it: the scenario became its own results CSV.
  add({.name = "run_csv_over_its_scenario",
       .args = {"run", "@DIR@/s.toml", "--csv", "@DIR@/s.toml"},
       .files = {{"s.toml", scenario("")}, {"ref.csv", kGoodCsv}},
       .line = E + "--csv @DIR@/s\\.toml: it is an input of this run \\(@DIR@/s\\.toml\\), not overwritten"});
  add({.name = "netperf_csv_over_its_platform",
       .args = {"netperf", "-l", "0.01", "--platform", "@DIR@/p.toml", "--csv", "@DIR@/p.toml"},
       .files = {{"p.toml", shipped_platform()}},
       .line = E + "--csv @DIR@/p\\.toml: it is an input of this run \\(@DIR@/p\\.toml\\), not overwritten"});
  add({.name = "scenario_unknown_name", .args = {"run", "nosuch", "--csv", csv},
       .line = E + "nosuch: no such scenario file or name \\(looked in .*\\)", .absent = {csv}});
  add({.name = "run_csv_twice", .args = {"run", "@DIR@/s.toml", "--csv", "@DIR@/a.csv", "--csv", "@DIR@/b.csv"},
       .files = {{"s.toml", scenario("")}, {"ref.csv", kGoodCsv}},
       .line = E + "--csv: given twice \\(@DIR@/a\\.csv, then @DIR@/b\\.csv\\): one run writes one --csv",
       .absent = {"@DIR@/a.csv", "@DIR@/b.csv"}});
  // -h in a point's command printed the usage in the child and left no results.
  scenario_case("scenario_command_asks_for_help", scenario("", "netperf -h -l 1 -- -m 64K"),
                "10: point 1: command: -h prints the usage and runs nothing");
  add({.name = "run_zero_jobs", .args = {"run", "-j", "0", "--csv", csv}, .line = E + "-j: '0' must be 1\\.\\.4096",
       .absent = {csv}});

  // ---- reference CSVs (named by a scenario point)
  const std::string header = "size,throughput_mbps,sd_local_us_per_kb,sd_remote_us_per_kb\n";
  scenario_case("csv_cell_not_a_number", scenario(""),
                "10: point 1: reference: @DIR@/ref\\.csv:2: column throughput_mbps: 'abc' is not a number",
                header + "64K,abc,1.0,1.2\n");
  scenario_case("csv_unterminated_quote", scenario(""), "10: point 1: reference: @DIR@/ref\\.csv:2: unterminated quote",
                header + "\"64K,8000,1.0,1.2\n");
  scenario_case("csv_match_selects_two_rows", scenario(""),
                "10: point 1: reference: @DIR@/ref\\.csv: match \\{size=64K\\} selects 2 rows \\(must select exactly one\\)",
                header + "64K,8000,1.0,1.2\n64K,9000,1.0,1.2\n");
  // A short row read as unmeasured columns, and a bad cell did not say which line.
  scenario_case("csv_row_too_short", scenario(""), "10: point 1: reference: @DIR@/ref\\.csv:3: 3 fields, the header has 4",
                header + "32K,7000,1.0,1.2\n64K,8000,1.0\n");
  // A negative measurement was compared as if measured (a relative error against -8000).
  scenario_case("csv_negative_measurement", scenario(""),
                "10: point 1: reference: @DIR@/ref\\.csv:2: column throughput_mbps: measured -8000 \\(a measurement "
                "must be > 0; leave the cell empty when it was not measured\\)",
                header + "64K,-8000,1.0,1.2\n");
  // A misspelt throughput column, or a row with every figure empty: a gated point that
  // compared nothing passed.
  scenario_case("csv_no_throughput_column", scenario(""),
                "10: point 1: reference: @DIR@/ref\\.csv: no column 'throughput_mbps'",
                "size,throughput_mbs,sd_local_us_per_kb,sd_remote_us_per_kb\n64K,8000,1.0,1.2\n");
  scenario_case("csv_nothing_measured", scenario(""),
                "10: point 1: reference: @DIR@/ref\\.csv:2: no figure measured \\(throughput_mbps, "
                "sd_\\*_us_per_kb and util_\\*_pct are all empty\\): the point would compare nothing",
                header + "64K,,,\n");
  scenario_case("csv_column_twice", scenario(""), "10: point 1: reference: @DIR@/ref\\.csv:1: column 'size' twice",
                "size,throughput_mbps,size,sd_remote_us_per_kb\n64K,8000,64K,1.2\n");
  scenario_case("csv_empty", scenario(""), "10: point 1: reference: @DIR@/ref\\.csv: empty file", "");
  add({.name = "csv_missing", .args = {"run", "@DIR@/s.toml", "--csv", csv}, .files = {{"s.toml", scenario("")}},
       .line = E + "@DIR@/s\\.toml:10: point 1: reference: @DIR@/ref\\.csv: cannot read \\(No such file or directory\\)",
       .absent = {csv}});
  // A reference that never ends filled memory (/dev/zero: 17.7 GB in 60 s), a FIFO blocked for
  // ever: only a regular file is read, and at most 64 MiB of it.
  const std::string not_file = ", not a regular file \\(hcasim reads its inputs only from regular files\\)";
  auto reference_case = [&](const std::string& name, const std::string& file, const std::string& what) {
    add({.name = name, .args = {"run", "@DIR@/s.toml", "-j", "1", "--csv", csv},
         .files = {{"s.toml", scenario("", "netperf -l 1 -- -m 64K", file)}},
         .line = E + "@DIR@/s\\.toml:10: point 1: reference: " + regex_escape(file) + ": " + what, .absent = {csv}});
  };
  reference_case("csv_reference_dev_zero", "/dev/zero", "a character device" + not_file);
  reference_case("csv_reference_fifo", "@DIR@/ref.fifo", "a FIFO" + not_file);
  v.back().fifos = {"ref.fifo"};
  reference_case("csv_reference_directory", "@DIR@", "a directory" + not_file);
  reference_case("csv_reference_too_large", "@DIR@/big.csv", "larger than 64 MiB, the most hcasim reads of an input file");
  v.back().sparse = {{"big.csv", (uint64_t{64} << 20) + 1}};

  // ---- run files (pasted netperf/perftest output), read by hcasim calibrate
  const std::string fitted = "@DIR@/fitted.toml", errors = "@DIR@/errors.csv";
  auto run_file_case = [&](const std::string& name, const std::string& text, const std::string& what) {
    add({.name = name,
         .args = {"calibrate", "--platform", "connectx-ddr-pcie1x8", "--fit", "cpu.copy_tx_rate", "@DIR@/runs.txt", "-o",
                  fitted, "--csv", errors},
         .files = {{"runs.txt", text}}, .line = E + "@DIR@/runs\\.txt" + what, .absent = {fitted, errors}});
  };
  const std::string cmd = "# netperf -C -c -P 0 -t TCP_STREAM -H 10.0.0.2 -l 60 -- -m 64K\n";
  run_file_case("runfile_throughput_not_a_number", cmd + " 87380 16384 65536 60.00 7106.72x 13.32 14.87 1.228 1.370\n",
                ":2: netperf result row: column 5 \\(Throughput\\) '7106\\.72x' is not a number");
  run_file_case("runfile_row_too_short", cmd + " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228\n",
                ":2: netperf result row has 8 fields, expected 9 .*");
  run_file_case("runfile_truncated_paste", cmd, ":1: netperf output ends before its result row");
  run_file_case("runfile_bad_size_in_command",
                "# netperf -C -c -P 0 -l 60 -- -m 12Q\n 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n",
                ":1: netperf: -m: bad size '12Q' .*");
  run_file_case("runfile_negative_measurement", cmd + " 87380 16384 65536 60.00 -7106.72 13.32 14.87 1.228 1.370\n",
                ":1: measured throughput is -7106\\.72: calibrate compares relative errors and needs a measured value > 0");
  run_file_case("runfile_zcopy_thresh_not_a_number",
                "# echo abc > /sys/module/ib_sdp/sdp_zcopy_thresh\n" + cmd +
                    " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n",
                ":1: sdp_zcopy_thresh: 'abc' is not a whole number");
  // A directive's platform key is checked where the platform is loaded, which blamed the
  // command it applies to: the error names the directive's line.
  const std::string row = " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n";
  run_file_case("runfile_directive_unknown_key", "# hcasim: --set nosuch.key=3\n" + cmd + row,
                ":1: hcasim directive: --set nosuch\\.key: unknown platform parameter \\(platform "
                "connectx-ddr-pcie1x8\\)");
  run_file_case("runfile_directive_out_of_range", "# hcasim: --set hca.qp_wqe_time=1e9\n" + cmd + row,
                ":1: hcasim directive: --set hca\\.qp_wqe_time: 1000000000 ns is out of range \\(0\\.\\.100000\\) "
                "\\(platform connectx-ddr-pcie1x8\\)");
  add({.name = "compare_directive_bad_value", .args = {"compare", "@DIR@/runs.txt", "--csv", csv},
       .files = {{"runs.txt", "# hcasim: --set hca.qp_wqe_time=abc\n" + cmd + row}},
       .line = E + "@DIR@/runs\\.txt:1: hcasim directive: --set hca\\.qp_wqe_time: bad value 'abc' for a number in ns",
       .absent = {csv}});
  add({.name = "compare_directive_no_such_platform", .args = {"compare", "@DIR@/runs.txt", "--csv", csv},
       .files = {{"runs.txt", "# hcasim: --platform nosuch\n" + cmd + row}},
       .line = E + "@DIR@/runs\\.txt:1: --platform nosuch: no such platform file or name \\(looked in .*\\)",
       .absent = {csv}});
  // compare's own --set is the command line's, not the run file's.
  add({.name = "compare_set_unknown_key", .args = {"compare", "@DIR@/runs.txt", "--set", "nosuch.key=1", "--csv", csv},
       .files = {{"runs.txt", cmd + row}},
       .line = E + "--set nosuch\\.key: unknown platform parameter \\(platform connectx-ddr-pcie1x8\\)",
       .absent = {csv}});
  run_file_case("runfile_perftest_cell_not_a_number",
                "# ib_write_lat -s 2 -n 1000\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                " 2 1000 1.0 abc 1.2\n",
                ":3: perftest row: column 4 \\(t_max\\[usec\\]\\) 'abc' is not a number");
  run_file_case("runfile_perftest_duration",
                "# ib_write_lat -D 5\n #bytes        #iterations       t_avg[usec]    tps average\n"
                " 2       1000000            1.40           356654.00\n",
                ":1: ib_write_lat: -D: a duration run is not compared from a run file .*");
  run_file_case("runfile_binary", std::string("\x00\x01\xff\n", 4), ": no netperf, perftest or pingpong run in it");
  // Contradictions between a command and its output were simulated (the 64K command compared
  // with a 32768 B row), dropped (a second row) or found only after the simulation (a latency
  // row of another size): each is refused at its line before any simulation.
  run_file_case("runfile_row_size_differs_from_m", cmd + " 87380 16384 32768 60.00 7106.72 13.32 14.87 1.228 1.370\n",
                ":2: netperf result row: Send Message Size 32768 differs from the command's -m 65536 \\(line 1\\)");
  run_file_case("runfile_second_netperf_row",
                cmd + " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n"
                      " 87380 16384 65536 60.00 7206.72 13.32 14.87 1.228 1.370\n",
                ":3: a second netperf result row under the command of line 1 \\(the first is line 2\\): repeat the "
                "command line before each run");
  const std::string lat_header = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n";
  run_file_case("runfile_latency_row_size_differs_from_s",
                "# ib_write_lat -s 2 -n 1000\n" + lat_header + " 4 1000 1.0 2.0 1.2\n",
                ":3: perftest row: 4 B differs from the command's -s 2 \\(line 1\\)");
  run_file_case("runfile_latency_row_not_an_a_size",
                "# ib_write_lat -a -n 1000\n" + lat_header + " 2 1000 1.0 2.0 1.2\n 3 1000 1.0 2.0 1.2\n",
                ":4: perftest row: 3 B is not a size of the command's -a \\(line 1: powers of two, 2\\.\\.8388608\\)");
  run_file_case("runfile_second_latency_row_of_a_size",
                "# ib_write_lat -s 2 -n 1000\n" + lat_header + " 2 1000 1.0 2.0 1.2\n 2 1000 1.1 2.0 1.3\n",
                ":4: perftest row: a second row for 2 B \\(the first is line 3\\): repeat the command line before "
                "each run");
  run_file_case("runfile_help", "# netperf -h\n", ":1: netperf: -h / -V print the usage or version; no run to read");
  // perftest's tools are read as their own command lines read them: a tool hcasim does not
  // simulate, or a flag perftest refuses for that tool, is refused at the command's line.
  run_file_case("runfile_unknown_perftest_tool", "x\n# ib_read_dc_lat -s 2\n",
                ":2: ib_read_dc_lat: hcasim reads runs of netperf, ib_write_lat, ib_write_bw, ib_send_lat, ib_send_bw, "
                "ib_read_lat, ib_read_bw, ib_atomic_lat, ib_atomic_bw, ibv_rc_pingpong, ibv_uc_pingpong, "
                "ibv_ud_pingpong and ibv_srq_pingpong only");
  // A pingpong run: the two result lines, whose figures agree with the command.
  run_file_case("runfile_pingpong_no_result", "$ ibv_rc_pingpong -n 10 host\n  local address: ...\n",
                ":1: ibv_rc_pingpong output ends before its result lines .*");
  run_file_case("runfile_pingpong_iters", "$ ibv_rc_pingpong -n 10 host\n"
                "81920 bytes in 0.00 seconds = 3276.80 Mbit/sec\n20 iters in 0.00 seconds = 10.00 usec/iter\n",
                ":3: ibv_rc_pingpong: 20 iters, the command runs -n 10");
  run_file_case("runfile_pingpong_bad_flag", "$ ibv_ud_pingpong -m 1024 host\n",
                ":1: ibv_ud_pingpong: unknown option -m \\(ibv_ud_pingpong -h lists them\\)");
  run_file_case("runfile_atomic_size", "# ib_atomic_bw -s 64\n",
                ":1: ib_atomic_bw: -s: 64 B: perftest's atomic tests move 8 B .*");
  run_file_case("runfile_read_inline", "# ib_read_lat -I 64\n",
                ":1: ib_read_lat: -I: perftest's inline feature is not available on READ/atomic tests");
  run_file_case("runfile_bw_cycles", "# ib_read_bw -C\n",
                ":1: ib_read_bw: -C: perftest's cycles report is for the latency tests only");
  run_file_case("runfile_samples_without_report",
                "# ib_send_lat -n 12 -U\n" + lat_header + "#, usec\n1, 1.39\n",
                ":1: ib_send_lat output ends in its samples \\(-U / -H\\), before the results table");
  // calibrate read /dev/zero as a run file until memory ran out; a FIFO blocked it.
  auto run_path_case = [&](const std::string& name, const std::string& file, const std::string& what) {
    add({.name = name,
         .args = {"calibrate", "--platform", "connectx-ddr-pcie1x8", "--fit", "cpu.copy_tx_rate", file, "-o", fitted,
                  "--csv", errors},
         .line = E + regex_escape(file) + ": " + what, .absent = {fitted, errors}});
  };
  run_path_case("runfile_dev_zero", "/dev/zero", "a character device" + not_file);
  run_path_case("runfile_fifo", "@DIR@/runs.fifo", "a FIFO" + not_file);
  v.back().fifos = {"runs.fifo"};
  run_path_case("runfile_directory", "@DIR@", "a directory" + not_file);
  run_path_case("runfile_too_large", "@DIR@/runs.txt", "larger than 64 MiB, the most hcasim reads of an input file");
  v.back().sparse = {{"runs.txt", (uint64_t{64} << 20) + 1}};

  // ---- calibrate flags
  auto fit_case = [&](const std::string& name, const std::string& fit, const std::string& what) {
    add({.name = name,
         .args = {"calibrate", "--platform", "connectx-ddr-pcie1x8", "--fit", fit, "@DIR@/runs.txt", "-o", fitted},
         .files = {{"runs.txt", cmd + " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n"}},
         .line = E + "--fit " + regex_escape(fit) + ": " + what, .absent = {fitted}});
  };
  fit_case("calibrate_bounds_reversed", "cpu.copy_tx_rate=2:1", "the lower bound must be below the upper");
  fit_case("calibrate_lower_bound_zero", "cpu.copy_tx_rate=0:1", "the lower bound must be > 0");
  fit_case("calibrate_bound_nan", "cpu.copy_tx_rate=1:nan", "bounds must be LO:HI, two numbers");
  fit_case("calibrate_bounds_exclude_start", "cpu.copy_tx_rate=2:3", "the start 0\\.794 is outside \\[2, 3\\]");
  fit_case("calibrate_unknown_parameter", "cpu.nosuch", "platform connectx-ddr-pcie1x8 has no parameter cpu\\.nosuch");
  add({.name = "calibrate_output_twice",
       .args = {"calibrate", "--platform", "connectx-ddr-pcie1x8", "--fit", "cpu.copy_tx_rate", "@DIR@/runs.txt", "-o",
                "@DIR@/a.toml", "-o", fitted},
       .files = {{"runs.txt", cmd + " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n"}},
       .line = E + "-o: given twice \\(@DIR@/a\\.toml, then @DIR@/fitted\\.toml\\): one run writes one -o",
       .absent = {"@DIR@/a.toml", fitted}});
  // --platform twice was CLI11's "At Most 1 required but received 2"; the others kept the last.
  for (const auto& [flag, a, b] : std::vector<std::array<std::string, 3>>{{"--platform", "seed000", "seed001"},
                                                                          {"-j", "1", "2"},
                                                                          {"--max-evals", "1", "2"},
                                                                          {"--duration", "1", "2"},
                                                                          {"--iterations", "10", "20"}}) {
    std::vector<std::string> args = {"calibrate", "--fit", "cpu.copy_tx_rate", "@DIR@/runs.txt", "-o", fitted};
    if (flag != "--platform") args.insert(args.end(), {"--platform", "connectx-ddr-pcie1x8"});
    args.insert(args.end(), {flag, a, flag, b});
    std::string name = "calibrate_" + flag.substr(flag.find_first_not_of('-')) + "_twice";
    std::replace(name.begin(), name.end(), '-', '_');
    add({.name = name, .args = args,
         .files = {{"runs.txt", cmd + " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n"}},
         .line = E + flag + ": given twice \\(" + a + ", then " + b + "\\); give it once", .absent = {fitted}});
  }
  add({.name = "calibrate_bad_regex",
       .args = {"calibrate", "--platform", "connectx-ddr-pcie1x8", "--fit", "cpu.copy_tx_rate", "@DIR@/runs.txt:(", "-o",
                fitted},
       .files = {{"runs.txt", cmd + " 87380 16384 65536 60.00 7106.72 13.32 14.87 1.228 1.370\n"}},
       .line = E + "@DIR@/runs\\.txt:\\(: '\\(' is not a regular expression \\(.*\\)", .absent = {fitted}});

  // ---- validate
  add({.name = "validate_unknown_scenario", .args = {"validate", "nosuch", "--report", "@DIR@/report"},
       .line = E + "nosuch: no such scenario file or name \\(looked in .*\\)", .absent = {"@DIR@/report"}});
  add({.name = "validate_zero_jobs", .args = {"validate", "-j", "0", "--report", "@DIR@/report"},
       .line = E + "-j: '0' must be 1\\.\\.4096", .absent = {"@DIR@/report"}});

  // ---- the real-time programs' flags
  const std::string S = "hcasim-sdp-server: ", C = "hcasim-sdp-client: ";
  add({.name = "server_port_out_of_range", .prog = Prog::Server, .args = {"--device", "emu", "-p", "70000"},
       .line = S + "--port: '70000' is not a port \\(0-65535\\)"});
  add({.name = "server_port_not_a_number", .prog = Prog::Server, .args = {"--device", "emu", "-p", "abc"},
       .line = S + "--port: 'abc' is not a port \\(0-65535\\)"});
  add({.name = "server_empty_device", .prog = Prog::Server, .args = {"--device", "", "-p", "0"},
       .line = S + "--device: empty name"});
  add({.name = "server_bad_listen_address", .prog = Prog::Server, .args = {"--device", "emu", "-L", "1.2.3"},
       .line = S + "--local: '1\\.2\\.3' is not an IPv4 or IPv6 address"});
  // An address this machine lacks exited 1, as a runtime failure (TEST-NET-3, RFC 5737).
  add({.name = "server_listen_address_not_here", .prog = Prog::Server,
       .args = {"--device", "emu", "-L", "203.0.113.7", "-p", "0"},
       .line = S + "cannot listen on 203\\.0\\.113\\.7:0: .* \\(not an address of this machine\\)"});
  add({.name = "server_unknown_flag", .prog = Prog::Server, .args = {"--device", "emu", "--bogus"},
       .line = S + "The following argument was not expected: --bogus"});
  add({.name = "server_no_such_device", .prog = Prog::Server, .args = {"--device", "nosuch", "-p", "0"}, .status = 1,
       .line = S + ".*nosuch.*|" + S + "no RDMA device: .*"});
  add({.name = "client_port_zero", .prog = Prog::Client, .args = {"--device", "emu", "-p", "0"},
       .line = C + "-p: '0' is not a port \\(1-65535\\)"});
  add({.name = "client_length_not_a_number", .prog = Prog::Client, .args = {"--device", "emu", "-l", "abc"},
       .line = C + "-l: 'abc' is not a number"});
  add({.name = "client_fractional_byte_count", .prog = Prog::Client, .args = {"--device", "emu", "-l", "-1.5"},
       .line = C + "-l -1\\.5: a byte count must be a whole number"});
  add({.name = "client_send_size_too_big", .prog = Prog::Client, .args = {"--device", "emu", "--", "-m", "32M"},
       .line = C + "-m 33554432 / -M 33554432 bytes: at most 16777216 bytes per call"});
  add({.name = "client_simulator_option", .prog = Prog::Client, .args = {"--device", "emu", "--csv", csv},
       .line = C + "--csv: a simulator option; a real run uses the machine it runs on", .absent = {csv}});
  add({.name = "client_set_platform_key", .prog = Prog::Client, .args = {"--device", "emu", "--set", "cpu.syscall=1"},
       .line = C + "--set cpu\\.syscall=1: a real run sets only sdp\\.zcopy_thresh, fault\\.\\* and qp\\.\\* .*"});
  // A CPU this machine lacks exited 1, as a runtime failure; hcasim netperf's -T says 2.
  add({.name = "client_T_cpu_the_machine_lacks", .prog = Prog::Client, .args = {"--device", "emu", "-T", "4000"},
       .line = C + "-T 4000: cannot bind to CPU 4000: Invalid argument"});
  add({.name = "client_too_short_to_move_a_message", .prog = Prog::Client, .args = {"--device", "emu", "-l", "1e-300"},
       .line = C + "-l 1e-300: too short to move one message \\(under 1 ns\\); give a longer -l"});
  add({.name = "client_empty_device", .prog = Prog::Client, .args = {"--device", ""}, .line = C + "--device: empty name"});
  // A second --device, -p or -L kept the last silently.
  add({.name = "server_port_twice", .prog = Prog::Server, .args = {"--device", "emu", "-p", "0", "-p", "1"},
       .line = S + "-p: given twice \\(0, then 1\\); give it once"});
  add({.name = "server_local_twice", .prog = Prog::Server, .args = {"--device", "emu", "-L", "127.0.0.1", "--local", "::1"},
       .line = S + "-L: given twice \\(127\\.0\\.0\\.1, then ::1\\); give it once"});
  add({.name = "server_device_twice", .prog = Prog::Server, .args = {"--device", "emu", "--device", "mlx4_0"},
       .line = S + "--device: given twice \\(emu, then mlx4_0\\); give it once"});
  add({.name = "client_device_twice", .prog = Prog::Client, .args = {"--device", "emu", "--device=mlx4_0"},
       .line = C + "--device: given twice \\(emu, then mlx4_0\\); give it once"});
  add({.name = "client_port_twice", .prog = Prog::Client, .args = {"--device", "emu", "-p", "5", "-p6"},
       .line = C + "-p: given twice \\(5, then 6\\); give it once"});

  // ---- packets to a running hcasim-sdp-server --device emu
  const std::string peer = "hcasim-sdp-server: 127\\.0\\.0\\.1:[0-9]+: ";
  auto packet_case = [&](const std::string& name, std::vector<uint8_t> bytes, const std::string& what,
                         bool established = false) {
    add({.name = name, .prog = Prog::Packet, .line = what, .packet = {established, std::move(bytes)}});
  };
  packet_case("packet_length_too_short", {0, 0, 0, 3, 0xC0, 0, 0},
              peer + "malformed CM message: frame length 3 outside \\[16, [0-9]+\\]");
  packet_case("packet_length_too_long", {0xFF, 0xFF, 0xFF, 0xFF},
              peer + "malformed CM message: frame length 4294967295 outside \\[16, [0-9]+\\]");
  packet_case("packet_unknown_op", frame(0x99), peer + "malformed CM message: unknown op 0x99");
  packet_case("packet_reserved_bits", raw_frame(18, 0xC0, {0, 0, 0, 1, 0, 0}, 0x01000000),
              peer + "malformed CM message: CM REQ: reserved bits set");
  packet_case("packet_req_oversized_private_data", cm_req(std::vector<uint8_t>(200, 0)),
              peer + "malformed CM message: CM REQ: 200 payload bytes, at most 92 allowed");
  packet_case("packet_req_private_data_length_lies", cm_req(std::vector<uint8_t>(20, 0), 10),
              peer + "malformed CM message: CM REQ: private data length 10 but 20 bytes follow");
  packet_case("packet_req_garbage_hello", cm_req(std::vector<uint8_t>(92, 0xAB)),
              "hcasim-sdp-server: rejected the connection from 127\\.0\\.0\\.1:[0-9]+: BSDH: unknown MID 0xAB");
  packet_case("packet_rtu_instead_of_req", frame(0xC2), peer + "CM RTU where a CM REQ was expected");
  {
    std::vector<uint8_t> req = cm_req(good_hello());
    req.back() ^= 0x01;  // one bit of the ICRC
    packet_case("packet_req_bad_icrc", req, peer + "malformed CM message: bad ICRC");
  }
  packet_case("packet_truncated_then_close", {0, 0, 0, 100, 0xC0, 0, 0, 0, 0, 0},
              peer + "connection closed during connection setup");
  // After a good CM REQ / REP / RTU: the log named the test's failure but not the peer.
  packet_case("packet_established_unknown_op", frame(0x99),
              peer + "server: completion error .*\\(the QP went to ERROR: malformed packet from the peer: unknown op "
                     "0x99\\)",
              true);
  packet_case("packet_established_length_too_long", {0x7F, 0xFF, 0xFF, 0xFF},
              peer + "server: completion error .*\\(the QP went to ERROR: malformed packet from the peer: frame length "
                     "2147483647 outside \\[16, [0-9]+\\]\\)",
              true);
  packet_case("packet_established_garbage_bsdh", frame(0x04, std::vector<uint8_t>(40, 0xEE)),
              peer + "test aborted: server: BSDH: unknown MID 0xEE", true);
  packet_case("packet_established_bad_test_request", frame(0x04, sdp_data("NOTMAGIC" + std::string(24, '\0'))),
              peer + "test aborted: test request: bad magic \\(not an hcasim-sdp-client\\?\\)", true);
  packet_case("packet_established_rdma_write_bad_rkey",
              frame(0x0A, {0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 4, 'a', 'b', 'c', 'd'}),
              peer + "server: completion error .*\\(the QP went to ERROR: RDMA WRITE to \\[0x1000, \\+4\\) with rkey "
                     "0x1234: remote access violation: unknown key\\)",
              true);
  packet_case("packet_established_second_req", cm_req(good_hello()),
              peer + "server: completion error .*\\(the QP went to ERROR: CM REQ on an established connection\\)", true);
  return v;
}

std::string case_name(const ::testing::TestParamInfo<Case>& i) { return i.param.name; }

}  // namespace

INSTANTIATE_TEST_SUITE_P(Inputs, Hostile, ::testing::ValuesIn(cases()), case_name);
