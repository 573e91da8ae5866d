// Data directory lookup (datadir.h).
#include "scenarios/datadir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "util/input_file.h"

#ifndef HCASIM_SOURCE_DATA_DIR
#define HCASIM_SOURCE_DATA_DIR "."
#endif
#ifndef HCASIM_INSTALL_DATA_DIR
#define HCASIM_INSTALL_DATA_DIR "/usr/local/share/hcasim"
#endif

namespace hcasim::scenarios {

namespace fs = std::filesystem;

namespace {

/// What `p` is, following symlinks: fs::file_type::not_found when there is nothing (or it
/// cannot be examined).
fs::file_type type_of(const fs::path& p) {
  std::error_code ec;
  return fs::status(p, ec).type();
}

bool is_file(const fs::path& p) { return type_of(p) == fs::file_type::regular; }

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

/// `name_or_file` as an existing file, else DIR/NAME.toml, else InputError
/// "LABEL: no such KIND file or name (looked in DIR)".
std::string resolve(const std::string& name_or_file, const fs::path& dir, const std::string& label,
                    const char* kind) {
  if (!name_or_file.empty() && is_file(name_or_file)) return name_or_file;
  if (!name_or_file.empty()) util::refuse_non_file(name_or_file, label);
  if (!name_or_file.empty() && name_or_file.find('/') == std::string::npos) {
    const fs::path candidate = dir / (name_or_file + ".toml");
    if (is_file(candidate)) return candidate.string();
  }
  throw InputError(
      fmt::format("{}: no such {} file or name (looked in {})", label, kind, dir.string()));
}

}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("HCASIM_DATA_DIR"); env && *env) return env;
  const fs::path installed = HCASIM_INSTALL_DATA_DIR;
  if (is_dir(installed / "scenarios" / "platforms")) return installed.string();
  return HCASIM_SOURCE_DATA_DIR;
}

std::string resolve_platform(const std::string& name_or_file, const std::string& option) {
  return resolve(name_or_file, fs::path(data_dir()) / "scenarios" / "platforms",
                 option + " " + name_or_file, "platform");
}

std::string resolve_scenario(const std::string& name_or_file) {
  return resolve(name_or_file, fs::path(data_dir()) / "scenarios", name_or_file, "scenario");
}

std::vector<std::string> platform_settings(const std::vector<std::string>& sets, model::FaultConfig* faults,
                                           model::RcRetry* retry) {
  model::FaultConfig f;
  model::RcRetry r;
  std::vector<std::string> out;
  for (const auto& s : sets)
    if (!model::apply_fault_setting(s, faults ? *faults : f, retry ? *retry : r)) out.push_back(s);
  return out;
}

void throw_at_setting(const std::vector<std::string>& sets, const std::vector<std::string>& origins,
                      const InputError& e) {
  const std::string_view msg = e.what();
  const size_t colon = msg.find(':');
  if (!msg.starts_with("--set ") || colon == std::string_view::npos) return;
  const std::string_view key = msg.substr(6, colon - 6);
  for (size_t i = std::min(sets.size(), origins.size()); i-- > 0;) {
    if (std::string_view(sets[i]).substr(0, sets[i].find('=')) != key) continue;
    if (origins[i].empty()) return;
    if (origins[i] == "--set") throw InputError(std::string(msg));
    throw InputError(fmt::format("{}: hcasim directive: {}", origins[i], msg));
  }
}

std::pair<model::Platform, model::Platform> load_host_platforms(const std::string& platform,
                                                                const std::optional<std::string>& remote_platform,
                                                                const std::vector<std::string>& sets) {
  model::Platform local = load_platform(resolve_platform(platform));
  model::Platform remote = remote_platform
                               ? load_platform(resolve_platform(*remote_platform, "--remote-platform"))
                               : local;
  for (const auto& assignment : platform_settings(sets)) {
    local.set(assignment);
    remote.set(assignment);
  }
  return {std::move(local), std::move(remote)};
}

std::vector<std::string> platform_files(const std::string& platform, const std::optional<std::string>& remote_platform) {
  std::vector<std::string> files = {resolve_platform(platform)};
  if (remote_platform) files.push_back(resolve_platform(*remote_platform, "--remote-platform"));
  return files;
}

model::Platform load_platform(const std::string& path) {
  return model::Platform::parse(util::read_text(path, path), path);
}

}  // namespace hcasim::scenarios
