// Platform-file loader (model/platform.h) and netperf size parsing (model/units.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include <fmt/format.h>

#include "model/params.h"
#include "model/platform.h"
#include "model/units.h"

namespace hcasim::model {
namespace {

// Line numbers below are those of this text (line 1 is "name = ...").
constexpr const char* kValid = R"(name = "tiny"
description = "a small test platform"

[pcie]
max_payload = { value = 128, unit = "B", source = "lspci -vv, seed 000" }
lane_rate = { value = 2.5, unit = "GT/s", source = "PCIe Base Spec 1.1, 4.2" }
ecrc = { value = false, unit = "", source = "lspci -vv" }

[host]
cpu = { value = "Xeon 5160", unit = "", source = "/proc/cpuinfo" }
copy_cost = { value = 3, unit = "ns/page", source = "fitted to seed 000" }

[hca.mmio]
wc = { value = true, unit = "", source = "driver default" }
)";

/// Expects `fn` to throw InputError whose what() is exactly `message`.
template <class Fn>
void expect_input_error(Fn fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "no InputError, expected: " << message;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

/// The value of `key` as the file or --set wrote it (the raw record: kValid's keys are not in
/// the schema, which only the typed readers consult).
int64_t int_of(const Platform& p, const std::string& key) { return std::get<int64_t>(p.param(key).value); }
double double_of(const Platform& p, const std::string& key) { return std::get<double>(p.param(key).value); }
bool bool_of(const Platform& p, const std::string& key) { return std::get<bool>(p.param(key).value); }
std::string string_of(const Platform& p, const std::string& key) { return std::get<std::string>(p.param(key).value); }

/// Expects `fn` to throw InputError whose what() starts with `prefix`.
template <class Fn>
void expect_input_error_prefix(Fn fn, const std::string& prefix) {
  try {
    fn();
    ADD_FAILURE() << "no InputError, expected prefix: " << prefix;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, prefix.size()), prefix) << e.what();
  }
}

TEST(Platform, ParsesValidFile) {
  const Platform p = Platform::parse(kValid, "plat/tiny.toml");
  EXPECT_EQ(p.name(), "tiny");
  ASSERT_EQ(p.params().size(), 6u);

  EXPECT_EQ(int_of(p, "pcie.max_payload"), 128);
  EXPECT_DOUBLE_EQ(double_of(p, "pcie.lane_rate"), 2.5);
  EXPECT_FALSE(bool_of(p, "pcie.ecrc"));
  EXPECT_EQ(string_of(p, "host.cpu"), "Xeon 5160");
  EXPECT_EQ(int_of(p, "host.copy_cost"), 3);
  EXPECT_TRUE(bool_of(p, "hca.mmio.wc"));  // nested section: key "section.sub.name"
  EXPECT_TRUE(p.has("pcie.ecrc"));
  EXPECT_FALSE(p.has("pcie.nothing"));

  const Param& mp = p.param("pcie.max_payload");
  EXPECT_EQ(mp.key, "pcie.max_payload");
  EXPECT_EQ(mp.unit, "B");
  EXPECT_EQ(mp.source, "lspci -vv, seed 000");
  EXPECT_EQ(mp.origin, "plat/tiny.toml:5");
  EXPECT_EQ(p.param("hca.mmio.wc").origin, "plat/tiny.toml:14");

  // params() is ordered by key.
  std::string keys;
  for (const auto& [k, v] : p.params()) keys += k + " ";
  EXPECT_EQ(keys, "hca.mmio.wc host.copy_cost host.cpu pcie.ecrc pcie.lane_rate pcie.max_payload ");
}

TEST(Platform, NameDefaultsToFileStem) {
  const Platform p = Platform::parse("[a]\nx = { value = 1, unit = \"\", source = \"s\" }\n",
                                     "dir/woodcrest.toml");
  EXPECT_EQ(p.name(), "woodcrest");
}

// Declared keys (model/params.h), one per type, for the typed readers. Line 1 is "[pcie]".
constexpr const char* kDeclared = R"([pcie]
max_payload = { value = 128, unit = "B", source = "lspci -vv" }
dma_read_rtt = { value = 2.5, unit = "ns", source = "s" }
addr64 = { value = false, unit = "", source = "s" }
[hca]
device = { value = "mlx4_0", unit = "", source = "s" }
cq_entries = { value = 4096.0, unit = "", source = "s" }
[ib]
speed = { value = "DDR", unit = "", source = "s" }
)";

TEST(Platform, TypedReadersReadThroughTheSchema) {
  const Platform p = Platform::parse(kDeclared, "d.toml");
  EXPECT_EQ(p.integer("pcie.max_payload"), 128);
  EXPECT_EQ(p.u32("pcie.max_payload"), 128u);
  EXPECT_DOUBLE_EQ(p.num("pcie.max_payload"), 128.0);  // an Integer reads as a number too
  EXPECT_DOUBLE_EQ(p.num("pcie.dma_read_rtt"), 2.5);
  EXPECT_FALSE(p.flag("pcie.addr64"));
  EXPECT_EQ(p.str("hca.device"), "mlx4_0");
  EXPECT_EQ(p.str("ib.speed"), "DDR");
  EXPECT_EQ(p.integer("hca.cq_entries"), 4096);  // an integral float is an integer
  EXPECT_TRUE(p.was_read("pcie.addr64"));
}

TEST(Platform, MissingParameterIsInputError) {
  const Platform p = Platform::parse(kValid, "t.toml");
  expect_input_error([&] { p.num("pcie.dma_read_rtt"); }, "t.toml: missing parameter pcie.dma_read_rtt (platform tiny)");
  expect_input_error([&] { p.param("x.y"); }, "t.toml: missing parameter x.y (platform tiny)");
}

TEST(Platform, UndeclaredReadOrWrongTypeIsAnInternalError) {
  const Platform p = Platform::parse(kValid, "t.toml");
  // pcie.lane_rate is in the file but in no schema table: a reader's bug, not the user's.
  try {
    (void)p.num("pcie.lane_rate");
    ADD_FAILURE() << "no logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "internal error: platform parameter pcie.lane_rate is read but not declared in "
                                     "the parameter schema (model/params.h)");
  }
  const Platform d = Platform::parse(kDeclared, "d.toml");
  try {
    (void)d.integer("pcie.dma_read_rtt");  // declared a number
    ADD_FAILURE() << "no logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "internal error: platform parameter pcie.dma_read_rtt is declared number, read as integer");
  }
  EXPECT_THROW((void)d.flag("hca.device"), std::logic_error);
  EXPECT_FALSE(d.was_read("hca.device"));
}

TEST(Platform, UnitMismatchIsInputErrorNamingFileAndLine) {
  const Platform p = Platform::parse("[pcie]\nmax_payload = { value = 128, unit = \"KB\", source = \"s\" }\n", "t.toml");
  expect_input_error([&] { p.integer("pcie.max_payload"); }, "t.toml:2: pcie.max_payload: unit 'KB', expected 'B'");
  expect_input_error([&] { p.num("pcie.max_payload"); }, "t.toml:2: pcie.max_payload: unit 'KB', expected 'B'");
}

TEST(Platform, RangeErrorsComeFromTheSchema) {
  auto one = [](const std::string& section, const std::string& name, const std::string& value,
                const std::string& unit) {
    return Platform::parse(fmt::format("[{}]\n{} = {{ value = {}, unit = \"{}\", source = \"s\" }}\n", section, name,
                                       value, unit),
                           "r.toml");
  };
  // Numbers: >= 0, > 0 and the 1e-12..1e12 envelope (model/params.h kLargest, kSmallestPositive).
  expect_input_error([&] { one("cpu", "syscall", "-3", "cycles").num("cpu.syscall"); },
                     "r.toml:2: cpu.syscall: -3 cycles must be >= 0");
  expect_input_error([&] { one("cpu", "syscall", "2e12", "cycles").num("cpu.syscall"); },
                     "r.toml:2: cpu.syscall: 2000000000000 cycles is out of range (0..1e12)");
  expect_input_error([&] { one("cpu", "copy_tx_rate", "0.0", "B/ns").num("cpu.copy_tx_rate"); },
                     "r.toml:2: cpu.copy_tx_rate: 0 B/ns must be > 0");
  expect_input_error([&] { one("cpu", "copy_tx_rate", "1e-13", "B/ns").num("cpu.copy_tx_rate"); },
                     "r.toml:2: cpu.copy_tx_rate: 1e-13 B/ns is out of range (1e-12..1e12)");
  expect_input_error([&] { one("hca", "cq_moderation_period", "65536", "us").num("hca.cq_moderation_period"); },
                     "r.toml:2: hca.cq_moderation_period: 65536 us is out of range (0..65535)");
  // An HCA stage's time per job stops at 100 us (model/hca.cpp stage_time).
  expect_input_error([&] { one("hca", "rx_packet_time", "2e5", "ns").num("hca.rx_packet_time"); },
                     "r.toml:2: hca.rx_packet_time: 200000 ns is out of range (0..100000)");
  // Integers: bounds, powers of two, steps, choices.
  expect_input_error([&] { one("host", "cpus", "100000", "").u32("host.cpus"); },
                     "r.toml:2: host.cpus: 100000 is outside 1..1024");
  expect_input_error([&] { one("pcie", "max_payload", "3000", "B").u32("pcie.max_payload"); },
                     "r.toml:2: pcie.max_payload: 3000 is not a power of two in 128..4096");
  expect_input_error([&] { one("pcie", "max_payload", "8192", "B").u32("pcie.max_payload"); },
                     "r.toml:2: pcie.max_payload: 8192 is not a power of two in 128..4096");
  expect_input_error([&] { one("hca", "bf_buf_size", "100", "B").u32("hca.bf_buf_size"); },
                     "r.toml:2: hca.bf_buf_size: 100 is not a multiple of 64 in 64..4096");
  expect_input_error([&] { one("pcie", "gen", "4", "").u32("pcie.gen"); }, "r.toml:2: pcie.gen: 4 is not 1, 2 or 3");
  expect_input_error([&] { one("ib", "mtu", "3000", "B").u32("ib.mtu"); },
                     "r.toml:2: ib.mtu: 3000 is not 256, 512, 1024, 2048 or 4096");
  // Texts: choices.
  expect_input_error([&] { one("ib", "speed", "\"EDR\"", "").str("ib.speed"); },
                     "r.toml:2: ib.speed: 'EDR' is not SDR, DDR, QDR, FDR10 or FDR");
  // Inside: the bounds themselves.
  EXPECT_EQ(one("host", "cpus", "1024", "").u32("host.cpus"), 1024u);
  EXPECT_EQ(one("pcie", "max_payload", "4096", "B").u32("pcie.max_payload"), 4096u);
  EXPECT_DOUBLE_EQ(one("cpu", "syscall", "0", "cycles").num("cpu.syscall"), 0.0);
  // A --set value names the option and the platform.
  Platform p = one("cpu", "syscall", "150", "cycles");
  p.set("cpu.syscall=-1");
  expect_input_error([&] { p.num("cpu.syscall"); }, "--set cpu.syscall: -1 cycles must be >= 0 (platform r)");
}

TEST(Platform, CheckAllUsedNamesTheFirstUnreadParameter) {
  const Platform d = Platform::parse(kDeclared, "d.toml");
  expect_input_error([&] { d.check_all_used(); },
                     "d.toml:7: hca.cq_entries: not used on this platform");
  expect_input_error([&] { d.check_used_in(ParamWhen::Pcie); },
                     "d.toml:4: pcie.addr64: not used on this platform (a parameter of PCIe platforms, those "
                     "without pcix.clock_mhz)");
  (void)d.integer("pcie.max_payload");
  (void)d.num("pcie.dma_read_rtt");
  (void)d.flag("pcie.addr64");
  EXPECT_NO_THROW(d.check_used_in(ParamWhen::Pcie));
  (void)d.str("hca.device");
  (void)d.integer("hca.cq_entries");
  expect_input_error([&] { d.check_all_used(); }, "d.toml:9: ib.speed: not used on this platform");
  (void)d.str("ib.speed");
  EXPECT_NO_THROW(d.check_all_used());
  // A key no table declares is unknown, whatever is skipped.
  const Platform p = Platform::parse(kValid, "t.toml");
  expect_input_error([&] { p.check_all_used(ParamWhen::Ipoib); },
                     "t.toml:14: hca.mmio.wc: unknown parameter (hcasim does not use it)");
  expect_input_error([&] { p.check_used_in(ParamWhen::Ipoib); },
                     "t.toml:14: hca.mmio.wc: unknown parameter (hcasim does not use it)");
  // The keys of the skipped `when` are not checked.
  const Platform i = Platform::parse("[ipoib]\nmode = { value = \"datagram\", unit = \"\", source = \"s\" }\n", "i.toml");
  EXPECT_NO_THROW(i.check_all_used(ParamWhen::Ipoib));
  expect_input_error([&] { i.check_all_used(); },
                     "i.toml:2: ipoib.mode: not used on this platform (a parameter of platforms with the IPoIB "
                     "path, those with a [netstack] section)");
}

TEST(Platform, WrongValueTypeForAccessor) {
  const Platform p = Platform::parse(R"([pcie]
max_payload = { value = 2.5, unit = "B", source = "s" }
addr64 = { value = 3, unit = "", source = "s" }
[cpu]
pin_page = { value = "Xeon 5160", unit = "cycles/page", source = "s" }
[hca]
device = { value = false, unit = "", source = "s" }
max_qp_wr = { value = "many", unit = "", source = "s" }
)", "t.toml");
  expect_input_error([&] { p.integer("pcie.max_payload"); },
                     "t.toml:2: pcie.max_payload: expected an integer, found 2.5");
  expect_input_error([&] { p.num("cpu.pin_page"); },
                     "t.toml:5: cpu.pin_page: expected a number, found a string \"Xeon 5160\"");
  expect_input_error([&] { p.flag("pcie.addr64"); },
                     "t.toml:3: pcie.addr64: expected a boolean, found an integer 3");
  expect_input_error([&] { p.str("hca.device"); },
                     "t.toml:7: hca.device: expected a string, found a boolean false");
  expect_input_error([&] { p.u32("hca.max_qp_wr"); },
                     "t.toml:8: hca.max_qp_wr: expected an integer, found a string \"many\"");
}

// ---- parse errors: exact "PATH:LINE: key: what" ----

TEST(PlatformErrors, MissingFields) {
  expect_input_error(
      [] { Platform::parse("[pcie]\n\nmps = { unit = \"B\", source = \"s\" }\n", "p.toml"); },
      "p.toml:3: pcie.mps: missing 'value'");
  expect_input_error(
      [] { Platform::parse("[pcie]\nmps = { value = 128, source = \"s\" }\n", "p.toml"); },
      "p.toml:2: pcie.mps: missing 'unit' (use \"\" for counts and flags)");
  expect_input_error(
      [] { Platform::parse("[pcie]\nmps = { value = 128, unit = \"B\" }\n", "p.toml"); },
      "p.toml:2: pcie.mps: missing 'source'");
}

TEST(PlatformErrors, EmptySource) {
  expect_input_error(
      [] {
        Platform::parse("name = \"x\"\n[pcie]\nmps = { value = 128, unit = \"B\", source = \"\" }\n",
                        "p.toml");
      },
      "p.toml:3: pcie.mps: empty source (say where the number comes from)");
  expect_input_error(
      [] { Platform::parse("[pcie]\nmps = { value = 1, unit = \"B\", source = \"  \" }\n", "p.toml"); },
      "p.toml:2: pcie.mps: empty source (say where the number comes from)");
}

TEST(PlatformErrors, UnsupportedValueTypes) {
  expect_input_error(
      [] { Platform::parse("[a]\nx = { value = [1, 2], unit = \"\", source = \"s\" }\n", "p.toml"); },
      "p.toml:2: a.x: value must be a number, a boolean or a string, not an array");
  expect_input_error(
      [] { Platform::parse("[a]\nx = { value = { y = 1 }, unit = \"\", source = \"s\" }\n", "p.toml"); },
      "p.toml:2: a.x: value must be a number, a boolean or a string, not a table");
  expect_input_error(
      [] { Platform::parse("[a]\n\nx = { value = 2008-03-01, unit = \"\", source = \"s\" }\n", "p.toml"); },
      "p.toml:3: a.x: value must be a number, a boolean or a string, not a date");
  expect_input_error(
      [] { Platform::parse("[a]\nx = { value = 1, unit = 5, source = \"s\" }\n", "p.toml"); },
      "p.toml:2: a.x: unit must be a string, not an integer");
}

TEST(PlatformErrors, UnknownField) {
  expect_input_error(
      [] {
        Platform::parse("[a]\nx = { value = 1, unit = \"\", source = \"s\", note = \"n\" }\n",
                        "p.toml");
      },
      "p.toml:2: a.x: unknown field 'note' (a parameter has value, unit and source)");
}

TEST(PlatformErrors, LayoutErrors) {
  expect_input_error([] { Platform::parse("[a]\nx = 5\n", "p.toml"); },
                     "p.toml:2: a.x: expected an inline table { value = ..., unit = \"...\", "
                     "source = \"...\" }, found an integer");
  expect_input_error(
      [] { Platform::parse("x = { value = 1, unit = \"\", source = \"s\" }\n", "p.toml"); },
      "p.toml:1: x: parameters belong in a [section]; only 'name' and 'description' are "
      "top-level");
  expect_input_error([] { Platform::parse("name = 3\n", "p.toml"); },
                     "p.toml:1: name: must be a string, not an integer");
  expect_input_error(
      [] {
        Platform::parse("[a.b.c]\nx = { value = 1, unit = \"\", source = \"s\" }\n", "p.toml");
      },
      "p.toml:1: a.b.c: sections nest one level at most ([section.sub])");
}

TEST(PlatformErrors, SyntaxErrorHasLineAndColumn) {
  // Line 3, a key without a value.
  expect_input_error_prefix(
      [] { Platform::parse("[a]\nx = { value = 1, unit = \"\", source = \"s\" }\ny = \n", "bad.toml"); },
      "bad.toml:3:");
  try {
    Platform::parse("[a]\n\n\nz = { value = 1, unit = \"\" source = \"s\" }\n", "bad.toml");
    ADD_FAILURE();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.substr(0, 11), "bad.toml:4:") << m;
    // "PATH:LINE:COL: description": a column number and a non-empty description follow.
    const auto col_end = m.find(": ", 11);
    ASSERT_NE(col_end, std::string::npos) << m;
    EXPECT_GT(std::stoi(m.substr(11, col_end - 11)), 0);
    EXPECT_GT(m.size(), col_end + 2);
  }
  // A duplicate key is a toml++ error too.
  expect_input_error_prefix(
      [] {
        Platform::parse("[a]\nx = { value = 1, unit = \"\", source = \"s\" }\n"
                        "x = { value = 2, unit = \"\", source = \"s\" }\n",
                        "dup.toml");
      },
      "dup.toml:3:");
}

TEST(PlatformErrors, MissingFile) {
  expect_input_error([] { Platform::load_file("/nonexistent/dir/none.toml"); },
                     "/nonexistent/dir/none.toml: cannot open platform file");
}

TEST(Platform, LoadFile) {
  const std::string path = ::testing::TempDir() + "hcasim_platform_test_" +
                           std::to_string(::getpid()) + ".toml";
  {
    std::ofstream out(path);
    out << kValid;
  }
  const Platform p = Platform::load_file(path);
  std::remove(path.c_str());
  EXPECT_EQ(p.name(), "tiny");
  EXPECT_EQ(p.param("host.cpu").origin, path + ":10");
}

// ---- --set ----

TEST(PlatformSet, Integer) {
  Platform p = Platform::parse(kValid, "t.toml");
  p.set("host.copy_cost=7");
  EXPECT_EQ(int_of(p, "host.copy_cost"), 7);
  EXPECT_EQ(p.param("host.copy_cost").origin, "--set");
  EXPECT_EQ(p.param("host.copy_cost").source, "fitted to seed 000");
  p.set("host.copy_cost = -2");
  EXPECT_EQ(int_of(p, "host.copy_cost"), -2);
  expect_input_error([&] { p.set("host.copy_cost=2.5"); },
                     "--set host.copy_cost: bad value '2.5' for an integer in ns/page");
  // Size suffixes only for bytes.
  expect_input_error([&] { p.set("host.copy_cost=4K"); },
                     "--set host.copy_cost: bad value '4K' for an integer in ns/page");
}

// A key the schema calls a number takes a fraction from --set even when its platform file wrote
// an integer (ib.propagation = 10 in connectx3-pcie3x8.toml); an integer key still refuses one.
TEST(PlatformSet, NumberKeysTakeFractionsWhateverTheFileWrote) {
  Platform p = Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/connectx3-pcie3x8.toml");
  p.set("ib.propagation=1.5");
  EXPECT_DOUBLE_EQ(p.num("ib.propagation"), 1.5);
  p.set("cpu.poll_miss=100.5");
  EXPECT_DOUBLE_EQ(p.num("cpu.poll_miss"), 100.5);
  expect_input_error([&] { p.set("pcie.max_payload=256.5"); },
                     "--set pcie.max_payload: bad value '256.5' for an integer in B");
  // The refusal of a non-number names what the key takes, not how the file wrote it.
  expect_input_error([&] { p.set("ib.propagation=abc"); }, "--set ib.propagation: bad value 'abc' for a number in ns");
}

TEST(PlatformSet, SizeSuffixesInBytes) {
  Platform p = Platform::parse(kValid, "t.toml");
  p.set("pcie.max_payload=256");
  EXPECT_EQ(int_of(p, "pcie.max_payload"), 256);
  p.set("pcie.max_payload=4K");
  EXPECT_EQ(int_of(p, "pcie.max_payload"), 4096);
  p.set("pcie.max_payload=2M");
  EXPECT_EQ(int_of(p, "pcie.max_payload"), 2097152);
  p.set("pcie.max_payload=3k");
  EXPECT_EQ(int_of(p, "pcie.max_payload"), 3000);
  EXPECT_TRUE(std::holds_alternative<int64_t>(p.param("pcie.max_payload").value));
  expect_input_error([&] { p.set("pcie.max_payload=12Q"); },
                     "--set pcie.max_payload: bad value '12Q' for an integer in B");
  // 16G fits; 2^63 does not fit an int64.
  p.set("pcie.max_payload=16G");
  EXPECT_EQ(int_of(p, "pcie.max_payload"), 17179869184);
  expect_input_error([&] { p.set("pcie.max_payload=9223372036854775808"); },
                     "--set pcie.max_payload: bad value '9223372036854775808' for an integer in B");
}

TEST(PlatformSet, Double) {
  Platform p = Platform::parse(kValid, "t.toml");
  p.set("pcie.lane_rate=5.0");
  EXPECT_DOUBLE_EQ(double_of(p, "pcie.lane_rate"), 5.0);
  p.set("pcie.lane_rate=8");  // an integer text stays a double parameter
  EXPECT_DOUBLE_EQ(double_of(p, "pcie.lane_rate"), 8.0);
  EXPECT_TRUE(std::holds_alternative<double>(p.param("pcie.lane_rate").value));
  p.set("pcie.lane_rate=1e1");
  EXPECT_DOUBLE_EQ(double_of(p, "pcie.lane_rate"), 10.0);
  expect_input_error([&] { p.set("pcie.lane_rate=fast"); },
                     "--set pcie.lane_rate: bad value 'fast' for a number in GT/s");
  expect_input_error([&] { p.set("pcie.lane_rate=inf"); },
                     "--set pcie.lane_rate: bad value 'inf' for a number in GT/s");
  expect_input_error([&] { p.set("pcie.lane_rate=2K"); },
                     "--set pcie.lane_rate: bad value '2K' for a number in GT/s");
  // A double in bytes takes size suffixes.
  Platform q = Platform::parse("[a]\nbuf = { value = 0.5, unit = \"B\", source = \"s\" }\n", "q.toml");
  q.set("a.buf=64K");
  EXPECT_DOUBLE_EQ(double_of(q, "a.buf"), 65536.0);
}

TEST(PlatformSet, Bool) {
  Platform p = Platform::parse(kValid, "t.toml");
  for (const char* on : {"on", "true", "1", "ON"}) {
    p.set(std::string("pcie.ecrc=") + on);
    EXPECT_TRUE(bool_of(p, "pcie.ecrc")) << on;
    p.set("pcie.ecrc=off");
    EXPECT_FALSE(bool_of(p, "pcie.ecrc"));
  }
  p.set("pcie.ecrc=true");
  for (const char* off : {"off", "false", "0"}) {
    p.set(std::string("pcie.ecrc=") + off);
    EXPECT_FALSE(bool_of(p, "pcie.ecrc")) << off;
    p.set("pcie.ecrc=on");
  }
  expect_input_error([&] { p.set("pcie.ecrc=yes"); },
                     "--set pcie.ecrc: bad value 'yes' for a boolean");
  EXPECT_EQ(p.param("pcie.ecrc").origin, "--set");
}

TEST(PlatformSet, String) {
  Platform p = Platform::parse(kValid, "t.toml");
  p.set("host.cpu=Opteron 2218");
  EXPECT_EQ(string_of(p, "host.cpu"), "Opteron 2218");
  p.set("host.cpu=a=b");  // only the first '=' separates key and value
  EXPECT_EQ(string_of(p, "host.cpu"), "a=b");
}

TEST(PlatformSet, Errors) {
  Platform p = Platform::parse(kValid, "t.toml");
  expect_input_error([&] { p.set("pcie.nope=1"); },
                     "--set pcie.nope: unknown platform parameter (platform tiny)");
  expect_input_error([&] { p.set("pcie.max_payload"); },
                     "--set 'pcie.max_payload': expected section.key=value");
  expect_input_error([&] { p.set("=5"); }, "--set '=5': expected section.key=value");
  expect_input_error([&] { p.set(""); }, "--set '': expected section.key=value");
  // A failed set leaves the parameter untouched.
  EXPECT_EQ(int_of(p, "pcie.max_payload"), 128);
  EXPECT_EQ(p.param("pcie.max_payload").origin, "t.toml:5");
}

// ---- parse_size ----

TEST(ParseSize, Values) {
  EXPECT_EQ(parse_size("64K", "-m"), 65536u);
  EXPECT_EQ(parse_size("1M", "-m"), 1048576u);
  EXPECT_EQ(parse_size("1G", "-m"), 1073741824u);
  EXPECT_EQ(parse_size("1m", "-m"), 1000000u);
  EXPECT_EQ(parse_size("32k", "-m"), 32000u);
  EXPECT_EQ(parse_size("2g", "-m"), 2000000000u);
  EXPECT_EQ(parse_size("16384", "-m"), 16384u);
  EXPECT_EQ(parse_size("0", "-m"), 0u);
  EXPECT_EQ(parse_size("0K", "-m"), 0u);
  EXPECT_EQ(parse_size("18446744073709551615", "-m"), 18446744073709551615u);
  EXPECT_EQ(parse_size("17179869183G", "-m"), 18446744072635809792u);  // (2^34 - 1) * 2^30
}

TEST(ParseSize, Errors) {
  const std::string tail = "' (use a number with an optional K/M/G or k/m/g suffix)";
  for (const char* bad : {"", "12Q", "-1", "K", "1.5K", " 64K", "64K ", "64KK", "+5", "0x10",
                          "18446744073709551616", "17179869184G", "99999999999999999999k"}) {
    expect_input_error([&] { parse_size(bad, "-m"); }, std::string("-m: bad size '") + bad + tail);
  }
  expect_input_error([] { parse_size("12Q", "-s"); }, "-s: bad size '12Q" + tail);
}

}  // namespace
}  // namespace hcasim::model

TEST(OneLine, LineBreaksBecomeOneSpaceAndControlBytesAreEscaped) {
  EXPECT_EQ(hcasim::one_line("Error while parsing array:\n   expected ']'\n"), "Error while parsing array: expected ']'");
  EXPECT_EQ(hcasim::one_line("bell\x07 esc\x1b[1m"), "bell\\x07 esc\\x1B[1m");
  EXPECT_EQ(hcasim::one_line("plain"), "plain");
  // UTF-8 passes whole (2, 3 and 4 byte sequences); a byte that is not UTF-8 is escaped, as is
  // an overlong form (C0 AF) or a surrogate (ED A0 80), so a Latin-1 file cannot garble the line.
  EXPECT_EQ(hcasim::one_line("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(hcasim::one_line("'1.0\xFF" "4'"), "'1.0\\xFF4'");
  EXPECT_EQ(hcasim::one_line("\xC0\xAF \xED\xA0\x80 \xC3"), "\\xC0\\xAF \\xED\\xA0\\x80 \\xC3");
}

TEST(OneLine, EveryInputErrorIsOneLine) {
  // A quoted argument with a line break in it, echoed by a parser, stays on one line.
  EXPECT_STREQ(hcasim::InputError("unexpected argument 'a\nb'").what(), "unexpected argument 'a b'");
}
