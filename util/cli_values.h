#pragma once
/// \file The values of hcasim's own options that take one (--platform, --set, --seed, --csv,
/// --transport, perftest's --columns, ...): an option is never read as another option's value.
/// getopt and CLI11 take the next word whatever it is: "--transport -P 0" would read "-P" as the
/// transport and then "0" as a stray word, "--csv -c" would write a CSV named "-c". A value that
/// starts with '-' is written OPTION=VALUE (a short option's: -jVALUE).
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class ParseError;
}

namespace hcasim::util {

/// True when `word` is an option rather than a value: '-' then a letter ("-P", "-cC"), or "--"
/// then a letter ("--json"). "-1", "-0.5", "-", "--" and "-,5" are values.
bool looks_like_option(std::string_view word);

/// The value the option `flag`, written without '=', takes from its next word `next` (nullptr:
/// there is none). Throws InputError "FLAG: missing value" without one, and "FLAG: missing
/// value (the next word, 'W', is an option; a value that starts with '-' is written
/// FLAG=VALUE)" when the next word looks_like_option (a short FLAG: "-jVALUE").
const std::string& next_word_value(std::string_view flag, const std::string* next);

/// For a CLI11 command: checks every option of `app` that takes a value and is written without
/// '=' in `args` (up to a "--") as next_word_value does, before app parses them.
void check_option_values(const CLI::App& app, const std::vector<std::string>& args);

/// The one-line message for CLI11's ParseError `e` from `app` (named "hcasim COMMAND"): a word
/// CLI11 did not expect becomes "COMMAND: unknown option W (it takes --a, -b/--bb, ...)" or
/// "COMMAND: unexpected argument W"; any other error is CLI11's own text.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e);

}  // namespace hcasim::util
