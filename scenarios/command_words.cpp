#include "scenarios/command_words.h"

#include <fmt/format.h>

namespace hcasim::scenarios {

std::string_view base_name(std::string_view word) {
  const size_t slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

size_t taskset_cpus_index(const std::vector<std::string>& words) {
  if (words.empty() || base_name(words.front()) != "taskset") return 0;
  size_t i = 1;
  for (; i < words.size() && words[i].size() > 1 && words[i][0] == '-'; ++i) {
    const std::string& w = words[i];
    if (w == "--all-tasks" || w == "--cpu-list") continue;
    if (w[1] != '-' && w.find_first_not_of("ac", 1) == std::string::npos) continue;  // -c, -a, -ac
    if (w == "-p" || w == "--pid" || (w[1] != '-' && w.find('p') != std::string::npos))
      throw InputError("taskset -p pins a running process, not a command");
    throw InputError(fmt::format("taskset: unsupported option '{}'", w));
  }
  return i;
}

bool is_long_option(std::string_view word, std::string_view name) {
  return word == name || (word.size() > name.size() && word.substr(0, name.size()) == name && word[name.size()] == '=');
}

}  // namespace hcasim::scenarios
