// Writes the bash and zsh completions of runpatch-patchelf and auto-patchelf
// from their option tables, as a build step (tools/CMakeLists.txt), so that
// an option is completed as the parser takes it: a new option, or one that
// now takes a value, needs no second edit. Not installed; what it writes is.
// Usage: runpatch_completions OUTPUT_DIR
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../auto_patchelf/auto_patchelf_args.hpp"
#include "../common/patchelf_args.hpp"

namespace runpatch::cli {
namespace {

using Values = OptionCompletion::Values;
using Options = std::vector<OptionCompletion>;

// What the generated files say of themselves: where to make a change.
constexpr const char* kGenerated = "Written by runpatch_completions (tools/completions) from the option table of";

// One drop-in: its command, its table, the table's file (named in the
// generated files), a sentence about it, and what its other words are.
struct Tool {
  std::string command;
  Options options;
  std::string table;
  std::string about;
  std::string positional;  // zsh's name for them
};

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

std::vector<std::string> choices(const OptionCompletion& option) {
  return option.completes.choices ? option.completes.choices() : std::vector<std::string>{};
}

size_t word_count(Values values) {
  switch (values) {
    case Values::None: return 0;
    case Values::One:
    case Values::Any: return 1;
    case Values::Two: return 2;
    case Values::Rest: return 0;
  }
  return 0;
}

// The option after which the words are patchelf's (auto-patchelf --extra-args), if any.
const OptionCompletion* rest_option(const Tool& tool) {
  for (const auto& o : tool.options)
    if (o.values == Values::Rest) return &o;
  return nullptr;
}

// A row whose value count and completion disagree is a mistake in the table: the build stops on it.
void check(const Tool& tool) {
  auto fail = [&](const OptionCompletion& o, const std::string& what) {
    throw std::runtime_error(fmt::format("{}: option {}: {}", tool.table, o.names.front(), what));
  };
  for (const auto& o : tool.options) {
    Completes::Kind kind = o.completes.kind;
    if ((o.values == Values::None) != (kind == Completes::None))
      fail(o, o.values == Values::None ? "takes no value but completes one" : "takes a value but completes none");
    if ((o.values == Values::Rest) != (kind == Completes::PatchelfArguments))
      fail(o, "only the rest of the line completes as patchelf's arguments");
    if (kind == Completes::ChoiceThenDirectory && o.values != Values::Two) fail(o, "a choice then a directory: two");
    bool has_choices = kind == Completes::Choices || kind == Completes::ChoiceThenDirectory;
    if (has_choices && choices(o).empty()) fail(o, "completes one of no choices");
    for (const auto& word : choices(o))
      if (word.empty() || !std::all_of(word.begin(), word.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
          }))
        fail(o, "choice '" + word + "' is no plain shell word");
    if (!o.metavars.empty() && o.metavars.size() != word_count(o.values)) fail(o, "metavars and values disagree");
  }
}

// ---- bash ----

// What bash offers for one word of the kind; "return" alone offers nothing (free text).
std::string bash_action(Completes::Kind kind, const OptionCompletion& option) {
  switch (kind) {
    case Completes::File: return "COMPREPLY=($(compgen -f -- \"$cur\")); return";
    case Completes::Directory: return "COMPREPLY=($(compgen -d -- \"$cur\")); return";
    case Completes::Choices:
    case Completes::ChoiceThenDirectory:
      return fmt::format("COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return", join(choices(option), " "));
    case Completes::None:
    case Completes::Text:
    case Completes::PatchelfArguments: break;
  }
  return "return";
}

// `case SUBJECT in` with one branch per action, each naming every option that takes it ("" when none).
using Branches = std::vector<std::pair<std::vector<std::string>, std::string>>;
void add_branch(Branches& branches, const std::vector<std::string>& names, const std::string& action) {
  auto same = std::find_if(branches.begin(), branches.end(), [&](const auto& b) { return b.second == action; });
  if (same == branches.end())
    branches.emplace_back(names, action);
  else
    same->first.insert(same->first.end(), names.begin(), names.end());
}
std::string bash_case(const std::string& subject, const std::string& why, const Branches& branches) {
  if (branches.empty()) return "";
  std::string out = fmt::format("  case {} in  # {}\n", subject, why);
  for (const auto& [names, action] : branches) out += fmt::format("    {}) {} ;;\n", join(names, " | "), action);
  return out + "  esac\n";
}

// FUNCTION completes the current word against one table: an option's value as
// its row says, otherwise options (after "-") or files. The caller's locals
// cur, prev, words and cword are in scope (bash's dynamic scoping).
std::string bash_options_function(const std::string& function, const Options& options) {
  Branches first, second, many;
  std::vector<std::string> names;
  for (const auto& o : options) {
    names.insert(names.end(), o.names.begin(), o.names.end());
    Completes::Kind kind = o.completes.kind;
    if (o.values == Values::One || o.values == Values::Two)
      add_branch(first, o.names, bash_action(kind, o));
    else if (o.values == Values::Any)
      add_branch(many, o.names, bash_action(kind, o));
    if (o.values == Values::Two)
      add_branch(second, o.names, bash_action(kind == Completes::ChoiceThenDirectory ? Completes::Directory : kind, o));
  }
  std::string out = fmt::format("{}() {{\n", function);
  out += bash_case("$prev", "the option before takes a value", first);
  if (!second.empty()) {
    out += "  local prev2=\n  ((cword >= 2)) && prev2=${words[cword - 2]}\n";
    out += bash_case("$prev2", "the second of two values", second);
  }
  out += "  if [[ $cur == -* ]]; then\n";
  out += fmt::format("    COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n    return\n  fi\n", join(names, " "));
  out += bash_case("$prev", "its values run up to the next option", many);
  return out + "  COMPREPLY=($(compgen -f -- \"$cur\"))\n}\n";
}

std::string bash_function_name(const std::string& command) {
  std::string name = "_" + command;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string bash_script(const Tool& tool, const Tool& patchelf) {
  std::string main = bash_function_name(tool.command);
  std::string out = fmt::format(
      "# bash completion for {0} (source it, or install to\n"
      "# share/bash-completion/completions/{0}). {1}\n"
      "# {2} {3}:\n# change the table, not this file.\n\n",
      tool.command, tool.about, kGenerated, tool.table);
  out += bash_options_function(main + "_options", tool.options);
  const OptionCompletion* rest = rest_option(tool);
  if (rest) {
    out += "\n# After " + join(rest->names, " or ") + ", patchelf's command line.\n";
    out += bash_options_function(main + "_patchelf_options", patchelf.options);
  }
  out += fmt::format(
      "\n{}() {{\n"
      "  local cur prev words cword\n"
      "  _init_completion 2>/dev/null || {{\n"
      "    cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD - 1]}} words=(\"${{COMP_WORDS[@]}}\") "
      "cword=$COMP_CWORD\n"
      "  }}\n",
      main);
  if (rest)
    out += fmt::format(
        "  local i\n"
        "  for ((i = 1; i < cword; i++)); do\n"
        "    case ${{words[i]}} in\n"
        "      {}) {}_patchelf_options; return ;;\n"
        "    esac\n"
        "  done\n",
        join(rest->names, " | "), main);
  out += fmt::format("  {}_options\n}}\ncomplete -o filenames -F {} {}\n", main, main, tool.command);
  return out;
}

// ---- zsh ----

// Inside a single-quoted shell word: ' ends it, so it is written '\''.
std::string single_quoted(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out;
}

// _arguments' [explanation]: the help's first sentence, brackets escaped. A
// help that is only a note in parentheses (patchelf's "(or --interpreter
// FILENAME)") explains nothing.
std::string zsh_explanation(const std::string& help) {
  if (help.empty() || help.front() == '(') return "";
  std::string sentence = help.substr(0, help.find(". "));
  if (sentence.ends_with(".")) sentence.pop_back();
  std::string out = "[";
  for (char c : sentence) out += (c == '[' || c == ']' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "]";
}

std::string zsh_message(const OptionCompletion& option, size_t word) {
  std::string message = word < option.metavars.size() ? option.metavars[word] : "value";
  for (char& c : message) c = c == '_' ? ' ' : char(std::tolower(static_cast<unsigned char>(c)));
  return message;
}

// ":message:action" for one word; a lone space is the action of free text
// (an empty one would make the next word optional).
std::string zsh_word(const OptionCompletion& option, size_t word, Completes::Kind kind, const std::string& rest) {
  std::string action = " ";
  switch (kind) {
    case Completes::File: action = "_files"; break;
    case Completes::Directory: action = "_files -/"; break;
    case Completes::Choices: action = "(" + join(choices(option), " ") + ")"; break;
    case Completes::ChoiceThenDirectory:
      action = word == 0 ? "(" + join(choices(option), " ") + ")" : "_files -/";
      break;
    case Completes::PatchelfArguments: return ":*::patchelf argument:" + rest;
    case Completes::None:
    case Completes::Text: break;
  }
  return ":" + zsh_message(option, word) + ":" + action;
}

// A piece of an _arguments spec in single quotes ("" stays nothing).
std::string in_quotes(const std::string& text) { return text.empty() ? "" : "'" + single_quoted(text) + "'"; }

// One _arguments spec: '(EXCLUDED)*--name[explanation]:message:action...', or
// for several names '(EXCLUDED)'{-h,--help}'[explanation]...' (one spec each).
// REST is the function completing patchelf's arguments (auto-patchelf --extra-args).
std::string zsh_spec(const OptionCompletion& o, const std::string& rest) {
  std::vector<std::string> excluded = o.excludes;
  if (!o.completes.repeats && o.names.size() > 1) excluded.insert(excluded.begin(), o.names.begin(), o.names.end());
  std::string prefix = excluded.empty() ? "" : "(" + join(excluded, " ") + ")";
  if (o.completes.repeats) prefix += "*";
  std::string after = zsh_explanation(o.help);
  // Several values (nargs='*') complete their first: the rest are the positional paths.
  size_t count = o.values == Values::Rest ? 1 : word_count(o.values);
  for (size_t word = 0; word < count; ++word) after += zsh_word(o, word, o.completes.kind, rest);
  if (o.names.size() == 1) return in_quotes(prefix + o.names[0] + after);
  return in_quotes(prefix) + "{" + join(o.names, ",") + "}" + in_quotes(after);
}

std::string zsh_arguments(const Options& options, const std::string& rest, const std::string& positional) {
  std::string out = "_arguments \\\n";
  for (const auto& o : options) out += "  " + zsh_spec(o, rest) + " \\\n";
  return out + "  '*:" + positional + ":_files'\n";
}

std::string zsh_script(const Tool& tool, const Tool& patchelf) {
  std::string out = fmt::format(
      "#compdef {0}\n"
      "# zsh completion for {0} (install to a directory in $fpath). {1}\n"
      "# {2} {3}:\n# change the table, not this file.\n",
      tool.command, tool.about, kGenerated, tool.table);
  std::string rest = "_" + tool.command + "_patchelf";
  if (const OptionCompletion* option = rest_option(tool))
    // _arguments' words hold only the words after the option: a command name
    // first, for the inner _arguments to skip.
    out += fmt::format(
        "\n# After {}, patchelf's command line.\n{}() {{\n"
        "  words=(patchelf \"${{words[@]}}\")\n  (( CURRENT++ ))\n  {}}}\n",
        join(option->names, " or "), rest, zsh_arguments(patchelf.options, "", patchelf.positional));
  return out + "\n" + zsh_arguments(tool.options, rest, tool.positional);
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace
}  // namespace runpatch::cli

int main(int argc, char** argv) {
  using namespace runpatch::cli;
  if (argc != 2) {
    std::fprintf(stderr, "usage: runpatch_completions OUTPUT_DIR\n");
    return 2;
  }
  try {
    Tool patchelf{"runpatch-patchelf", patchelf_option_completions(), "tools/common/patchelf_args.cpp",
                  fmt::format("Its options are patchelf {}'s.", kPatchelfVersion), "file"};
    Tool auto_patchelf{"auto-patchelf", auto_patchelf_option_completions(),
                       "tools/auto_patchelf/auto_patchelf_args.cpp",
                       "runpatch's drop-in for Nixpkgs' auto-patchelf.py.", "path"};
    check(patchelf);
    check(auto_patchelf);
    std::string dir = argv[1];
    write(dir + "/runpatch-patchelf.bash", bash_script(patchelf, patchelf));
    write(dir + "/_runpatch-patchelf", zsh_script(patchelf, patchelf));
    write(dir + "/auto-patchelf.bash", bash_script(auto_patchelf, patchelf));
    write(dir + "/_auto-patchelf", zsh_script(auto_patchelf, patchelf));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runpatch_completions: %s\n", e.what());
    return 1;
  }
  return 0;
}
