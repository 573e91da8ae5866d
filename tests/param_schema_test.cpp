// The parameter schema (model/params.h) against the shipped platforms and the readers, and
// `hcasim params` (scenarios/params.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/params.h"
#include "model/platform.h"
#include "scenarios/datadir.h"
#include "scenarios/params.h"
#include "sim/testbed.h"
#include "tests/hcasim_run.h"
#include "util/input_file.h"

namespace hcasim {
namespace {

namespace fs = std::filesystem;
using model::ParamSpec;
using model::ParamWhen;
using model::Platform;

/// Every platform file shipped in scenarios/platforms, by name.
std::map<std::string, Platform> shipped_platforms() {
  std::map<std::string, Platform> out;
  for (const auto& e : fs::directory_iterator(fs::path(scenarios::data_dir()) / "scenarios" / "platforms"))
    if (e.path().extension() == ".toml") out.emplace(e.path().stem().string(), scenarios::load_platform(e.path()));
  return out;
}

TEST(ParamSchema, CountIsTheSumOfTheAreaTables) {
  size_t sum = 0;
  for (auto t : {model::schema::cpu(), model::schema::mmio(), model::schema::noise(), model::schema::topology(),
                 model::schema::interrupt(), model::schema::netstack(), model::schema::ipoib(), model::schema::ib(),
                 model::schema::hca(), model::schema::pcie(), model::schema::pcix(), model::schema::sdp()})
    sum += t.size();
  EXPECT_EQ(model::param_schema().size(), sum);
  // The union of the keys of the six shipped platform files (counted with tomllib): 135.
  EXPECT_EQ(model::param_schema().size(), 135u);
  for (const ParamSpec& s : model::param_schema()) {
    EXPECT_EQ(model::find_param(s.key), &s) << s.key;
    EXPECT_FALSE(s.doc.empty()) << s.key;
  }
  EXPECT_EQ(model::find_param("cpu.nosuch"), nullptr);
}

// docs/design.md "CPU costs: work and stalls": a work cost is in cycles (or B/cycle), a stall in
// ns (or B/ns); every [cpu] and [netstack] cost, [topology] line transfer and the MMIO stores
// declare one of the two; no bus or HCA time does.
TEST(ParamSchema, EveryCpuCostDeclaresWorkOrStallInItsUnit) {
  size_t work = 0, stall = 0;
  for (const ParamSpec& s : model::param_schema()) {
    const std::string unit(s.unit), key(s.key);
    if (s.kind == model::CostKind::Work) {
      ++work;
      EXPECT_TRUE(unit == "cycles" || unit == "cycles/page" || unit == "B/cycle") << key << ": " << unit;
    } else if (s.kind == model::CostKind::Stall) {
      ++stall;
      EXPECT_TRUE(unit == "ns" || unit == "ns/page" || unit == "B/ns") << key << ": " << unit;
    } else {
      const bool cpu_section = key.rfind("cpu.", 0) == 0 || key.rfind("netstack.", 0) == 0;
      EXPECT_FALSE(cpu_section && (unit == "ns" || unit == "ns/page" || unit == "B/ns")) << key << " has no kind";
      EXPECT_NE(unit.find("cycle"), 0u) << key;
    }
  }
  // cpu 15 + mmio 1 (wc_store) + netstack 16; stalls: cpu 4 (copy_tx_rate, copy_rx_rate, ipi,
  // poll_miss) + mmio 2 + intx_ack + netstack 3 (csum_cold_rate, iommu_map, fmr_map) + topology 3.
  EXPECT_EQ(work, 32u);
  EXPECT_EQ(stall, 13u);
}

TEST(ParamSchema, WorkIsConvertedAtTheClockAndStallsAreNot) {
  // connectx3-pcie3x8: cpu.user_post 156 cycles at 2.6 GHz = 60 ns; cpu.uc_store 50 ns;
  // cpu.copy_tx_hot_rate 3 B/ns = 1.15384615385 B/cycle at 2.6 GHz.
  Platform p = shipped_platforms().at("connectx3-pcie3x8");
  EXPECT_DOUBLE_EQ(p.cost_ns("cpu.user_post"), 60);
  EXPECT_DOUBLE_EQ(p.cost_ns("cpu.uc_store"), 50);
  EXPECT_NEAR(p.rate_per_ns("cpu.copy_tx_hot_rate"), 3, 1e-9);
  p.set("host.clock=1.3");
  EXPECT_DOUBLE_EQ(p.cost_ns("cpu.user_post"), 120);
  EXPECT_DOUBLE_EQ(p.cost_ns("cpu.uc_store"), 50);
  EXPECT_NEAR(p.rate_per_ns("cpu.copy_tx_hot_rate"), 1.5, 1e-9);
  EXPECT_THROW((void)p.cost_ns("pcie.dma_read_rtt"), std::logic_error);      // the bus's, not the CPU's
  EXPECT_THROW((void)p.cost_ns("cpu.copy_tx_rate"), std::logic_error);       // a rate
  EXPECT_THROW((void)p.rate_per_ns("cpu.user_post"), std::logic_error);      // a cost
  // A clock typed in Hz (or MHz) is out of host.clock's 0.01..10 GHz, not a very fast core.
  p.set("host.clock=2.6e9");
  EXPECT_THROW((void)p.cost_ns("cpu.user_post"), InputError);
}

TEST(ParamSchema, EveryShippedKeyIsDeclaredAndEveryDeclaredKeyIsShipped) {
  const auto platforms = shipped_platforms();
  ASSERT_EQ(platforms.size(), 6u);
  std::set<std::string> shipped;
  for (const auto& [name, p] : platforms)
    for (const auto& [key, param] : p.params()) {
      EXPECT_NE(model::find_param(key), nullptr) << name << ": " << key << " is not declared";
      shipped.insert(key);
    }
  for (const ParamSpec& s : model::param_schema())
    EXPECT_TRUE(shipped.count(std::string(s.key))) << s.key << " is declared but in no shipped platform";
}

/// Whether `p` is a platform on which a key needed `when` must be (and others must not).
bool needed_on(ParamWhen when, const Platform& p) {
  switch (when) {
    case ParamWhen::Always: return true;
    case ParamWhen::Pcie: return !p.has("pcix.clock_mhz");
    case ParamWhen::Pcix: return p.has("pcix.clock_mhz");
    case ParamWhen::Ipoib: return p.has("netstack.send_call");
    case ParamWhen::NoIommu: return !std::get<bool>(p.param("host.iommu").value);
  }
  return false;
}

// No key has a default, so a key is in exactly the platforms its `when` names: every key
// needed on every platform is in all six.
TEST(ParamSchema, EachKeyIsInExactlyThePlatformsItsWhenNames) {
  for (const auto& [name, p] : shipped_platforms())
    for (const ParamSpec& s : model::param_schema())
      EXPECT_EQ(p.has(std::string(s.key)), needed_on(s.when, p))
          << name << ": " << s.key << " (needed on " << model::when_text(s.when) << ")";
}

// Every reader (sim/testbed.cpp's read_host_params runs the model readers and, on a platform
// with [netstack], sim/ipoib_sim.cpp's) on every shipped platform: no read of an undeclared key
// (that would be a logic_error), every value inside its range, every key of the file read; and
// over the six, every declared key is read by some reader.
TEST(ParamSchema, EveryReaderOnEveryShippedPlatformReadsDeclaredKeysOnly) {
  std::set<std::string> read;
  for (auto& [name, p] : shipped_platforms()) {
    EXPECT_NO_THROW((void)sim::read_host_params(p)) << name;
    for (const auto& [key, param] : p.params()) {
      EXPECT_TRUE(p.was_read(key)) << name << ": " << key;
      if (p.was_read(key)) read.insert(key);
    }
  }
  for (const ParamSpec& s : model::param_schema()) EXPECT_TRUE(read.count(std::string(s.key))) << s.key << " is never read";
}

// A planted read of a key no table declares fails: as an internal error, whether the platform
// has the key or not.
TEST(ParamSchema, APlantedUndeclaredReadFails) {
  auto platforms = shipped_platforms();
  const Platform& base = platforms.at("connectx-ddr-pcie1x8");
  EXPECT_THROW((void)base.num("cpu.planted"), std::logic_error);
  const Platform planted = Platform::parse("[cpu]\nplanted = { value = 1, unit = \"ns\", source = \"s\" }\n", "p.toml");
  try {
    (void)planted.num("cpu.planted");
    ADD_FAILURE() << "no logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "internal error: platform parameter cpu.planted is read but not declared in the "
                                     "parameter schema (model/params.h)");
  }
  EXPECT_THROW((void)planted.flag("cpu.planted"), std::logic_error);
  EXPECT_THROW((void)planted.read("cpu.planted"), std::logic_error);
  EXPECT_FALSE(planted.was_read("cpu.planted"));
}

// An undeclared key in a file, and a declared key a platform does not use, are the user's
// errors, worded by the schema.
TEST(ParamSchema, UnknownAndUnusedKeysAreNamed) {
  const std::string dir = scenarios::data_dir() + "/scenarios/platforms/";
  const std::string text = util::read_text(dir + "connectx-ddr-pcie1x8.toml", "p");
  const Platform typo = Platform::parse(text + "[cpu.extra]\nsycsall = { value = 1, unit = \"ns\", source = \"s\" }\n",
                                        "p.toml");
  try {
    (void)sim::read_host_params(typo);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(std::regex_match(e.what(), std::regex("p\\.toml:[0-9]+: cpu\\.extra\\.sycsall: unknown parameter "
                                                      "\\(hcasim does not use it\\)")))
        << e.what();
  }
  // pcix.write_burst is a PCI-X key; a PCIe platform (no pcix.clock_mhz) does not read it.
  const Platform stray = Platform::parse(text + "[pcix]\nwrite_burst = { value = 4096, unit = \"B\", source = \"s\" }\n",
                                         "p.toml");
  try {
    (void)sim::read_host_params(stray);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(std::regex_match(e.what(), std::regex("p\\.toml:[0-9]+: pcix\\.write_burst: not used on this platform "
                                                      "\\(a parameter of PCI-X platforms, those with pcix\\.clock_mhz\\)")))
        << e.what();
  }
  Platform p = Platform::parse(text, "p.toml");
  try {
    p.set("pcix.write_burst=8");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--set pcix.write_burst: not in platform connectx-ddr-pcie1x8 (a parameter of PCI-X "
                           "platforms, those with pcix.clock_mhz)");
  }
}

TEST(ParamSchema, RangeTexts) {
  EXPECT_EQ(model::range_text(*model::find_param("cpu.syscall")), ">= 0");
  EXPECT_EQ(model::range_text(*model::find_param("cpu.copy_tx_rate")), "> 0");
  EXPECT_EQ(model::range_text(*model::find_param("host.cpus")), "1..1024");
  EXPECT_EQ(model::range_text(*model::find_param("pcie.max_payload")), "128..4096, power of two");
  EXPECT_EQ(model::range_text(*model::find_param("hca.bf_buf_size")), "64..4096, multiple of 64");
  EXPECT_EQ(model::range_text(*model::find_param("ib.speed")), "SDR|DDR|QDR|FDR10|FDR");
  EXPECT_EQ(model::range_text(*model::find_param("hca.blueflame")), "on|off");
  EXPECT_EQ(model::range_text(*model::find_param("hca.cq_moderation_period")), "0..65535");
}

// ---- hcasim params ----

class ParamsCommand : public test::HcasimCommandTest {
 protected:
  ParamsCommand() : HcasimCommandTest("params") {}
};

/// The lines of `text`.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_F(ParamsCommand, ListsEveryDeclaredKeyOnce) {
  const test::Outcome r = run("params");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "135 platform parameters; no key has a default (a platform file gives each value its source)");
  size_t keys = 0, sections = 0;
  for (const std::string& line : lines) {
    if (line.size() > 1 && line.front() == '[' && line.back() == ']') ++sections;
    const std::string first = line.substr(0, line.find(' '));
    if (model::find_param(first)) ++keys;
  }
  EXPECT_EQ(keys, model::param_schema().size());
  EXPECT_EQ(sections, 12u);  // cpu hca host ib ipoib irq netstack pcie pcix sdp socket topology
  // One whole line, its columns aligned to the longest key (pcix.split_completion_latency_ns,
  // 32), type ("integer", 7), unit ("cycles/page", 11), kind ("stall", 5) and range
  // ("512..1073741824, power of two", 29), two spaces apart; ib.speed has no unit and no kind.
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "ib.speed" + std::string(32 - 8 + 2, ' ') + "text" + std::string(7 - 4 + 2, ' ') +
                          std::string(11 + 2, ' ') + std::string(5 + 2, ' ') + "SDR|DDR|QDR|FDR10|FDR" +
                          std::string(29 - 21 + 2, ' ') +
                          "lane signalling rate: 2.5, 5, 10, 10.3125, 14.0625 Gbit/s"),
            lines.end())
      << r.out;
}

TEST_F(ParamsCommand, WithAPlatformShowsValueOriginAndSource) {
  const test::Outcome r = run("params --platform connectx-ddr-pcie1x8 --set pcie.max_payload=256");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  EXPECT_EQ(lines.at(0), "135 platform parameters, with platform connectx-ddr-pcie1x8; no key has a default (a "
                         "platform file gives each value its source)");
  const auto at = std::find_if(lines.begin(), lines.end(),
                               [](const std::string& l) { return l.rfind("pcie.max_payload ", 0) == 0; });
  ASSERT_NE(at, lines.end());
  ASSERT_NE(at + 1, lines.end());
  EXPECT_EQ(*(at + 1), std::string(32, ' ') + "  = 256 B  (--set) seed 000 lspci -vv: Device MaxPayload 128 bytes");
  const auto rtt = std::find_if(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.rfind("pcie.dma_read_rtt ", 0) == 0; });
  ASSERT_NE(rtt + 1, lines.end());
  EXPECT_TRUE(std::regex_match(*(rtt + 1), std::regex(" +  = 900 ns  \\(.*/connectx-ddr-pcie1x8\\.toml:[0-9]+\\) .+")))
      << *(rtt + 1);
  // A PCI-X key: declared, not on this platform.
  const auto clock = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.rfind("pcix.clock_mhz ", 0) == 0; });
  ASSERT_NE(clock + 1, lines.end());
  EXPECT_EQ(*(clock + 1), std::string(32, ' ') + "  (not on this platform)");
}

TEST_F(ParamsCommand, JsonHasEveryKey) {
  const test::Outcome r = run("params --json --platform zx1-rx4640-pcix");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  size_t keys = 0, values = 0;
  for (const auto& p : doc.at("parameters")) {
    keys += p.contains("key");
    values += p.contains("value");
  }
  EXPECT_EQ(keys, 135u);
  EXPECT_EQ(values, shipped_platforms().at("zx1-rx4640-pcix").params().size());
  EXPECT_EQ(doc.at("count"), 135);
  EXPECT_EQ(doc.at("platform"), "zx1-rx4640-pcix");
  EXPECT_EQ(r.out.front(), '{');
}

TEST_F(ParamsCommand, HelpAndBadInput) {
  test::Outcome r = run("params --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("Usage: hcasim params [--platform NAME|FILE]", 0), 0u) << r.out;
  r = run("params --bogus");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "hcasim: error: params: unknown option --bogus (it takes --platform, --set, --json, -h/--help)\n");
  r = run("params --set cpu.syscall=1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "hcasim: error: --set needs --platform (a platform to change)\n");
  r = run("params --platform connectx-ddr-pcie1x8 --set cpu.syscall=-1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "hcasim: error: --set cpu.syscall: -1 cycles must be >= 0 (platform connectx-ddr-pcie1x8)\n");
  r = run("params --platform nosuch");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("hcasim: error: --platform nosuch: no such platform file or name", 0), 0u) << r.err;
}

}  // namespace
}  // namespace hcasim
