// `hcasim calibrate` (calibrate.h): child simulations of the observations (observations.h) per
// evaluation, NLopt BOBYQA on log-parameters, the report and the fitted platform file
// (fitted_platform.h).
#include "scenarios/calibrate.h"

#include <CLI/CLI.hpp>
#include <nlopt.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "frontends/json_output.h"
#include "frontends/netperf_cli.h"
#include "frontends/netperf_output.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "sim/testbed.h"
#include "util/cli_values.h"
#include "util/csv.h"
#include "util/input_file.h"
#include "util/number.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

using util::csv_cell;


namespace {

namespace fs = std::filesystem;

std::string short_number(double v) { return fmt::format("{:.6g}", v); }


/// The TOML literal of a fitted value: an integer parameter keeps an integer literal, others
/// have 6 significant digits.
std::string fitted_literal(const FitParam& p, double v) {
  if (p.integer) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}

/// The value a child is given for `p` at `v`: exactly what fitted_literal writes, so that the
/// evaluation cache, the children and the written file agree.
double effective(const FitParam& p, double v) { return std::stod(fitted_literal(p, v)); }

/// Changes to one platform file: (key, TOML literal, source), as rewrite_platform takes them.
using Changes = std::vector<std::tuple<std::string, std::string, std::string>>;

/// The changes to one host's file: the parameters of that host (`remote` or not) at `values`
/// (one per parameter), each with the source `source(k)`.
Changes host_changes(const std::vector<FitParam>& params, const std::vector<double>& values, bool remote,
                     const std::function<std::string(size_t)>& source) {
  Changes out;
  for (size_t k = 0; k < params.size(); ++k)
    if (params[k].remote == remote) out.emplace_back(params[k].key, fitted_literal(params[k], values[k]), source(k));
  return out;
}

/// Result of one evaluation: every quantity of every observation, in order.
using Simulated = std::vector<std::vector<double>>;

/// Relative errors of `sim` against the observations' measurements, flattened.
std::vector<double> errors_of(const std::vector<Observation>& obs, const Simulated& sim) {
  std::vector<double> e;
  for (size_t i = 0; i < obs.size(); ++i)
    for (size_t q = 0; q < obs[i].measured.size(); ++q)
      e.push_back((sim[i][q] - obs[i].measured[q].second) / obs[i].measured[q].second);
  return e;
}

/// The simulation length calibrate gives every child (--duration, --iterations, --steady).
SimLength length_of(const CalibrateOptions& o) {
  return SimLength{o.duration_s > 0 ? std::optional<double>(o.duration_s) : std::nullopt,
                   o.iterations > 0 ? std::optional<uint64_t>(o.iterations) : std::nullopt,
                   o.steady_rel > 0 ? std::optional<double>(o.steady_rel) : std::nullopt};
}

/// One host's base platform: the resolved file and its text (the fitted file is this text with
/// the fitted values rewritten in place, fitted_platform.h).
struct BaseFile {
  std::string path;
  std::string text;
};

/// Runs the observations at parameter values `values` (one per fitted parameter) as children.
/// One machine: the fitted values go to the children as --set (both hosts). Two machines
/// (--remote-platform): each evaluation writes both platforms with their fitted values into a
/// private temporary directory (removed with the Evaluator) and the children read them.
class Evaluator {
 public:
  Evaluator(const CalibrateOptions& o, BaseFile local, std::optional<BaseFile> remote, std::vector<FitParam> params)
      : o_(o), local_(std::move(local)), remote_(std::move(remote)), params_(std::move(params)) {
    if (remote_) {
      std::string pattern = (fs::temp_directory_path() / "hcasim-calibrate-XXXXXX").string();
      if (!mkdtemp(pattern.data()))
        throw InputError(fmt::format("{}: cannot make a temporary directory: {}", pattern, std::strerror(errno)));
      dir_ = pattern;
    }
  }
  ~Evaluator() {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// Simulated quantities of `obs` at `values`; ChildFailure / Interrupted pass through.
  Simulated simulate(const std::vector<Observation>& obs, const std::vector<double>& values) {
    std::vector<std::string> sets = o_.sets;
    std::string local_file = local_.path;
    std::optional<std::string> remote_file;
    if (remote_) {
      const auto source = [](size_t) { return std::string("evaluated by hcasim calibrate"); };
      local_file = (dir_ / "local.toml").string();
      remote_file = (dir_ / "remote.toml").string();
      util::write_file_atomically(
          local_file, rewrite_platform(local_.text, local_.path, host_changes(params_, values, false, source)),
          "calibrate");
      util::write_file_atomically(
          *remote_file, rewrite_platform(remote_->text, remote_->path, host_changes(params_, values, true, source)),
          "calibrate");
    } else {
      for (size_t k = 0; k < params_.size(); ++k)
        sets.push_back(fmt::format("{}={}", params_[k].key, fitted_literal(params_[k], values[k])));
    }
    std::vector<ChildRun> runs;
    for (const Observation& ob : obs) {
      std::vector<std::string> all = ob.set;
      all.insert(all.end(), sets.begin(), sets.end());
      runs.push_back({observation_argv(ob, local_file, all, length_of(o_), remote_file), ob.label, ob.where});
    }
    const size_t parallel = static_cast<size_t>(o_.jobs > 0 ? o_.jobs : online_cpus());
    const std::vector<ChildResult> results = run_children(runs, parallel);
    Simulated sim;
    for (size_t i = 0; i < obs.size(); ++i)
      sim.push_back(simulated_quantities(obs[i], results[i].csv, obs[i].label));
    ++children_batches_;
    return sim;
  }

  size_t batches() const { return children_batches_; }

 private:
  const CalibrateOptions& o_;
  BaseFile local_;
  std::optional<BaseFile> remote_;
  std::vector<FitParam> params_;
  fs::path dir_;  // two machines: where each evaluation's platform files go
  size_t children_batches_ = 0;
};

/// State the NLopt objective needs.
struct FitState {
  Evaluator* evaluator = nullptr;
  const std::vector<Observation>* obs = nullptr;
  const std::vector<FitParam>* params = nullptr;
  std::map<std::vector<double>, std::pair<double, Simulated>> cache;  // effective values -> (rms, sim)
  std::exception_ptr error;
  nlopt::opt* opt = nullptr;
  int evals = 0;      // simulated (not cached) evaluations
  int max_evals = 0;  // --max-evals
  std::ostream* out = &std::cout;  // where an evaluation's line goes (nowhere with --json)
  std::vector<std::pair<double, std::vector<double>>> history;  // (rms, values) per evaluation, in order
  double best = HUGE_VAL;
  std::vector<double> best_values;
};

std::vector<double> values_of(const std::vector<FitParam>& params, const std::vector<double>& x) {
  std::vector<double> v;
  for (size_t k = 0; k < params.size(); ++k) v.push_back(effective(params[k], params[k].start * std::exp(x[k])));
  return v;
}

double objective(const std::vector<double>& x, std::vector<double>& /*grad*/, void* data) {
  auto& st = *static_cast<FitState*>(data);
  const std::vector<double> v = values_of(*st.params, x);
  try {
    auto it = st.cache.find(v);
    if (it == st.cache.end()) {
      if (st.evals >= st.max_evals) {
        st.opt->force_stop();
        return HUGE_VAL;
      }
      Simulated sim = st.evaluator->simulate(*st.obs, v);
      const double f = rms(errors_of(*st.obs, sim));
      it = st.cache.emplace(v, std::make_pair(f, std::move(sim))).first;
      ++st.evals;
      std::string line = fmt::format("{:>5} {:>10.3f} %", st.evals, 100 * f);
      for (const double value : v) line += fmt::format(" {:>14}", short_number(value));
      *st.out << line << "\n" << std::flush;
      st.history.emplace_back(f, v);
    }
    if (it->second.first < st.best) {
      st.best = it->second.first;
      st.best_values = v;
    }
    return it->second.first;
  } catch (...) {
    st.error = std::current_exception();
    st.opt->force_stop();
    return HUGE_VAL;
  }
}

std::string pct(double e) { return fmt::format("{:+.2f} %", 100 * e); }

/// The per-run table: quantity, measured, simulated at the start and at the fit, errors.
std::string format_errors(const std::string& title, const std::vector<Observation>& obs, const Simulated& start,
                          const Simulated& fitted) {
  std::string out = fmt::format("{}\n{:<58} {:>12} {:>12} {:>10} {:>12} {:>10}\n", title, "run / quantity", "measured",
                                "start", "error", "fitted", "error");
  for (size_t i = 0; i < obs.size(); ++i) {
    out += fmt::format("{}\n", obs[i].label);
    for (size_t q = 0; q < obs[i].measured.size(); ++q) {
      const double m = obs[i].measured[q].second;
      out += fmt::format("  {:<56} {:>12} {:>12} {:>10} {:>12} {:>10}\n", obs[i].measured[q].first,
                         short_number(m), short_number(start[i][q]), pct((start[i][q] - m) / m),
                         short_number(fitted[i][q]), pct((fitted[i][q] - m) / m));
    }
  }
  const auto es = errors_of(obs, start), ef = errors_of(obs, fitted);
  auto max_abs = [](const std::vector<double>& e) {
    double m = 0;
    for (const double x : e) m = std::max(m, std::abs(x));
    return m;
  };
  out += fmt::format("RMS error {:.2f} % at the start, {:.2f} % fitted; max |error| {:.2f} % and {:.2f} %\n",
                     100 * rms(es), 100 * rms(ef), 100 * max_abs(es), 100 * max_abs(ef));
  return out;
}

/// --csv rows of one set of runs ("fit" or "holdout"), in full precision, errors in %.
std::string csv_rows(const std::string& set, const std::vector<Observation>& obs, const Simulated& start,
                     const Simulated& fitted) {
  std::string out;
  for (size_t i = 0; i < obs.size(); ++i)
    for (size_t q = 0; q < obs[i].measured.size(); ++q) {
      const double m = obs[i].measured[q].second;
      out += fmt::format("{},{},{},{},{},{:.4f},{},{:.4f}\n", set, csv_cell(obs[i].label),
                         csv_cell(obs[i].measured[q].first), m, start[i][q], 100 * (start[i][q] - m) / m,
                         fitted[i][q], 100 * (fitted[i][q] - m) / m);
    }
  return out;
}

/// The unit of a measured quantity's name ("throughput", "sd_local", "t_typical 64 B", ...).
const char* quantity_unit(const std::string& name) {
  if (name == "throughput") return "Mbit/s";
  if (name == "transaction_rate") return "transactions/s";
  if (name == "sd_local_per_tr" || name == "sd_remote_per_tr") return "us/Tr";
  if (name.rfind("sd_", 0) == 0) return "us/KB";
  if (name.rfind("t_typical", 0) == 0) return "us";
  if (name == "usec_per_iter") return "us/iter";
  return "Gbit/s";
}

/// --json's errors of one set of runs: the --csv rows' values (unrounded errors) and the RMS
/// and max |error| line of the text, all errors in %.
frontends::Json errors_json(const std::vector<Observation>& obs, const Simulated& start, const Simulated& fitted) {
  frontends::Json rows = frontends::Json::array();
  for (size_t i = 0; i < obs.size(); ++i)
    for (size_t q = 0; q < obs[i].measured.size(); ++q) {
      const double m = obs[i].measured[q].second;
      frontends::Json r;
      r["run"] = obs[i].label;
      r["where"] = obs[i].where;
      r["quantity"] = obs[i].measured[q].first;
      r["unit"] = quantity_unit(obs[i].measured[q].first);
      r["measured"] = m;
      r["start"] = start[i][q];
      r["start_error_pct"] = 100 * (start[i][q] - m) / m;
      r["fitted"] = fitted[i][q];
      r["fitted_error_pct"] = 100 * (fitted[i][q] - m) / m;
      rows.push_back(std::move(r));
    }
  const auto es = errors_of(obs, start), ef = errors_of(obs, fitted);
  auto max_abs = [](const std::vector<double>& e) {
    double m = 0;
    for (const double x : e) m = std::max(m, std::abs(x));
    return m;
  };
  frontends::Json j;
  j["runs"] = obs.size();
  j["quantities"] = std::move(rows);
  j["rms_error_start_pct"] = 100 * rms(es);
  j["rms_error_fitted_pct"] = 100 * rms(ef);
  j["max_abs_error_start_pct"] = 100 * max_abs(es);
  j["max_abs_error_fitted_pct"] = 100 * max_abs(ef);
  return j;
}

std::vector<Observation> load_all(const std::vector<std::string>& items) {
  std::vector<Observation> all;
  for (const auto& item : items) {
    auto obs = load_observations(item);
    all.insert(all.end(), std::make_move_iterator(obs.begin()), std::make_move_iterator(obs.end()));
  }
  return all;
}

}  // namespace

// --- pieces ------------------------------------------------------------------------------------

FitParam parse_fit_param(const std::string& item, const model::Platform& platform,
                         const std::vector<std::string>& starts) {
  const auto eq = item.find('=');
  FitParam p;
  p.key = item.substr(0, eq);
  auto fail = [&](const std::string& what) { throw InputError(fmt::format("--fit {}: {}", item, what)); };
  if (p.key.empty()) fail("no parameter name");
  if (!platform.has(p.key)) fail(fmt::format("platform {} has no parameter {}", platform.name(), p.key));
  const model::Param& param = platform.param(p.key);
  if (!std::holds_alternative<double>(param.value) && !std::holds_alternative<int64_t>(param.value))
    fail("not a number (only numeric parameters can be fitted)");
  p.unit = param.unit;
  p.integer = std::holds_alternative<int64_t>(param.value);
  if (p.integer && p.unit.empty())
    fail("a count without a unit (a PCIe generation, a number of cores) is the machine's structure, not a "
         "quantity to fit: give it with --set");
  p.start = param_number(param);
  bool started = false;  // --start gave it
  for (const auto& s : starts) {
    const auto seq = s.find('=');
    if (s.substr(0, seq) != p.key) continue;
    const auto v = seq == std::string::npos ? std::nullopt : util::parse_number(s.substr(seq + 1));
    if (!v || !std::isfinite(*v)) throw InputError(fmt::format("--start {}: not KEY=NUMBER", s));
    p.start = *v;
    started = true;
  }
  if (!(p.start > 0))
    fail(fmt::format("its start {} must be > 0 (the fit works on logarithms{})", short_number(p.start),
                     started ? "" : "; give --start"));
  p.lower = p.start / 4;
  p.upper = p.start * 4;
  if (eq != std::string::npos) {
    const std::string bounds = item.substr(eq + 1);
    const auto colon = bounds.find(':');
    const auto lo = colon == std::string::npos ? std::nullopt : util::parse_number(bounds.substr(0, colon));
    const auto hi = colon == std::string::npos ? std::nullopt : util::parse_number(bounds.substr(colon + 1));
    if (!lo || !hi || !std::isfinite(*lo) || !std::isfinite(*hi)) fail("bounds must be LO:HI, two numbers");
    if (*lo <= 0) fail("the lower bound must be > 0");
    if (*lo >= *hi) fail("the lower bound must be below the upper");
    p.lower = *lo;
    p.upper = *hi;
  }
  if (p.start < p.lower || p.start > p.upper)
    fail(fmt::format("the start {} is outside [{}, {}]", short_number(p.start), short_number(p.lower),
                     short_number(p.upper)));
  return p;
}

double rms(const std::vector<double>& errors) {
  if (errors.empty()) return 0;
  double sum = 0;
  for (const double e : errors) sum += e * e;
  return std::sqrt(sum / static_cast<double>(errors.size()));
}

// --- the command -------------------------------------------------------------------------------

CalibrateOptions parse_calibrate_args(const std::vector<std::string>& args) {
  CLI::App app{"Fits platform parameters to real runs.", "hcasim calibrate"};
  app.set_help_flag();
  CalibrateOptions o;
  std::string jobs, evals, duration, iterations, steady, output, csv;
  std::vector<std::string> fit;
  // --platform, --fit and RUNS are required, checked after the parse: CLI11 checks requirements
  // before unknown options, and `calibrate --bogus` would say "--platform is required".
  auto* opt_platform = app.add_option("--platform", o.platform, "base platform NAME|FILE");
  std::string remote_platform, remote_output;
  auto* opt_remote = app.add_option("--remote-platform", remote_platform, "the other host's base platform NAME|FILE");
  auto* opt_remote_out = app.add_option("--remote-output", remote_output, "fitted remote platform file");
  // One value per occurrence (a later positional is a RUNS item, not another value); --holdout
  // takes every word up to the next option.
  // Split here, not by CLI11's delimiter, which drops empty items (`--fit a,,b`, `--fit ,`).
  std::vector<std::string> fit_lists;
  auto* opt_fit = app.add_option("--fit", fit_lists, "KEY[=LO:HI],... parameters to fit")->allow_extra_args(false);
  app.add_option("--start", o.starts, "KEY=VALUE starting value")->allow_extra_args(false);
  app.add_option("--set", o.sets, "KEY=VALUE platform change, not fitted")->allow_extra_args(false);
  app.add_option("--holdout", o.holdout, "RUNS predicted, not fitted");
  auto* opt_out = app.add_option("-o,--output", output, "fitted platform file");
  auto* opt_csv = app.add_option("--csv", csv, "errors per run and quantity as CSV");
  auto* opt_jobs = app.add_option("-j,--jobs", jobs, "simulations at once");
  auto* opt_evals = app.add_option("--max-evals", evals, "most objective evaluations");
  auto* opt_duration = app.add_option("--duration", duration, "netperf simulated seconds (0 = -l)");
  auto* opt_iter = app.add_option("--iterations", iterations, "perftest iterations cap (0 = -n)");
  auto* opt_steady = app.add_option("--steady", steady, "SDP runs' steady-state precision (0 = whole --duration)");
  auto* opt_runs = app.add_option("runs", o.runs, "RUNS to fit: run files or scenarios[:REGEX]");
  app.add_flag("--json", o.json, "the report as JSON");
  for (auto* opt : {opt_platform, opt_remote, opt_remote_out, opt_out, opt_csv, opt_jobs, opt_evals, opt_duration,
                    opt_iter, opt_steady})
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  util::check_option_values(app, args);
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError& e) {
    throw InputError(util::parse_error_message(app, e));
  }
  util::check_given_once("-o", opt_out->results());
  util::check_given_once("--csv", opt_csv->results());
  util::check_single_value("--platform", opt_platform->results());
  util::check_single_value("--remote-platform", opt_remote->results());
  util::check_given_once("--remote-output", opt_remote_out->results());
  util::check_single_value("-j", opt_jobs->results());
  util::check_single_value("--max-evals", opt_evals->results());
  util::check_single_value("--duration", opt_duration->results());
  util::check_single_value("--iterations", opt_iter->results());
  util::check_single_value("--steady", opt_steady->results());
  for (auto* opt : {opt_platform, opt_fit, opt_runs})
    if (!opt->count()) throw InputError(fmt::format("{} is required", opt->get_name()));
  for (const std::string& list : fit_lists) {
    size_t from = 0;
    for (;;) {
      const size_t comma = list.find(',', from);
      const std::string item = list.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (item.empty()) throw InputError(fmt::format("--fit {}: an empty parameter name (KEY[=LO:HI],...)", list));
      fit.push_back(item);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  o.fit = fit;
  auto whole = [](const std::string& flag, const std::string& text, double lo, double hi) {
    const auto n = util::parse_number(text);
    if (!n || *n != std::floor(*n)) throw InputError(fmt::format("{}: '{}' is not a whole number", flag, text));
    if (*n < lo || *n > hi) throw InputError(fmt::format("{}: '{}' must be {}..{}", flag, text, lo, hi));
    return *n;
  };
  if (opt_jobs->count()) o.jobs = parse_jobs(jobs);
  if (opt_evals->count()) o.max_evals = static_cast<int>(whole("--max-evals", evals, 1, 100000));
  if (opt_iter->count()) o.iterations = parse_iterations_flag(iterations);
  if (opt_duration->count()) o.duration_s = parse_duration_flag(duration);
  if (opt_steady->count()) {
    const auto v = util::parse_number(steady);
    if (!v || !(*v == 0 || (*v > 0 && *v < 0.1)))
      throw InputError(fmt::format("--steady: '{}' is not 0 or a relative precision between 0 and 0.1", steady));
    o.steady_rel = *v;
  }
  if (opt_out->count()) {
    if (output.empty()) throw InputError("-o: empty path");
    o.output = output;
  }
  if (opt_remote->count()) {
    if (remote_platform.empty()) throw InputError("--remote-platform: empty name");
    o.remote_platform = remote_platform;
  }
  if (opt_remote_out->count()) {
    if (remote_output.empty()) throw InputError("--remote-output: empty path");
    o.remote_output = remote_output;
  }
  if (opt_csv->count()) {
    if (csv.empty()) throw InputError("--csv: empty path");
    o.csv_path = csv;
  }
  if (o.fit.empty()) throw InputError("--fit: no parameter");
  if (o.json)
    if (const std::string conflict = frontends::json_csv_conflict(o.csv_path); !conflict.empty())
      throw InputError(conflict);
  o.args = args;
  return o;
}

int run_calibrate(const CalibrateOptions& o) {
  // With --json nothing is printed until the document: the text goes nowhere.
  std::ostream discard(nullptr);
  std::ostream& out = o.json ? discard : std::cout;
  // Everything is checked before the first simulation.
  const std::string platform_file = resolve_platform(o.platform);
  const std::string base_text = util::read_text(platform_file, platform_file);
  const model::Platform as_filed = model::Platform::parse(base_text, platform_file);
  model::Platform base = as_filed;  // with --set: the platform the runs are simulated on
  for (const auto& s : platform_settings(o.sets)) base.set(s);
  (void)sim::read_host_params(base);  // the children's model checks (--set pcie.gen=9), now
  // Two machines: the remote host's base, with --set as the children apply it (both hosts).
  std::optional<BaseFile> remote_file;
  std::optional<model::Platform> remote_as_filed, remote_base;
  if (o.remote_platform) {
    const std::string path = resolve_platform(*o.remote_platform, "--remote-platform");
    remote_file = BaseFile{path, util::read_text(path, path)};
    remote_as_filed = model::Platform::parse(remote_file->text, path);
    remote_base = *remote_as_filed;
    for (const auto& s : platform_settings(o.sets)) remote_base->set(s);
    (void)sim::read_host_params(*remote_base);
  }
  constexpr std::string_view kRemote = "remote:";
  std::vector<FitParam> params;
  for (const auto& item : o.fit) {
    const bool remote = item.rfind(kRemote, 0) == 0;
    if (remote && !o.remote_platform)
      throw InputError(fmt::format("--fit {}: a remote host's parameter needs --remote-platform", item));
    // A remote item is parsed without its prefix, against the remote base, with its --start.
    std::vector<std::string> starts;
    for (const auto& s : o.starts)
      if ((s.rfind(kRemote, 0) == 0) == remote) starts.push_back(remote ? s.substr(kRemote.size()) : s);
    FitParam p;
    try {
      p = parse_fit_param(remote ? item.substr(kRemote.size()) : item, remote ? *remote_base : base, starts);
    } catch (const InputError& e) {
      if (!remote) throw;
      // "--fit KEY: ..." and "--start KEY=V: ..." name the items as given.
      const std::string what = e.what(), inner = "--fit " + item.substr(kRemote.size());
      if (what.rfind("--start ", 0) == 0) throw InputError("--start remote:" + what.substr(8));
      throw InputError(fmt::format("--fit {}{}", item, what.rfind(inner, 0) == 0 ? what.substr(inner.size()) : ": " + what));
    }
    p.remote = remote;
    for (const auto& q : params)
      if (q.name() == p.name()) throw InputError(fmt::format("--fit {}: given twice", p.name()));
    params.push_back(p);
  }
  for (const auto& s : o.starts) {
    const std::string key = s.substr(0, s.find('='));
    if (std::none_of(params.begin(), params.end(), [&](const FitParam& p) { return p.name() == key; }))
      throw InputError(fmt::format("--start {}: {} is not a --fit parameter", s, key));
  }
  // Two machines: the fitted values are in the platform files and --set comes after them, so a
  // key both fitted and set would not be fitted.
  auto check_not_fitted = [&](const std::vector<std::string>& sets, const std::string& what) {
    if (!o.remote_platform) return;
    for (const auto& s : sets) {
      const std::string key = s.substr(0, s.find('='));
      if (std::any_of(params.begin(), params.end(), [&](const FitParam& p) { return p.key == key; }))
        throw InputError(fmt::format("{}{} sets {}, a fitted parameter: with --remote-platform a key is either "
                                     "fitted or set",
                                     what, s, key));
    }
  };
  check_not_fitted(o.sets, "--set ");
  const std::vector<Observation> fit_obs = load_all(o.runs);
  const std::vector<Observation> hold_obs = load_all(o.holdout);
  if (o.remote_output && !o.remote_platform) throw InputError("--remote-output: needs --remote-platform");
  const std::string output = o.output.value_or(base.name() + "-fitted.toml");
  util::check_output_path(output, "-o");
  std::optional<std::string> remote_output;
  if (o.remote_platform) {
    // Both ends the same machine: the default names would be one file.
    remote_output = o.remote_output.value_or(remote_base->name() + (remote_base->name() == base.name() ? "-remote" : "") +
                                             "-fitted.toml");
    util::check_output_path(*remote_output, "--remote-output");
    if (util::same_path(*remote_output, output))
      throw InputError(fmt::format("--remote-output {}: the same file as -o (two machines, two files)", *remote_output));
  }
  // The inputs: the base platforms, and the run or scenario file of every run ("FILE:LINE").
  std::vector<std::string> inputs = {platform_file};
  if (remote_file) inputs.push_back(remote_file->path);
  for (const auto* list : {&fit_obs, &hold_obs})
    for (const auto& ob : *list) inputs.push_back(ob.where.substr(0, ob.where.rfind(':')));
  util::check_not_an_input(output, inputs, "-o");
  if (remote_output) util::check_not_an_input(*remote_output, inputs, "--remote-output");
  if (o.csv_path) {
    util::check_output_path(*o.csv_path, "--csv");
    if (util::same_path(*o.csv_path, output))
      throw InputError(fmt::format("--csv {}: the same file as -o", *o.csv_path));
    if (remote_output && util::same_path(*o.csv_path, *remote_output))
      throw InputError(fmt::format("--csv {}: the same file as --remote-output", *o.csv_path));
    util::check_not_an_input(*o.csv_path, inputs, "--csv");
  }
  {
    // Each run's own settings must apply to the base platform too, and a run that names its
    // machine must name the one being fitted.
    for (const auto* list : {&fit_obs, &hold_obs})
      for (const auto& ob : *list) {
        try {
          if (ob.platform && !util::same_path(resolve_platform(*ob.platform, "platform"), platform_file))
            throw InputError(fmt::format("the run is of platform {}, calibrate fits {} (--platform): give runs of "
                                         "one machine",
                                         *ob.platform, o.platform));
          // Without --remote-platform calibrate simulates both ends as the fitted machine: a run
          // between two different machines would be fitted as if it were not. With it, a run
          // that names its remote host names that one.
          const std::string remote_path = remote_file ? remote_file->path : platform_file;
          if (ob.remote_platform &&
              !util::same_path(resolve_platform(*ob.remote_platform, "remote_platform"), remote_path))
            throw InputError(
                o.remote_platform
                    ? fmt::format("the run's remote host is platform {}, calibrate fits {} (--remote-platform)",
                                  *ob.remote_platform, *o.remote_platform)
                    : fmt::format("the run's remote host is platform {}; calibrate simulates both ends as {} "
                                  "(--platform): give --remote-platform {}, or runs between two of the machine "
                                  "being fitted",
                                  *ob.remote_platform, o.platform, *ob.remote_platform));
          check_not_fitted(ob.set, "the run's setting ");
          for (const model::Platform* host : {&base, remote_base ? &*remote_base : nullptr}) {
            if (!host) continue;
            model::Platform copy = *host;
            for (const auto& s : platform_settings(ob.set)) copy.set(s);
            (void)sim::read_host_params(copy);  // the child's model checks, before any simulation
          }
        } catch (const InputError& e) {
          throw_at_setting(ob.set, ob.set_origins, e);
          throw InputError(fmt::format("{}: {}", ob.where, e.what()));
        }
      }
  }

  // The platform file must take the fitted values: tried now with the start values, so that a
  // file it cannot rewrite fails before the first simulation, not after the last.
  {
    std::vector<double> starts;
    for (const auto& p : params) starts.push_back(p.start);
    const auto trial = [](size_t) { return std::string("trial"); };
    rewrite_platform(base_text, platform_file, host_changes(params, starts, false, trial));
    if (remote_file) rewrite_platform(remote_file->text, remote_file->path, host_changes(params, starts, true, trial));
  }

  size_t quantities = 0;
  for (const auto& ob : fit_obs) quantities += ob.measured.size();
  auto plural = [](size_t n, const char* word, const char* words = nullptr) {
    return n == 1 ? fmt::format("1 {}", word) : words ? fmt::format("{} {}", n, words) : fmt::format("{} {}s", n, word);
  };
  out << fmt::format("hcasim calibrate: platform {} ({}){}, {} ({}) to fit, {} held out\n", base.name(),
                     platform_file,
                     remote_base ? fmt::format(", remote platform {} ({})", remote_base->name(), remote_file->path) : "",
                     plural(fit_obs.size(), "run"), plural(quantities, "quantity", "quantities"), hold_obs.size());
  out << fmt::format("fitting {} with NLopt BOBYQA on log values, at most {}\n",
                     plural(params.size(), "parameter"), plural(static_cast<size_t>(o.max_evals), "evaluation"));
  auto any_tool = [&](bool netperf) {
    for (const auto* list : {&fit_obs, &hold_obs})
      for (const auto& ob : *list)
        if ((ob.tool == "netperf") == netperf) return true;
    return false;
  };
  if (o.duration_s > 0 && any_tool(true))
    out << fmt::format("netperf runs are simulated for {} s (--duration), whatever their -l says\n",
                       o.duration_s);
  if (o.iterations > 0 && any_tool(false))
    out << fmt::format("perftest runs are simulated for at most {} iterations (--iterations)\n", o.iterations);
  const bool any_steady = std::any_of(fit_obs.begin(), fit_obs.end(), [](const Observation& ob) {
                            return takes_steady(ob.tool, ob.words);
                          }) || std::any_of(hold_obs.begin(), hold_obs.end(), [](const Observation& ob) {
                            return takes_steady(ob.tool, ob.words);
                          });
  if (o.steady_rel > 0 && any_steady)
    out << fmt::format("netperf runs over SDP are measured in their steady state to {:g} % (--steady)\n",
                       100 * o.steady_rel);
  std::string head = fmt::format("{:>5} {:>12}", "eval", "RMS error");
  for (const auto& p : params)
    head += fmt::format(" {:>14}", (p.remote ? "r:" : "") + p.key.substr(p.key.find('.') + 1));
  out << head << "\n" << std::flush;

  Evaluator evaluator(o, BaseFile{platform_file, base_text}, remote_file, params);
  try {
    FitState st;
    st.evaluator = &evaluator;
    st.obs = &fit_obs;
    st.params = &params;
    const size_t n = params.size();
    nlopt::opt opt(nlopt::LN_BOBYQA, static_cast<unsigned>(n));
    st.opt = &opt;
    std::vector<double> lo(n), hi(n), x(n, 0.0), step(n);
    for (size_t k = 0; k < n; ++k) {
      lo[k] = std::log(params[k].lower / params[k].start);
      hi[k] = std::log(params[k].upper / params[k].start);
      // A first step of 25 % (less between close bounds) in log space.
      step[k] = std::min(0.25, (hi[k] - lo[k]) / 4);
    }
    opt.set_lower_bounds(lo);
    opt.set_upper_bounds(hi);
    opt.set_initial_step(step);
    opt.set_min_objective(objective, &st);
    opt.set_xtol_abs(2e-4);  // 0.02 % of each parameter
    // --max-evals bounds the simulations (the objective stops NLopt); cached points are free.
    st.max_evals = o.max_evals;
    st.out = &out;
    // BOBYQA stops when its trust region has shrunk below xtol; the simulated objective is
    // only piecewise smooth (a bottleneck moves from one resource to another), which can shrink
    // it early. So restart from the best point while a restart still improves it (each
    // restart rebuilds the quadratic model; already-simulated points come from the cache).
    // The start first: BOBYQA moves a start within its first step of a bound inward and
    // would never simulate it, and the report compares the fit with the start.
    {
      std::vector<double> no_gradient;
      objective(x, no_gradient, &st);
      if (st.error) std::rethrow_exception(st.error);
    }
    double previous = HUGE_VAL;
    for (bool first = true; first || (!st.error && st.evals < o.max_evals && st.best < previous - 1e-5);
         first = false) {
      previous = st.best;
      if (!st.best_values.empty())
        for (size_t k = 0; k < n; ++k) x[k] = std::log(st.best_values[k] / params[k].start);
      double fval = 0;
      try {
        opt.optimize(x, fval);
      } catch (const nlopt::forced_stop&) {
      } catch (const nlopt::roundoff_limited&) {
      }
    }
    if (st.error) std::rethrow_exception(st.error);
    // Stopped by --max-evals rather than by convergence: said here and in the file.
    const bool converged = st.evals < o.max_evals;
    if (!converged)
      out << fmt::format("stopped at --max-evals {}: not converged (the best point so far is reported)\n",
                         o.max_evals);
    const std::vector<double> start_values = values_of(params, std::vector<double>(n, 0.0));
    const std::vector<double> fitted = st.best_values;
    const Simulated& sim_start = st.cache.at(start_values).second;
    const Simulated sim_fit = st.cache.at(fitted).second;

    // Sensitivity: d ln(simulated) / d ln(parameter), RMS over the fit quantities, from a 5 %
    // step (down when up would leave the bounds).
    size_t name_width = 28;
    for (const auto& p : params) name_width = std::max(name_width, p.name().size());
    out << fmt::format("\n{:<{}} {:<8} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "parameter", name_width, "unit", "start",
                       "fitted", "lower", "upper", "sensitivity");
    frontends::Json json_params = frontends::Json::array();
    for (size_t k = 0; k < n; ++k) {
      std::vector<double> v = fitted;
      const double up = effective(params[k], fitted[k] * 1.05);
      v[k] = up <= params[k].upper ? up : effective(params[k], fitted[k] / 1.05);
      const Simulated moved = evaluator.simulate(fit_obs, v);
      std::vector<double> el;
      const double dlnp = std::log(v[k] / fitted[k]);
      for (size_t i = 0; i < fit_obs.size(); ++i)
        for (size_t q = 0; q < sim_fit[i].size(); ++q)
          el.push_back(dlnp != 0 ? std::log(moved[i][q] / sim_fit[i][q]) / dlnp : 0);
      std::string flag;
      if (fitted[k] <= params[k].lower * (1 + 1e-3)) flag = "  at its lower bound";
      if (fitted[k] >= params[k].upper * (1 - 1e-3)) flag = "  at its upper bound";
      out << fmt::format("{:<{}} {:<8} {:>12} {:>12} {:>12} {:>12} {:>12.3f}{}\n", params[k].name(), name_width,
                         params[k].unit, short_number(params[k].start), short_number(fitted[k]),
                         short_number(params[k].lower), short_number(params[k].upper), rms(el), flag);
      json_params.push_back({{"key", params[k].name()},
                             {"unit", params[k].unit},
                             {"start", params[k].start},
                             {"fitted", fitted[k]},
                             {"lower", params[k].lower},
                             {"upper", params[k].upper},
                             {"sensitivity", rms(el)},
                             {"at_bound", flag.empty() ? frontends::Json(nullptr)
                                                       : frontends::Json(flag.find("lower") != std::string::npos ? "lower" : "upper")}});
    }
    out << "sensitivity: the RMS over the fitted quantities of d ln(simulated) / d ln(parameter); near 0, "
           "these runs do not determine the parameter\n\n";
    out << format_errors(fmt::format("fit: {}, {}", plural(fit_obs.size(), "run"),
                                     plural(static_cast<size_t>(st.evals), "evaluation")),
                         fit_obs,
                         sim_start, sim_fit);
    std::string csv = "set,run,quantity,measured,start,start_error_pct,fitted,fitted_error_pct\n" +
                      csv_rows("fit", fit_obs, sim_start, sim_fit);
    frontends::Json json_fit = errors_json(fit_obs, sim_start, sim_fit);
    frontends::Json json_holdout = nullptr;
    if (!hold_obs.empty()) {
      const Simulated hold_start = evaluator.simulate(hold_obs, start_values);
      const Simulated hold_fit = evaluator.simulate(hold_obs, fitted);
      out << "\n"
          << format_errors(fmt::format("holdout: {}, not used for fitting", plural(hold_obs.size(), "run")),
                           hold_obs,
                           hold_start, hold_fit);
      csv += csv_rows("holdout", hold_obs, hold_start, hold_fit);
      json_holdout = errors_json(hold_obs, hold_start, hold_fit);
    }

    // The runs as named on the command line, without their directories.
    std::string runs_text;
    for (const auto& item : o.runs) {
      const auto [source, selection] = split_selection(item);
      runs_text += (runs_text.empty() ? "" : ", ") + fs::path(source).filename().string() +
                   (selection ? ":" + *selection : "");
    }
    // Each host's file: its fitted values, then the --set values it was fitted with.
    auto fitted_file = [&](bool remote, const model::Platform& host, const model::Platform& host_as_filed,
                           const std::string& text, const std::string& path) {
      Changes changes = host_changes(params, fitted, remote, [&](size_t k) {
        return fmt::format("fitted to {} by hcasim calibrate ({}, RMS error {:.2f} %{}; was {})", runs_text,
                           plural(fit_obs.size(), "run"), 100 * st.best,
                           converged ? "" : fmt::format(", not converged in {} evaluations", st.evals),
                           short_number(param_number(host_as_filed.param(params[k].key))));
      });
      for (const auto& s : platform_settings(o.sets)) {
        const std::string key = s.substr(0, s.find('='));
        if (std::any_of(params.begin(), params.end(), [&](const FitParam& p) { return p.key == key && p.remote == remote; }))
          continue;
        const model::Param& p = host.param(key);
        std::string literal;
        if (const auto* d = std::get_if<double>(&p.value)) literal = fmt::format("{}", *d);
        else if (const auto* i = std::get_if<int64_t>(&p.value)) literal = fmt::format("{}", *i);
        else if (const auto* b = std::get_if<bool>(&p.value)) literal = *b ? "true" : "false";
        else literal = fmt::format("\"{}\"", std::get<std::string>(p.value));
        changes.emplace_back(key, literal, fmt::format("set by hcasim calibrate --set {} (fitted with it)", s));
      }
      return rewrite_platform(text, path, changes);
    };
    const std::string fitted_text = fitted_file(false, base, as_filed, base_text, platform_file);
    const std::string remote_fitted_text =
        remote_file ? fitted_file(true, *remote_base, *remote_as_filed, remote_file->text, remote_file->path) : "";
    if (o.csv_path) util::write_file_atomically(*o.csv_path, csv, "--csv");
    util::write_file_atomically(output, fitted_text, "-o");
    if (remote_output) util::write_file_atomically(*remote_output, remote_fitted_text, "--remote-output");
    out << fmt::format("\nwrote {}{}{}\n", output, remote_output ? ", " + *remote_output : "",
                       o.csv_path ? " and " + *o.csv_path : "");
    if (o.json) {
      frontends::Json doc;
      doc["schema"] = "hcasim.calibrate/1";
      doc["command_line"] = frontends::json_command_line("calibrate", o.args);
      doc["platform"] = base.name();
      doc["platform_file"] = platform_file;
      doc["remote_platform"] = remote_base ? frontends::Json(remote_base->name()) : frontends::Json(nullptr);
      doc["remote_platform_file"] = remote_file ? frontends::Json(remote_file->path) : frontends::Json(nullptr);
      doc["set"] = o.sets;
      doc["duration_s"] = o.duration_s > 0 ? frontends::Json(o.duration_s) : frontends::Json(nullptr);
      doc["iterations"] = o.iterations > 0 ? frontends::Json(o.iterations) : frontends::Json(nullptr);
      doc["steady_rel"] = o.steady_rel > 0 ? frontends::Json(o.steady_rel) : frontends::Json(nullptr);
      doc["max_evals"] = o.max_evals;
      doc["converged"] = converged;
      doc["rms_error_best_pct"] = 100 * st.best;
      frontends::Json evaluations = frontends::Json::array();
      for (size_t e = 0; e < st.history.size(); ++e)
        evaluations.push_back({{"eval", e + 1}, {"rms_error_pct", 100 * st.history[e].first}, {"values", st.history[e].second}});
      doc["evaluations"] = std::move(evaluations);
      doc["parameters"] = std::move(json_params);
      doc["fit"] = std::move(json_fit);
      doc["holdout"] = std::move(json_holdout);
      doc["output"] = output;
      doc["remote_output"] = remote_output ? frontends::Json(*remote_output) : frontends::Json(nullptr);
      doc["csv"] = o.csv_path ? frontends::Json(*o.csv_path) : frontends::Json(nullptr);
      std::cout << frontends::dump_json(doc) << std::flush;
    }
  } catch (const ChildFailure& e) {
    return print_child_failure(e);
  } catch (const Interrupted& e) {
    return print_interrupted(e);
  }
  return 0;
}

}  // namespace hcasim::scenarios
