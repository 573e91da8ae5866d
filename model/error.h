#pragma once
/// \file Errors that reach the user: bad flags, sizes, platform or scenario files.
#include <stdexcept>
#include <string>
#include <string_view>

namespace hcasim {

std::string one_line(std::string_view text);

/// Bad input from the user. what() is one line naming the flag, key or file:line at fault
/// (the message is passed through one_line(), so quoted input cannot break it); the command
/// line prints it after "hcasim: " and exits with status 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(one_line(what)) {}
};

/// `text` made fit for a one-line message: each run of whitespace that holds a line break
/// becomes one space, and other control bytes are written as \xHH (a parser's description
/// that spans lines, or input bytes quoted back to the user).
std::string one_line(std::string_view text);

}  // namespace hcasim
