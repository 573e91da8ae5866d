#pragma once
/// \file A config (TcpStreamConfig, PerftestConfig) that the platforms cannot run, named by
/// the config field at fault, so that sim/ never words an error as a flag: the front end that
/// built the config names its own option (netperf_option, perftest_option).
#include <string>
#include <utility>

#include "model/error.h"

namespace hcasim::frontends {

/// Thrown by a simulation (sim/) when a config field is valid on its own but not on these
/// platforms: a -T CPU the host lacks, a size above hca.max_msg_size, a depth above
/// hca.max_qp_wr. `field` is the config member ("local_cpu", "tx_depth"; fields that fail
/// together are joined by '/': "tx_depth/rx_depth"; "transport" is the choice of simulation,
/// run_ipoib_stream for the IPoIB path), `reason` says why without naming the field.
/// what() is "FIELD: REASON", for a caller that does not word it.
class ConfigError : public InputError {
 public:
  ConfigError(std::string field, std::string reason)
      : InputError(field + ": " + reason), field_(std::move(field)), reason_(std::move(reason)) {}
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string field_;
  std::string reason_;
};

/// `e` worded by a front end: "OPTION: REASON", each '/'-separated field of e.field() turned
/// into its option by `option_of` (a field it does not know keeps its own name).
template <class OptionOf>
InputError worded(const ConfigError& e, OptionOf option_of) {
  std::string options;
  std::string::size_type from = 0;
  while (true) {
    const auto slash = e.field().find('/', from);
    if (!options.empty()) options += '/';
    options += option_of(e.field().substr(from, slash - from));
    if (slash == std::string::npos) break;
    from = slash + 1;
  }
  return InputError(options + ": " + e.reason());
}

}  // namespace hcasim::frontends
