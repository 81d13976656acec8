// What a shell completes after each option: a column of the two drop-ins'
// option tables (patchelf_args.cpp, auto_patchelf_args.cpp), from which
// tools/completions writes their bash and zsh completions.
#pragma once

#include <string>
#include <vector>

namespace runpatch::cli {

struct Completes {
  enum Kind {
    None,                 // takes no value: options follow
    Text,                 // free text: nothing to offer
    File,                 // a file (or a directory on the way to one)
    Directory,            // a directory
    Choices,              // one of choices()
    ChoiceThenDirectory,  // two words: one of choices(), then a directory (--search-path MODE PATH)
    PatchelfArguments,    // the rest of the line is patchelf's command line (auto-patchelf --extra-args)
  };
  Kind kind = None;
  // A function, called only by the generator: the tools never build the list at start-up.
  std::vector<std::string> (*choices)() = nullptr;
  bool repeats = false;  // each use adds to the earlier ones, so zsh offers it again
};

inline constexpr Completes kNoValue{Completes::None}, kText{Completes::Text}, kFile{Completes::File},
    kDirectory{Completes::Directory};
constexpr Completes one_of(std::vector<std::string> (*choices)()) { return {Completes::Choices, choices}; }
constexpr Completes repeatable(Completes completes) {
  completes.repeats = true;
  return completes;
}

// One option as the completion generator sees it, read off a table's row.
struct OptionCompletion {
  enum class Values { None, One, Two, Any, Rest };  // how many words it takes (argparse's nargs)
  std::vector<std::string> names;
  Values values = Values::None;
  std::vector<std::string> metavars;  // the words' names in --help, one per word it takes
  Completes completes;
  std::string help;                   // what --help says of it (may be empty)
  std::vector<std::string> excludes;  // options it may not be given with
};

}  // namespace runpatch::cli
