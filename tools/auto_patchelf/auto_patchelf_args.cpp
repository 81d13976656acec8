#include "auto_patchelf_args.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>

namespace runpatch::cli {

namespace {

// How many values an option takes, as argparse's nargs.
enum class Arity { Flag, One, Two, Any, Rest };

struct Spec {
  const char* name;
  Arity arity;
  std::function<void(AutoPatchelfArgs&, std::vector<std::string>)> store;
  const char* excludes = nullptr;  // an option it may not be given with (argparse's mutually exclusive group)
};

// In argparse's registration order (its "could match" lists follow it).
const std::vector<Spec>& specs() {
  using A = AutoPatchelfArgs;
  using V = std::vector<std::string>;
  static const std::vector<Spec> table = {
      {"-h", Arity::Flag, [](A& a, V) { a.help = true; }},
      {"--help", Arity::Flag, [](A& a, V) { a.help = true; }},
      {"--ignore-missing", Arity::Any, [](A& a, V v) { a.ignore_missing = std::move(v); }},
      {"--no-recurse", Arity::Flag, [](A& a, V) { a.recursive = false; }},
      {"--paths", Arity::Any, [](A& a, V v) { a.paths = std::move(v); }},
      {"--libs", Arity::Any, [](A& a, V v) { a.libs = std::move(v); }},
      {"--runtime-dependencies", Arity::Any, [](A& a, V v) { a.runtime_dependencies = std::move(v); }},
      {"--append-rpaths", Arity::Any, [](A& a, V v) { a.append_rpaths = std::move(v); }},
      {"--keep-libc", Arity::Flag, [](A& a, V) { a.keep_libc = true; }},
      {"--ignore-existing", Arity::Flag, [](A& a, V) { a.add_existing = false; }},
      {"--extra-args", Arity::Rest, [](A& a, V v) { a.extra_args = std::move(v); }},
      {"--search-path", Arity::Two, [](A& a, V v) { a.search_paths.emplace_back(v[0], v[1]); }},
      {"--interpreter", Arity::One, [](A& a, V v) { a.interpreter = v[0]; }},
      {"--origin", Arity::Flag, [](A& a, V) { a.origin = true; }},
      {"--dry-run", Arity::Flag, [](A& a, V) { a.dry_run = true; }},
      {"--atomic", Arity::Flag, [](A& a, V) { a.in_place = false; }},
      {"--in-place", Arity::Flag, [](A& a, V) { a.in_place = true; }},
      {"--ldcache", Arity::Flag, [](A& a, V) { a.ldcache = true; }, "--remove-ldcache"},
      {"--remove-ldcache", Arity::Flag, [](A& a, V) { a.remove_ldcache = true; }, "--ldcache"},
      {"--driver-dir", Arity::One, [](A& a, V v) { a.driver_dirs.push_back(v[0]); }},
      {"--libcuda", Arity::One, [](A& a, V v) { a.libcuda_dirs.push_back(v[0]); }},
      {"--forbid", Arity::One, [](A& a, V v) { a.forbid.push_back(v[0]); }},
      {"-v", Arity::Flag, [](A& a, V) { a.verbose = true; }},
      {"--verbose", Arity::Flag, [](A& a, V) { a.verbose = true; }},
  };
  return table;
}

// Options of Nixpkgs' auto-patchelf.py itself; the rest are runpatch's.
bool is_script_option(const Spec& spec) {
  static const std::vector<std::string_view> script = {"-h",
                                                       "--help",
                                                       "--ignore-missing",
                                                       "--no-recurse",
                                                       "--paths",
                                                       "--libs",
                                                       "--runtime-dependencies",
                                                       "--append-rpaths",
                                                       "--keep-libc",
                                                       "--ignore-existing",
                                                       "--extra-args"};
  return std::find(script.begin(), script.end(), std::string_view(spec.name)) != script.end();
}

struct UsageError {
  std::string message;
};

// One word classified as argparse does before consuming anything.
struct Word {
  char kind;                                  // 'O' option, 'A' value, '-' the "--" separator
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
    if (name == s.name) return &s;
  return nullptr;
}

Word classify(const std::string& arg) {
  if (arg.empty() || arg[0] != '-') return {'A'};
  if (const Spec* s = exact(arg)) return {'O', s, s->name};
  if (arg.size() == 1) return {'A'};
  std::string name = arg;
  std::optional<std::string> value;
  if (auto eq = arg.find('='); eq != std::string::npos) {
    name = arg.substr(0, eq);
    value = arg.substr(eq + 1);
    if (const Spec* s = exact(name)) return {'O', s, s->name, value};
  }
  // Prefixes of long options only: a short "-x" is never an abbreviation here.
  // The script's own options first, so that our additions never make an
  // abbreviation the script accepts ambiguous.
  std::vector<const Spec*> matches;
  for (bool script : {true, false})
    if (arg.starts_with("--") && matches.empty())
      for (const auto& s : specs())
        if (is_script_option(s) == script && std::string_view(s.name).starts_with(name)) matches.push_back(&s);
  if (matches.size() > 1) {
    std::string names;
    for (const Spec* m : matches) names += std::string(names.empty() ? "" : ", ") + m->name;
    throw UsageError{"ambiguous option: " + arg + " could match " + names};
  }
  if (matches.size() == 1) return {'O', matches[0], matches[0]->name, value};
  if (looks_negative_number(arg)) return {'A'};
  if (arg.find(' ') != std::string::npos) return {'A'};
  return {'O', nullptr, arg};
}

size_t leading_values(const std::vector<Word>& words, size_t from) {
  size_t n = 0;
  while (from + n < words.size() && words[from + n].kind == 'A') ++n;
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
  const std::string who = std::string("argument ") + (w.option == "-h" || w.option == "--help"      ? "-h/--help"
                                                      : w.option == "-v" || w.option == "--verbose" ? "-v/--verbose"
                                                                                                    : w.option);
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
        while (next + take < words.size() && words[next + take].kind != '-') ++take;
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
        words.push_back({'-'});
        while (++i < argv.size()) words.push_back({'A'});
        break;
      }
      words.push_back(classify(argv[i]));
    }
    std::vector<std::string> extras;
    bool saw_paths = false;
    std::set<std::string> seen;
    size_t i = 0;
    while (i < words.size()) {
      if (words[i].kind != 'O') {
        extras.push_back(argv[i++]);  // no positional arguments exist
        continue;
      }
      saw_paths = saw_paths || (words[i].spec && std::string(words[i].spec->name) == "--paths");
      if (const Spec* spec = words[i].spec) {
        if (spec->excludes && seen.count(spec->excludes))
          throw UsageError{std::string("argument ") + spec->name + ": not allowed with argument " + spec->excludes};
        seen.insert(spec->name);
      }
      bool help_before = out.help;
      i = consume(words, argv, i, out, extras);
      if (out.help && !help_before) return {out, ""};  // argparse prints help as soon as it meets -h
    }
    if (!saw_paths) throw UsageError{"the following arguments are required: --paths"};
    if (!extras.empty()) {
      std::string text;
      for (const auto& e : extras) text += (text.empty() ? "" : " ") + e;
      throw UsageError{"unrecognized arguments: " + text};
    }
    for (const auto& [mode, path] : out.search_paths) {
      if (mode != "recursive" && mode != "shallow")
        throw UsageError{"argument --search-path: invalid mode: '" + mode + "' (choose from 'recursive', 'shallow')"};
      if (path.empty()) throw UsageError{"argument --search-path: empty PATH (it would search the working directory)"};
    }
  } catch (const UsageError& e) {
    return {std::nullopt, e.message};
  }
  return {out, ""};
}

std::string auto_patchelf_usage() {
  return "usage: auto-patchelf [-h] [--ignore-missing [IGNORE_MISSING ...]] [--no-recurse]\n"
         "                     --paths [PATHS ...] [--libs [LIBS ...]]\n"
         "                     [--runtime-dependencies [RUNTIME_DEPENDENCIES ...]]\n"
         "                     [--append-rpaths [APPEND_RPATHS ...]] [--keep-libc]\n"
         "                     [--ignore-existing] [--search-path MODE PATH]\n"
         "                     [--interpreter INTERPRETER] [--origin] [--dry-run]\n"
         "                     [--atomic] [--in-place] [--ldcache] [--remove-ldcache]\n"
         "                     [--driver-dir DIR] [--libcuda DIR] [--forbid PREFIX]\n"
         "                     [-v] [--extra-args ...]\n";
}

std::string auto_patchelf_help() {
  return auto_patchelf_usage() +
         "\n"
         "auto-patchelf tries as hard as possible to patch the provided binary files by\n"
         "looking for compatible libraries in the provided paths (runpatch's drop-in for\n"
         "Nixpkgs' auto-patchelf.py: same options, same messages).\n"
         "\n"
         "options:\n"
         "  -h, --help            show this help message and exit\n"
         "  --ignore-missing [IGNORE_MISSING ...]\n"
         "                        Do not fail when some dependencies are not found.\n"
         "  --no-recurse          Disable the recursive traversal of paths to patch.\n"
         "  --paths [PATHS ...]   Paths whose content needs to be patched. Single files\n"
         "                        and directories are accepted. Directories are traversed\n"
         "                        recursively by default.\n"
         "  --libs [LIBS ...]     Paths where libraries are searched for. Single files and\n"
         "                        directories are accepted. Directories are not searched\n"
         "                        recursively.\n"
         "  --runtime-dependencies [RUNTIME_DEPENDENCIES ...]\n"
         "                        Paths to prepend to the runtime path of executable\n"
         "                        binaries.\n"
         "  --append-rpaths [APPEND_RPATHS ...]\n"
         "                        Paths to append to all runtime paths unconditionally.\n"
         "  --keep-libc           Attempt to search for and relink libc dependencies.\n"
         "  --ignore-existing     Do not index the libraries under --paths (nor follow\n"
         "                        their runpaths).\n"
         "  --search-path MODE PATH\n"
         "                        Also search PATH for libraries, after --libs; MODE is\n"
         "                        'recursive' or 'shallow'. Repeatable; the first pair\n"
         "                        holding a library wins (addAutoPatchelfSearchPath\n"
         "                        [--no-recurse] passes one pair per registration).\n"
         "  --interpreter INTERPRETER\n"
         "                        Interpreter to set (default: the first line of\n"
         "                        $NIX_BINTOOLS/nix-support/dynamic-linker). Without\n"
         "                        $NIX_BINTOOLS, libc.so.6 is taken from beside it.\n"
         "  --origin              Record a dependency in the file's own directory as\n"
         "                        $ORIGIN.\n"
         "  --dry-run             Print what would be done, write nothing.\n"
         "  --atomic              Make an edit that appends a segment on a copy renamed\n"
         "                        over the file, instead of writing into the file.\n"
         "  --in-place            Write into each file (the default: fast on huge files,\n"
         "                        and a crash at any moment leaves the old or the new\n"
         "                        file; accepted for symmetry).\n"
         "  --ldcache             Also write the resolution-cache note.\n"
         "  --remove-ldcache      Remove the resolution-cache note.\n"
         "  --driver-dir DIR      Also put the driver directory in every runpath, after\n"
         "                        any cuda_compat one (autoAddDriverRunpath in the same\n"
         "                        write). Repeatable.\n"
         "  --libcuda DIR         Also put cuda_compat's libcuda directory first in every\n"
         "                        runpath (autoAddCudaCompatRunpath). Repeatable.\n"
         "  --forbid PREFIX       With the two above: drop entries under PREFIX (the\n"
         "                        build directory). Repeatable.\n"
         "  -v, --verbose         Print a summary line at the end, and unreadable files.\n"
         "  --extra-args ...      Extra arguments to pass to patchelf. This argument should\n"
         "                        always come last.\n";
}

}  // namespace runpatch::cli
