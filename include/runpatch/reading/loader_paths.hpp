// Path and runpath arithmetic on loader-view strings (no file system access,
// no std::filesystem splitting): shared by the resolver, the editor, doctor,
// the policies and check.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

inline std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

inline std::string basename_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }
inline std::string_view basename_view(std::string_view path) { return path.substr(path.rfind('/') + 1); }

// Whether an interpreter path names musl's loader (/lib/ld-musl-ARCH.so.1):
// the one answer for resolving (musl's search rules) and tracing (no LD_AUDIT).
inline bool is_musl_interpreter(std::string_view path) { return basename_view(path).rfind("ld-musl-", 0) == 0; }

// $ORIGIN and ${ORIGIN} replaced by origin_dir (other tokens are left as they are).
inline std::string expand_origin(std::string entry, const std::string& origin_dir) {
  for (std::string_view token : {std::string_view("${ORIGIN}"), std::string_view("$ORIGIN")})
    for (size_t at; (at = entry.find(token)) != std::string::npos;) entry.replace(at, token.size(), origin_dir);
  return entry;
}

// What glibc substitutes for the dynamic string tokens of a search path entry.
struct DynamicTokens {
  std::string origin;    // $ORIGIN: the directory of the object whose entry it is
  std::string lib;       // $LIB
  std::string platform;  // $PLATFORM
};
// Whether entry names $LIB or $PLATFORM (the values a loader must be asked for).
bool names_loader_tokens(const std::string& entry);
// Whether entry names $ORIGIN (or ${ORIGIN}): anywhere, or as its first component.
bool names_origin(const std::string& entry);
bool starts_with_origin(const std::string& entry);
// $ORIGIN, $LIB, $PLATFORM, braced or not, replaced; an unknown token stays as
// written (glibc elf/dl-load.c, _dl_dst_substitute).
std::string expand_dynamic_tokens(const std::string& entry, const DynamicTokens& values);

// Where an absolute loader-view path lies on this host when resolving under root.
inline std::filesystem::path under_root(const std::filesystem::path& root, const std::string& path) {
  if (root.empty() || root == "/" || path.empty() || path[0] != '/') return path;
  return root / std::filesystem::path(path).relative_path();
}

// The entries of a list separated by any of `separators`, empty ones
// included ("a::b" has three): the one splitter of runpaths (":"),
// LD_LIBRARY_PATH (":" or ";") and musl's path file (":" or newline).
std::vector<std::string> split_list(std::string_view list, std::string_view separators);

// Runpath lists (":"-separated, as DT_RUNPATH and DT_RPATH hold them); an
// empty string is no entry, "a::b" has an empty middle entry.
std::vector<std::string> split_runpath(const std::string& runpath);
std::string join_runpath(const std::vector<std::string>& entries);
// Whether a runpath written as value holds an empty entry ("a::b", ":a",
// "a:"), which ld.so searches as the current directory wherever the program
// runs. An empty runpath ("") holds no entry: glibc searches nothing for it
// (what patchelf --shrink-rpath leaves when nothing remains).
bool has_empty_runpath_entry(const std::string& value);

// The runpath the loader would use: DT_RUNPATH, else DT_RPATH, else "".
std::string effective_runpath(const ElfInfo& info);

}  // namespace runpatch
