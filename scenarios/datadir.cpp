// Data directory lookup (datadir.h).
#include "scenarios/datadir.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

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

/// "a FIFO", "a directory", ... for what is there but is no regular file; "" for a regular file
/// or nothing at all.
std::string not_a_file(const fs::path& p) {
  switch (type_of(p)) {
    case fs::file_type::regular:
    case fs::file_type::not_found:
    case fs::file_type::none: return "";
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

/// InputError "WHAT: KIND, not a regular file (...)" when `p` exists and is no regular file.
void refuse_non_file(const fs::path& p, const std::string& what) {
  if (const std::string kind = not_a_file(p); !kind.empty())
    throw InputError(fmt::format("{}: {}, not a regular file (hcasim reads its inputs only from regular files)",
                                 what, kind));
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

/// `name_or_file` as an existing file, else DIR/NAME.toml, else InputError
/// "LABEL: no such KIND file or name (looked in DIR)".
std::string resolve(const std::string& name_or_file, const fs::path& dir, const std::string& label,
                    const char* kind) {
  if (!name_or_file.empty() && is_file(name_or_file)) return name_or_file;
  if (!name_or_file.empty()) refuse_non_file(name_or_file, label);
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

std::string read_text(const std::string& path, const std::string& what) {
  refuse_non_file(path, what);  // a FIFO blocks for ever, /dev/zero never ends
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read ({})", what, std::strerror(errno)));
  const auto too_large = [&] {
    return InputError(
        fmt::format("{}: larger than {} MiB, the most hcasim reads of an input file", what, kMaxInputBytes >> 20));
  };
  std::error_code ec;
  if (const auto size = fs::file_size(path, ec); !ec && size > kMaxInputBytes) throw too_large();
  // Read in pieces and stop past the cap: a file that grows while it is read, or one whose size
  // the kernel does not say (/proc), is bounded too.
  std::string text;
  std::array<char, 65536> piece{};
  while (in.read(piece.data(), piece.size()) || in.gcount() > 0) {
    text.append(piece.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxInputBytes) throw too_large();
  }
  if (in.bad()) throw InputError(fmt::format("{}: cannot read ({})", what, std::strerror(errno)));
  return text;
}

model::Platform load_platform(const std::string& path) { return model::Platform::parse(read_text(path, path), path); }

}  // namespace hcasim::scenarios
