// patchelf 0.18's options, parsed into an edit request; shared by
// runpatch-patchelf and `runpatch auto-patchelf --extra-args`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runpatch/edit.hpp"

namespace runpatch::cli {

struct PatchelfArguments {
  std::vector<std::string> files;  // every word that is not an option, as patchelf does
  std::optional<std::string> set_rpath, add_rpath, output, interpreter, soname;
  bool remove_rpath = false, shrink_rpath = false, force_rpath = false, debug = false;
  bool build_resolution_cache = false;
  bool print_rpath = false, print_needed = false, print_interpreter = false, print_soname = false;
  bool help = false, version = false;
  std::vector<std::string> allowed_prefixes, add_needed, remove_needed;
  std::vector<std::pair<std::string, std::string>> replace_needed;
  std::optional<uint64_t> page_size;
};

// The error is patchelf's message (without the "patchelf: " prefix).
Expected<PatchelfArguments> parse_patchelf_arguments(const std::vector<std::string>& args);

EditRequest patchelf_request(const PatchelfArguments& args);

}  // namespace runpatch::cli
