// calibrate's platform file (fitted_platform.h): the base text rewritten in place and checked.
#include "scenarios/fitted_platform.h"

#include <cmath>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"

namespace hcasim::scenarios {

double param_number(const model::Param& p) {
  if (const auto* d = std::get_if<double>(&p.value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&p.value)) return static_cast<double>(*i);
  return std::nan("");
}

std::string rewrite_platform(const std::string& base_text, const std::string& origin,
                             const std::vector<std::tuple<std::string, std::string, std::string>>& changes) {
  const model::Platform before = model::Platform::parse(base_text, origin);
  std::vector<std::string> lines;
  {
    std::istringstream in(base_text);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  static const std::regex section_re(R"(^\s*\[([A-Za-z0-9_.-]+)\]\s*(#.*)?$)");
  static const std::regex name_re(R"(^(\s*name\s*=\s*")([^"]*)(".*)$)");
  auto toml_string = [](const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  // The end of an inline table that starts at `open` ('{'), skipping quoted strings; npos when
  // it does not close on this line.
  auto table_end = [](const std::string& line, size_t open) {
    bool quoted = false;
    for (size_t i = open; i < line.size(); ++i) {
      if (quoted && line[i] == '\\') {
        ++i;
      } else if (line[i] == '"') {
        quoted = !quoted;
      } else if (!quoted && line[i] == '}') {
        return i;
      }
    }
    return std::string::npos;
  };
  std::string section;
  std::vector<bool> done(changes.size(), false);
  bool named = false;
  for (auto& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, section_re)) {
      section = m[1];
      continue;
    }
    if (section.empty() && !named && std::regex_match(line, m, name_re)) {
      line = m[1].str() + m[2].str() + "-fitted" + m[3].str();
      named = true;
      continue;
    }
    for (size_t c = 0; c < changes.size(); ++c) {
      const auto& [key, literal, source] = changes[c];
      const auto dot = key.find('.');
      if (key.substr(0, dot) != section) continue;
      const std::string name = key.substr(dot + 1);
      const size_t indent = line.find_first_not_of(" \t");
      if (indent == std::string::npos || line.compare(indent, name.size(), name) != 0) continue;
      const size_t eq = line.find_first_not_of(" \t", indent + name.size());
      if (eq == std::string::npos || line[eq] != '=') continue;
      const size_t open = line.find_first_not_of(" \t", eq + 1);
      const size_t close = open == std::string::npos || line[open] != '{' ? std::string::npos : table_end(line, open);
      if (close == std::string::npos)
        throw InputError(fmt::format("{}: {}: not a one-line {{ value, unit, source }} table", origin, key));
      // The whole table is written again (its unit as the file declares it); what follows it
      // on the line (a comment) stays.
      line = fmt::format("{}{} = {{ value = {}, unit = {}, source = {} }}{}", line.substr(0, indent), name, literal,
                         toml_string(before.param(key).unit), toml_string(source), line.substr(close + 1));
      done[c] = true;
    }
  }
  for (size_t c = 0; c < changes.size(); ++c)
    if (!done[c])
      throw InputError(fmt::format("{}: {}: not found as a one-line {{ value, unit, source }} table in its section",
                                   origin, std::get<0>(changes[c])));
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  // The result must read back with exactly the new values.
  const model::Platform check = model::Platform::parse(out, origin + " (fitted)");
  for (const auto& [key, literal, source] : changes) {
    const model::Param& p = check.param(key);
    model::Platform expected = check;
    expected.set(key + "=" + literal);
    if (param_number(expected.param(key)) != param_number(p) || p.source != source)
      throw std::runtime_error(fmt::format("rewrite_platform: {} did not read back as {}", key, literal));
  }
  return out;
}

}  // namespace hcasim::scenarios
