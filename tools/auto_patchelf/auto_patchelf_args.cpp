#include "auto_patchelf_args.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <string_view>

namespace runpatch::cli {

namespace {

// How many values an option takes, as argparse's nargs.
enum class Arity { Flag, One, Two, Any, Rest };

// One row per option: its names, how many values it takes, its metavar and
// help lines (as --help prints them), whether Nixpkgs' script has it, and
// where its values go. Parsing, --help's option list, the prefix rules and
// the shell completions all read this table.
struct Spec {
  std::vector<std::string_view> names;  // as argparse lists them: "-h", "--help"
  Arity arity;
  Completes completes;            // what a shell completes its values as
  const char* metavar;            // nullptr for a flag; "MODE PATH" for two values
  bool script;                    // an option of Nixpkgs' auto-patchelf.py (the rest are runpatch's)
  std::vector<const char*> help;  // the help text, one entry per printed line
  std::function<void(AutoPatchelfArgs&, std::vector<std::string>)> store;
  const char* excludes = nullptr;  // an option it may not be given with (argparse's mutually exclusive group)
  bool required = false;           // argparse's required=True: unbracketed in the usage, an error when missing

  std::string_view long_name() const { return names.back(); }
};

// --search-path's MODEs: the parser's check, its message and the completions.
std::vector<std::string> search_path_modes() { return {"recursive", "shallow"}; }

using A = AutoPatchelfArgs;
using V = std::vector<std::string>;

// The options of Nixpkgs' auto-patchelf.py but its last, in its order.
std::vector<Spec> script_options() {
  return {
      {{"-h", "--help"},
       Arity::Flag,
       kNoValue,
       nullptr,
       true,
       {"show this help message and exit"},
       [](A& a, V) { a.help = true; }},
      {{"--ignore-missing"},
       Arity::Any,
       kText,
       "IGNORE_MISSING",
       true,
       {"Do not fail when some dependencies are not found."},
       [](A& a, V v) { a.ignore_missing = std::move(v); }},
      {{"--no-recurse"},
       Arity::Flag,
       kNoValue,
       nullptr,
       true,
       {"Disable the recursive traversal of paths to patch."},
       [](A& a, V) { a.recursive = false; }},
      {{"--paths"},
       Arity::Any,
       kFile,
       "PATHS",
       true,
       {"Paths whose content needs to be patched. Single files",
        "and directories are accepted. Directories are traversed", "recursively by default."},
       [](A& a, V v) { a.paths = std::move(v); },
       nullptr,
       true},
      {{"--libs"},
       Arity::Any,
       kFile,
       "LIBS",
       true,
       {"Paths where libraries are searched for. Single files and",
        "directories are accepted. Directories are not searched", "recursively."},
       [](A& a, V v) { a.libs = std::move(v); }},
      {{"--runtime-dependencies"},
       Arity::Any,
       kDirectory,
       "RUNTIME_DEPENDENCIES",
       true,
       {"Paths to prepend to the runtime path of executable", "binaries."},
       [](A& a, V v) { a.runtime_dependencies = std::move(v); }},
      {{"--append-rpaths"},
       Arity::Any,
       kDirectory,
       "APPEND_RPATHS",
       true,
       {"Paths to append to all runtime paths unconditionally."},
       [](A& a, V v) { a.append_rpaths = std::move(v); }},
      {{"--keep-libc"},
       Arity::Flag,
       kNoValue,
       nullptr,
       true,
       {"Attempt to search for and relink libc dependencies."},
       [](A& a, V) { a.keep_libc = true; }},
      {{"--ignore-existing"},
       Arity::Flag,
       kNoValue,
       nullptr,
       true,
       {"Do not index the libraries under --paths (nor follow", "their runpaths)."},
       [](A& a, V) { a.add_existing = false; }},
  };
}

// runpatch's own.
std::vector<Spec> runpatch_options() {
  return {
      {{"--search-path"},
       Arity::Two,
       repeatable({Completes::ChoiceThenDirectory, search_path_modes}),
       "MODE PATH",
       false,
       {"Also search PATH for libraries, after --libs; MODE is", "'recursive' or 'shallow'. Repeatable; the first pair",
        "holding a library wins (addAutoPatchelfSearchPath", "[--no-recurse] passes one pair per registration)."},
       [](A& a, V v) { a.search_paths.emplace_back(v[0], v[1]); }},
      {{"--interpreter"},
       Arity::One,
       kFile,
       "INTERPRETER",
       false,
       {"Interpreter to set (default: the first line of", "$NIX_BINTOOLS/nix-support/dynamic-linker). Without",
        "$NIX_BINTOOLS, libc.so.6 is taken from beside it."},
       [](A& a, V v) { a.interpreter = v[0]; }},
      {{"--origin"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Record a dependency in the file's own directory as", "$ORIGIN."},
       [](A& a, V) { a.origin = true; }},
      {{"--dry-run"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Print what would be done, write nothing."},
       [](A& a, V) { a.dry_run = true; }},
      {{"--atomic"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Make an edit that appends a segment on a copy renamed", "over the file, instead of writing into the file."},
       [](A& a, V) { a.in_place = false; }},
      {{"--in-place"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Write into each file (the default: fast on huge files,", "and a crash at any moment leaves the old or the new",
        "file; accepted for symmetry)."},
       [](A& a, V) { a.in_place = true; }},
      {{"--ldcache"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Also write the resolution-cache note."},
       [](A& a, V) { a.ldcache = true; },
       "--remove-ldcache"},
      {{"--remove-ldcache"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Remove the resolution-cache note."},
       [](A& a, V) { a.remove_ldcache = true; },
       "--ldcache"},
      {{"--driver-dir"},
       Arity::One,
       repeatable(kDirectory),
       "DIR",
       false,
       {"Also put the driver directory in every runpath, after",
        "any cuda_compat one (autoAddDriverRunpath in the same", "write). Repeatable."},
       [](A& a, V v) { a.driver_dirs.push_back(v[0]); }},
      {{"--libcuda"},
       Arity::One,
       repeatable(kDirectory),
       "DIR",
       false,
       {"Also put cuda_compat's libcuda directory first in every", "runpath (autoAddCudaCompatRunpath). Repeatable."},
       [](A& a, V v) { a.libcuda_dirs.push_back(v[0]); }},
      {{"--forbid"},
       Arity::One,
       repeatable(kDirectory),
       "PREFIX",
       false,
       {"With the two above: drop entries under PREFIX (the", "build directory). Repeatable."},
       [](A& a, V v) { a.forbid.push_back(v[0]); }},
      {{"-v", "--verbose"},
       Arity::Flag,
       kNoValue,
       nullptr,
       false,
       {"Print a summary line at the end, and unreadable files."},
       [](A& a, V) { a.verbose = true; }},
  };
}

// In argparse's registration order (its "could match" lists and --help follow
// it). --extra-args last, as the script lists it: no other option shares its
// prefix, so no "could match" list changes.
const std::vector<Spec>& specs() {
  static const std::vector<Spec> table = [] {
    std::vector<Spec> all = script_options();
    for (auto& spec : runpatch_options()) all.push_back(std::move(spec));
    all.push_back({{"--extra-args"},
                   Arity::Rest,
                   {Completes::PatchelfArguments},
                   nullptr,
                   true,
                   {"Extra arguments to pass to patchelf. This argument should", "always come last."},
                   [](A& a, V v) { a.extra_args = std::move(v); }});
    return all;
  }();
  return table;
}

// The values an option takes, as argparse writes them after its name.
std::string values_of(const Spec& spec) {
  switch (spec.arity) {
    case Arity::Flag: return "";
    case Arity::One:
    case Arity::Two: return std::string(" ") + spec.metavar;
    case Arity::Any: return std::string(" [") + spec.metavar + " ...]";
    case Arity::Rest: return " ...";
  }
  return "";
}

// How --help names an option: its names, each with the values it takes (argparse's format).
std::string invocation(const Spec& spec) {
  std::string out;
  for (auto name : spec.names) out += std::string(out.empty() ? "" : ", ") + std::string(name) + values_of(spec);
  return out;
}

struct UsageError {
  std::string message;
};

// What argparse takes a word for before consuming anything.
enum class WordKind {
  Option,     // names an option (or looks like one: unknown, it is unrecognized)
  Value,      // anything else
  Separator,  // "--": every word after it is a value
};

// One word classified as argparse does before consuming anything.
struct Word {
  WordKind kind;
  const Spec* spec = nullptr;                 // null for an unknown option-looking word
  std::string option;                         // the option's full name
  std::optional<std::string> explicit_value;  // --opt=value
};

// argparse's negative-number pattern, ^-\d+$|^-\d*\.\d+$ (by hand: std::regex
// trips GCC 12's maybe-uninitialized warning under the sanitizers).
bool looks_negative_number(const std::string& s) {
  auto digits = [](std::string_view v) {
    return std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (s.size() < 2 || s[0] != '-') return false;
  std::string_view rest(s);
  rest.remove_prefix(1);
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return digits(rest);
  return digits(rest.substr(0, dot)) && dot + 1 < rest.size() && digits(rest.substr(dot + 1));
}

const Spec* exact(const std::string& name) {
  for (const auto& s : specs())
    if (std::find(s.names.begin(), s.names.end(), name) != s.names.end()) return &s;
  return nullptr;
}

Word classify(const std::string& arg) {
  if (arg.empty() || arg[0] != '-') return {WordKind::Value};
  if (const Spec* s = exact(arg)) return {WordKind::Option, s, arg};
  if (arg.size() == 1) return {WordKind::Value};
  std::string name = arg;
  std::optional<std::string> value;
  if (auto eq = arg.find('='); eq != std::string::npos) {
    name = arg.substr(0, eq);
    value = arg.substr(eq + 1);
    if (const Spec* s = exact(name)) return {WordKind::Option, s, name, value};
  }
  // Prefixes of long options only: a short "-x" is never an abbreviation here.
  // The script's own options first, so that our additions never make an
  // abbreviation the script accepts ambiguous.
  std::vector<std::pair<const Spec*, std::string_view>> matches;  // each with the long name it matched
  for (bool script : {true, false})
    if (arg.starts_with("--") && matches.empty())
      for (const auto& s : specs())
        for (auto option : s.names)
          if (s.script == script && option.starts_with("--") && option.starts_with(name))
            matches.push_back({&s, option});
  if (matches.size() > 1) {
    std::string names;
    for (const auto& m : matches) names += std::string(names.empty() ? "" : ", ") + std::string(m.second);
    throw UsageError{"ambiguous option: " + arg + " could match " + names};
  }
  if (matches.size() == 1) return {WordKind::Option, matches[0].first, std::string(matches[0].second), value};
  if (looks_negative_number(arg)) return {WordKind::Value};
  if (arg.find(' ') != std::string::npos) return {WordKind::Value};
  return {WordKind::Option, nullptr, arg};
}

size_t leading_values(const std::vector<Word>& words, size_t from) {
  size_t n = 0;
  while (from + n < words.size() && words[from + n].kind == WordKind::Value) ++n;
  return n;
}

// Consumes the option at words[i]; returns the index after its values.
size_t consume(const std::vector<Word>& words, const std::vector<std::string>& argv, size_t i, AutoPatchelfArgs& out,
               std::vector<std::string>& extras) {
  const Word& w = words[i];
  if (!w.spec) {
    extras.push_back(argv[i]);
    return i + 1;
  }
  std::string who = "argument ";  // argparse names an option by all its names
  for (auto name : w.spec->names) who += std::string(who.back() == ' ' ? "" : "/") + std::string(name);
  Arity arity = w.spec->arity;
  std::vector<std::string> values;
  size_t next = i + 1;
  if (w.explicit_value) {
    if (arity == Arity::Flag || arity == Arity::Two) {
      if (arity == Arity::Two) throw UsageError{who + ": expected 2 arguments"};
      throw UsageError{who + ": ignored explicit argument '" + *w.explicit_value + "'"};
    }
    values.push_back(*w.explicit_value);
  } else {
    size_t available = leading_values(words, next);
    size_t take = 0;
    switch (arity) {
      case Arity::Flag: take = 0; break;
      case Arity::One:
        if (available < 1) throw UsageError{who + ": expected one argument"};
        take = 1;
        break;
      case Arity::Two:
        if (available < 2) throw UsageError{who + ": expected 2 arguments"};
        take = 2;
        break;
      case Arity::Any: take = available; break;
      case Arity::Rest:  // options too, but argparse stops a remainder option at "--"
        while (next + take < words.size() && words[next + take].kind != WordKind::Separator) ++take;
        break;
    }
    values.assign(argv.begin() + static_cast<long>(next), argv.begin() + static_cast<long>(next + take));
    next += take;
  }
  w.spec->store(out, std::move(values));
  return next;
}

}  // namespace

AutoPatchelfParse parse_auto_patchelf_args(const std::vector<std::string>& argv) {
  AutoPatchelfArgs out;
  try {
    std::vector<Word> words;
    for (size_t i = 0; i < argv.size(); ++i) {
      if (argv[i] == "--") {  // everything after it is a value
        words.push_back({WordKind::Separator});
        while (++i < argv.size()) words.push_back({WordKind::Value});
        break;
      }
      words.push_back(classify(argv[i]));
    }
    std::vector<std::string> extras;
    std::set<std::string> seen;
    size_t i = 0;
    while (i < words.size()) {
      if (words[i].kind != WordKind::Option) {
        extras.push_back(argv[i++]);  // no positional arguments exist
        continue;
      }
      if (const Spec* spec = words[i].spec) {
        std::string name(spec->long_name());
        if (spec->excludes && seen.count(spec->excludes))
          throw UsageError{"argument " + name + ": not allowed with argument " + spec->excludes};
        seen.insert(name);
      }
      bool help_before = out.help;
      i = consume(words, argv, i, out, extras);
      if (out.help && !help_before) return {out, ""};  // argparse prints help as soon as it meets -h
    }
    std::string missing;
    for (const auto& spec : specs())
      if (spec.required && !seen.count(std::string(spec.long_name())))
        missing += (missing.empty() ? "" : ", ") + std::string(spec.long_name());
    if (!missing.empty()) throw UsageError{"the following arguments are required: " + missing};
    if (!extras.empty()) {
      std::string text;
      for (const auto& e : extras) text += (text.empty() ? "" : " ") + e;
      throw UsageError{"unrecognized arguments: " + text};
    }
    for (const auto& [mode, path] : out.search_paths) {
      auto modes = search_path_modes();
      if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
        std::string choices;
        for (const auto& m : modes) choices += (choices.empty() ? "'" : ", '") + m + "'";
        throw UsageError{"argument --search-path: invalid mode: '" + mode + "' (choose from " + choices + ")"};
      }
      if (path.empty()) throw UsageError{"argument --search-path: empty PATH (it would search the working directory)"};
    }
  } catch (const UsageError& e) {
    return {std::nullopt, e.message};
  }
  return {out, ""};
}

std::vector<OptionCompletion> auto_patchelf_option_completions() {
  std::vector<OptionCompletion> out;
  for (const auto& spec : specs()) {
    OptionCompletion& c = out.emplace_back();
    c.names.assign(spec.names.begin(), spec.names.end());
    switch (spec.arity) {
      case Arity::Flag: c.values = OptionCompletion::Values::None; break;
      case Arity::One: c.values = OptionCompletion::Values::One; break;
      case Arity::Two: c.values = OptionCompletion::Values::Two; break;
      case Arity::Any: c.values = OptionCompletion::Values::Any; break;
      case Arity::Rest: c.values = OptionCompletion::Values::Rest; break;
    }
    std::istringstream metavars(spec.metavar ? spec.metavar : "");
    for (std::string word; metavars >> word;) c.metavars.push_back(word);
    c.completes = spec.completes;
    for (const char* line : spec.help) c.help += (c.help.empty() ? "" : " ") + std::string(line);
    if (spec.excludes) c.excludes.push_back(spec.excludes);
  }
  return out;
}

// An option in the usage line as argparse writes it: its first name, its
// values, in brackets unless required.
std::string usage_part(const Spec& spec) {
  std::string part = std::string(spec.names.front()) + values_of(spec);
  return spec.required ? part : "[" + part + "]";
}

// argparse's wrapping (HelpFormatter._format_usage): parts joined while a line
// stays within kUsageWidth columns, the rest under the first part.
std::string auto_patchelf_usage() {
  constexpr size_t kUsageWidth = 80;
  const std::string first = "usage: auto-patchelf";
  const std::string indent(first.size() + 1, ' ');
  std::string out = first;
  size_t line = first.size();
  for (const auto& spec : specs()) {
    std::string part = usage_part(spec);
    bool wrap = line + 1 + part.size() > kUsageWidth;
    out += (wrap ? "\n" + indent : " ") + part;
    line = (wrap ? indent.size() : line + 1) + part.size();
  }
  return out + "\n";
}

std::string auto_patchelf_help() {
  // argparse's layout: help from column 24, on the next line when the names are longer than 20.
  std::string options;
  for (const auto& spec : specs()) {
    std::string names = invocation(spec);
    options += "  " + names;
    bool first = names.size() <= 20;
    options += first ? std::string(22 - names.size(), ' ') : "\n";
    for (const char* line : spec.help) {
      if (!first) options += std::string(24, ' ');
      options += std::string(line) + "\n";
      first = false;
    }
  }
  return auto_patchelf_usage() +
         "\n"
         "auto-patchelf tries as hard as possible to patch the provided binary files by\n"
         "looking for compatible libraries in the provided paths (runpatch's drop-in for\n"
         "Nixpkgs' auto-patchelf.py: same options, same messages).\n"
         "\n"
         "options:\n" +
         options;
}

}  // namespace runpatch::cli
