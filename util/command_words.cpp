#include "util/command_words.h"

#include <fmt/format.h>

namespace hcasim::util {

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

std::vector<std::string> split_command_line(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos)
        throw InputError(fmt::format("unterminated single quote in: {}", text));
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= text.size())
          throw InputError(fmt::format("unterminated double quote in: {}", text));
        if (text[j] == '"') break;
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[j + 1]) != std::string_view::npos)
          ++j;
        word.push_back(text[j]);
      }
      i = j;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size())
        throw InputError(fmt::format("trailing backslash in: {}", text));
      ++i;
      if (text[i] != '\n') word.push_back(text[i]);  // backslash-newline joins lines
      in_word = true;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace hcasim::util
