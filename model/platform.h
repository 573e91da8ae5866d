#pragma once
/// \file Platform files: every model parameter with its value, unit and source.
///
/// A platform file is TOML. Each parameter is an inline table in a section:
///
///     [pcie]
///     max_payload = { value = 128, unit = "B", source = "lspci -vv, seed 000" }
///
/// `value` is a number, a boolean or a string; `unit` is the unit string the key's schema entry
/// declares ("B", "ns", "ns/page", "B/ns", "" for counts and flags; model/params.h, listed by
/// `hcasim params`); `source` says where the number comes from (spec section, datasheet,
/// measurement, or "fitted to ..."). The top-level key `name` and `description` (plain strings)
/// describe the platform. Parsing accepts any key; the readers check each against the schema.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/error.h"
#include "model/params.h"

namespace hcasim::model {

/// One parameter of a platform: value with its unit and source, and where it was read.
struct Param {
  std::string key;                                            ///< "section.name"
  std::variant<double, int64_t, bool, std::string> value;     ///< as written in the file
  std::string unit;                                           ///< as declared in the file
  std::string source;                                         ///< provenance, never empty
  std::string origin;                                         ///< "file:line" or "--set"
};

/// A parameter's value as a platform file writes it: numbers with fmt's shortest round-trip
/// form, booleans as true/false, strings in double quotes when `quote_strings` (error
/// messages) and bare otherwise (`hcasim params`' table).
std::string param_value_text(const Param& p, bool quote_strings);

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

  /// The typed readers below read a parameter through its schema entry (model/params.h): the
  /// file's unit must be the entry's ("FILE:LINE: KEY: unit 'u', expected 'v'"), the value of
  /// its type ("FILE:LINE: KEY: expected an integer, found 2.5") and inside its range (fail():
  /// "FILE:LINE: KEY: -3 ns must be >= 0", "--set KEY: 3000 is not a power of two in
  /// 128..4096 (platform NAME)"). A key the platform lacks is InputError "FILE: missing
  /// parameter KEY (platform NAME)". A key no schema table declares, or read as another type
  /// than its entry's, is std::logic_error "internal error: ..." (a reader's bug). Each marks
  /// the key read (check_all_used).

  /// Value of a Number or Integer parameter, in its entry's unit.
  double num(const std::string& key) const;
  /// A CPU cost in ns (or ns per page): a Stall entry's value as it is, a Work entry's cycles
  /// divided by host.clock in GHz (model/params.h CostKind). std::logic_error for a key that
  /// is not a CPU cost or is a rate.
  double cost_ns(const std::string& key) const;
  /// A CPU rate in bytes per ns: a Stall entry's B/ns as it is, a Work entry's B/cycle times
  /// host.clock in GHz. std::logic_error for a key that is not a CPU rate.
  double rate_per_ns(const std::string& key) const;
  /// Value of an Integer parameter (an integral float such as 4096.0 is accepted).
  int64_t integer(const std::string& key) const;
  /// integer(key) of an entry whose range lies within 0..2^32-1.
  uint32_t u32(const std::string& key) const;
  /// Value of a Flag parameter.
  bool flag(const std::string& key) const;
  /// Value of a Text parameter, one of its entry's choices when it has them.
  std::string str(const std::string& key) const;
  /// The record of a declared parameter, for a reader that checks the value itself (irq.affinity
  /// takes a CPU list or an integer); as the typed readers for a missing or undeclared key.
  const Param& read(const std::string& key) const;

  /// True when the platform has `key`.
  bool has(const std::string& key) const;
  /// The record of any key of the file, declared or not, without a check and without marking
  /// it read: for tools that show or rewrite platform files (calibrate, `hcasim params`).
  /// InputError "FILE: missing parameter KEY (platform NAME)" when absent.
  const Param& param(const std::string& key) const;
  /// True once a reader has read `key`.
  bool was_read(const std::string& key) const { return used_.count(key) != 0; }

  /// Throws InputError naming where `key` was given: "FILE:LINE: KEY: what", or
  /// "--set KEY: what (platform NAME)" for a value set on the command line. For a value that
  /// parses but is out of range; `key` must exist.
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  /// Re-throws a model validator's error, "KEY: what" (pcie::validate, ib::validate, ...), as
  /// fail(KEY, what) when KEY is one of this platform's parameters, so that it names the
  /// FILE:LINE or --set; else as "platform NAME: KEY: what".
  [[noreturn]] void fail_from(const InputError& e) const;

  /// Throws InputError for the first parameter no reader has read: call it after reading
  /// everything a simulation needs, so that a misspelt key in a file is an error rather than a
  /// silently ignored line. "FILE:LINE: KEY: unknown parameter (hcasim does not use it)" for a
  /// key the schema does not declare; "FILE:LINE: KEY: not used on this platform (a parameter
  /// of PCI-X platforms, ...)" for a declared key this platform does not read. Keys whose entry
  /// is needed `when` = `skip` are not checked (the SDP path skips the IPoIB path's, which only
  /// sim/ipoib_sim.cpp reads).
  void check_all_used(std::optional<ParamWhen> skip = std::nullopt) const;
  /// As check_all_used, for the keys the schema does not declare and those whose entry is
  /// needed `when` = `only`.
  void check_used_in(ParamWhen only) const;

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
