#include "util/csv.h"

#include <fmt/format.h>

namespace hcasim::util {

std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& origin,
                                                std::vector<size_t>* row_lines) {
  // A UTF-8 byte order mark (spreadsheets write one) is not part of the first column's name.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  size_t line = 1, row_line = 1;  // the line being read, the line the current row began on
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (row.empty() && cell.empty() && !any && !quoted) row_line = line;
    if (quoted) {
      if (c == '\n') ++line;
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cell.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !cell.empty()) {
        row.push_back(std::move(cell));
        rows.push_back(std::move(row));
        if (row_lines) row_lines->push_back(row_line);
      }
      ++line;
      row.clear();
      cell.clear();
      any = false;
    } else {
      cell.push_back(c);
    }
  }
  if (quoted) throw InputError(fmt::format("{}:{}: unterminated quote", origin, row_line));
  if (any || !cell.empty()) {
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
    if (row_lines) row_lines->push_back(row_line);
  }
  return rows;
}

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace hcasim::util
