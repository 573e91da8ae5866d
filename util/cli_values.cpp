#include "util/cli_values.h"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/error.h"

namespace hcasim::util {

bool looks_like_option(std::string_view word) {
  const auto letter = [&](size_t i) { return i < word.size() && std::isalpha(static_cast<unsigned char>(word[i])); };
  if (word.size() < 2 || word[0] != '-') return false;
  return letter(1) || (word[1] == '-' && letter(2));
}

const std::string& next_word_value(std::string_view flag, const std::string* next) {
  if (next == nullptr) throw InputError(fmt::format("{}: missing value", flag));
  if (looks_like_option(*next)) {
    const bool is_long = flag.size() > 2 && flag[1] == '-';
    throw InputError(fmt::format(
        "{}: missing value (the next word, '{}', is an option; a value that starts with '-' is written {}{}VALUE)", flag,
        *next, flag, is_long ? "=" : ""));
  }
  return *next;
}

void check_option_values(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> takes_value;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_items_expected_min() == 0 || opt->get_positional()) continue;  // a flag, or a positional
    for (const std::string& l : opt->get_lnames()) takes_value.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) takes_value.push_back("-" + s);
  }
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i)
    for (const std::string& name : takes_value)
      if (args[i] == name) {
        (void)next_word_value(name, i + 1 < args.size() ? &args[i + 1] : nullptr);
        ++i;  // the value
        break;
      }
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::string command = app.get_name().rfind("hcasim ", 0) == 0 ? app.get_name().substr(7) : app.get_name();
  // CLI11 2.x's ExtrasError: "The following argument(s) was/were not expected: W [W...]".
  const size_t colon = what.find(" not expected: ");
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr || colon == std::string::npos) return what;
  // hcasim's commands hand CLI11 their words reversed (its last value wins), so the words come
  // back last first.
  std::vector<std::string> words;
  for (size_t at = colon + 15; at <= what.size();) {
    const size_t end = std::min(what.find(' ', at), what.size());
    words.insert(words.begin(), what.substr(at, end - at));
    at = end + 1;
  }
  const auto option = std::find_if(words.begin(), words.end(), [](const std::string& w) { return looks_like_option(w); });
  if (option == words.end()) return fmt::format("{}: unexpected argument '{}'", command, fmt::join(words, " "));
  const std::string first = *option;
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional() || (opt->get_lnames().empty() && opt->get_snames().empty())) continue;
    std::string n;
    for (const std::string& s : opt->get_snames()) n += (n.empty() ? "-" : "/-") + s;
    for (const std::string& l : opt->get_lnames()) n += (n.empty() ? "--" : "/--") + l;
    names.push_back(n);
  }
  return fmt::format("{}: unknown option {} (it takes {})", command, first, fmt::join(names, ", "));
}

}  // namespace hcasim::util
