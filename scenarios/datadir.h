#pragma once
/// \file Where hcasim finds its data: platform files, scenario files, reference CSVs.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/error.h"
#include "model/fault.h"
#include "model/platform.h"

namespace hcasim::scenarios {

/// The data directory: $HCASIM_DATA_DIR when set (and non-empty); else the installed
/// share/hcasim (compile definition HCASIM_INSTALL_DATA_DIR) when it holds
/// scenarios/platforms; else the source tree (HCASIM_SOURCE_DATA_DIR). Never throws.
std::string data_dir();

/// A platform given as NAME or FILE: `name_or_file` itself when it is an existing regular
/// file; else DATA/scenarios/platforms/NAME.toml when that exists. Throws InputError
/// "OPTION NAME: a FIFO, not a regular file (...)" when it exists and is something else (a
/// directory, a device ...), "OPTION NAME: no such platform file or name (looked in DIR)"
/// otherwise, DIR being DATA/scenarios/platforms and OPTION the option that named it.
std::string resolve_platform(const std::string& name_or_file,
                             const std::string& option = "--platform");

/// A scenario given as NAME or FILE: the file itself when it is a regular file; else
/// DATA/scenarios/NAME.toml. Throws InputError "NAME: a FIFO, not a regular file (...)" when
/// it exists and is no regular file, "NAME: no such scenario file or name (looked in DIR)"
/// otherwise.
std::string resolve_scenario(const std::string& name_or_file);

/// A platform file, read by util::read_text (so bounded, and only a regular file) and parsed by
/// model::Platform::parse.
model::Platform load_platform(const std::string& path);

/// The platform assignments among `sets`: every fault.* and qp.* assignment goes through
/// model::apply_fault_setting (into `faults` and `retry` when given, in order; InputError
/// "--set KEY: ..." on a bad one) and the others are returned, in order.
std::vector<std::string> platform_settings(const std::vector<std::string>& sets, model::FaultConfig* faults = nullptr,
                                           model::RcRetry* retry = nullptr);

/// When `e` ("--set KEY: ...", from model::Platform) is about an assignment of `sets` that
/// `origins` (parallel, or shorter) says was written elsewhere than where the caller would blame,
/// throws it there: "ORIGIN: hcasim directive: --set KEY: ..." for a run file's directive
/// (ORIGIN "FILE:LINE"), the message alone for "--set" (the command line). Returns when the
/// assignment's origin is "" or not known, or `e` is not about one.
void throw_at_setting(const std::vector<std::string>& sets, const std::vector<std::string>& origins,
                      const InputError& e);

/// The two hosts of a run: the local platform (--platform NAME|FILE), the remote one
/// (--remote-platform, default: the same), then every --set assignment applied to both, in
/// order (but fault.* and qp.*: platform_settings). Throws InputError naming the option, file:line or key at fault.
std::pair<model::Platform, model::Platform> load_host_platforms(const std::string& platform,
                                                                const std::optional<std::string>& remote_platform,
                                                                const std::vector<std::string>& sets);

/// The files load_host_platforms reads: --platform's and, when given, --remote-platform's.
std::vector<std::string> platform_files(const std::string& platform, const std::optional<std::string>& remote_platform);

}  // namespace hcasim::scenarios
