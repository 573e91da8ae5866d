#pragma once
/// \file Errors that reach the user: bad flags, sizes, platform or scenario files.
#include <stdexcept>
#include <string>

namespace hcasim {

/// Bad input from the user. what() is one line naming the flag, key or file:line at fault;
/// the command line prints it after "hcasim: " and exits with status 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace hcasim
