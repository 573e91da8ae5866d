#pragma once
/// \file Platform files: every model parameter with its value, unit and source.
///
/// A platform file is TOML. Each parameter is an inline table in a section:
///
///     [pcie]
///     max_payload = { value = 128, unit = "B", source = "lspci -vv, seed 000" }
///
/// `value` is a number, a boolean or a string; `unit` is a free unit string ("B", "ns",
/// "ns/page", "B/ns", "Gbit/s", "" for counts and flags); `source` says where the number comes
/// from (spec section, datasheet, measurement, or "fitted to ..."). The top-level key `name`
/// and `description` (plain strings) describe the platform.
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/error.h"

namespace hcasim::model {

/// One parameter of a platform: value with its unit and source, and where it was read.
struct Param {
  std::string key;                                            ///< "section.name"
  std::variant<double, int64_t, bool, std::string> value;     ///< as written in the file
  std::string unit;                                           ///< as declared in the file
  std::string source;                                         ///< provenance, never empty
  std::string origin;                                         ///< "file:line" or "--set"
};

/// A parsed platform: the parameters of one host, its HCA, its PCIe slot and its IB link.
class Platform {
 public:
  /// Reads a platform file. Throws InputError "PATH:LINE: what is wrong" on a syntax error,
  /// a parameter without value/unit/source, or a value of an unsupported type.
  static Platform load_file(const std::string& path);
  /// Same as load_file on text already in memory; `origin` names it in errors.
  static Platform parse(std::string_view toml_text, const std::string& origin);

  /// Applies "section.key=value" (the --set option). The value is in the unit the file
  /// declares; booleans take on/off/true/false/1/0; integers and doubles accept the
  /// netperf size suffixes K/M/G (2^10..) and k/m/g (10^3..) when the unit is "B".
  /// Throws InputError naming the key when it is unknown or the value does not parse.
  void set(const std::string& assignment);

  /// Numeric value of `key` (int or double) in `unit`. Throws InputError
  /// "FILE: missing parameter KEY (platform NAME)" when absent, and "FILE:LINE: KEY: unit 'u',
  /// expected 'v'" when the file declares another unit.
  double num(const std::string& key, std::string_view unit) const;
  /// Integer value of `key`; as num() and throws InputError when the value is not integral.
  int64_t integer(const std::string& key, std::string_view unit) const;
  /// Boolean value of `key`.
  bool flag(const std::string& key) const;
  /// String value of `key`.
  std::string str(const std::string& key) const;
  /// True when the platform declares `key`.
  bool has(const std::string& key) const;
  /// The parameter record, or InputError when missing.
  const Param& param(const std::string& key) const;

  /// num(key, unit), which must be >= 0; fail() "V UNIT must be >= 0" otherwise (NaN too),
  /// "V UNIT is out of range (0..1e12)" above 10^12 (no machine's; times would overflow).
  double nonneg(const std::string& key, std::string_view unit) const;
  /// num(key, unit), which must be > 0; fail() "V UNIT must be > 0" otherwise (NaN too),
  /// "V UNIT is out of range (1e-12..1e12)" outside 10^-12..10^12 (a rate so small that
  /// bytes / rate overflows to infinity crashed SimGrid).
  double positive(const std::string& key, std::string_view unit) const;
  /// integer(key, unit) within lo..hi; fail() "V is outside LO..HI" otherwise.
  uint32_t u32(const std::string& key, std::string_view unit, uint64_t lo, uint64_t hi) const;

  /// Throws InputError naming where `key` was given: "FILE:LINE: KEY: what", or
  /// "--set KEY: what (platform NAME)" for a value set on the command line. For a value that
  /// parses but is out of range; `key` must exist.
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  /// Re-throws a model validator's error, "KEY: what" (pcie::validate, ib::validate, ...), as
  /// fail(KEY, what) when KEY is one of this platform's parameters, so that it names the
  /// FILE:LINE or --set; else as "platform NAME: KEY: what".
  [[noreturn]] void fail_from(const InputError& e) const;

  /// Throws InputError "FILE:LINE: KEY: unknown parameter" for the first parameter no accessor
  /// has read: call it after reading everything a simulation needs, so that a misspelt key in
  /// a file is an error rather than a silently ignored line. Keys in `skip` (a section name
  /// or a whole key) are not checked: another simulation reads them (the SDP path skips
  /// [netstack], [ipoib] and the IPoIB path's flags, which only sim/ipoib_sim.cpp reads).
  void check_all_used(std::initializer_list<std::string_view> skip = {}) const;
  /// As check_all_used, for the keys of `sections` (section names or whole keys) only.
  void check_used_in(std::initializer_list<std::string_view> sections) const;

  /// Platform name (top-level `name`, else the file stem).
  const std::string& name() const { return name_; }
  /// All parameters, ordered by key.
  const std::map<std::string, Param>& params() const { return params_; }

 private:
  std::string name_;
  std::string origin_;
  std::map<std::string, Param> params_;
  mutable std::set<std::string> used_;  // keys an accessor has read
};

}  // namespace hcasim::model
