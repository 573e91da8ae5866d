// Input files (input_file.h).
#include "util/input_file.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "model/error.h"

namespace hcasim::util {

namespace fs = std::filesystem;

std::string not_a_file(const std::string& path) {
  std::error_code ec;
  switch (fs::status(path, ec).type()) {
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

void refuse_non_file(const std::string& path, const std::string& what) {
  if (const std::string kind = not_a_file(path); !kind.empty())
    throw InputError(fmt::format("{}: {}, not a regular file (hcasim reads its inputs only from regular files)",
                                 what, kind));
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

}  // namespace hcasim::util
