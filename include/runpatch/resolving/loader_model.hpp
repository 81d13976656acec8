// Whose search rules a file is resolved with: the host's glibc, a glibc at its
// own prefix (Nixpkgs), or musl; chosen from the file's PT_INTERP or given
// with --loader, then confirmed by the loader file's own bytes (the cache it
// reads, its release) (docs/resolving.md, "Loader models").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

enum class LoaderKind {
  HostGlibc,  // the system's glibc: /etc/ld.so.cache, the host's default directories
  NixGlibc,   // a glibc at its own prefix: only <prefix>/etc/ld.so.cache, the interpreter's directory
  Musl,       // musl: no cache, /etc/ld-musl-ARCH.path or /lib:/usr/local/lib:/usr/lib
};
std::string loader_kind_name(LoaderKind kind);  // "host", "nix", "musl"

// What `--loader` asks for; Auto picks per file.
struct LoaderChoice {
  enum class Mode { Auto, Host, Nix, Musl, Path } mode = Mode::Auto;
  std::string path;  // Mode::Path: the ld.so (loader view) whose rules apply, as if it were the PT_INTERP
};
// "auto", "host", "nix", "musl", or an absolute path to an ld.so.
Expected<LoaderChoice> parse_loader_choice(const std::string& text);

struct LoaderModel {
  LoaderKind kind = LoaderKind::HostGlibc;
  std::string interpreter;  // loader view; "" when none is known
  std::string chosen_by;    // why this model: "PT_INTERP", "--loader", "the runpath's glibc", ...
  // The ld.so.cache this loader reads (a path on this host); none: it reads no cache.
  std::optional<std::filesystem::path> ld_so_cache;
  // Default directories (loader view). Empty for the host glibc: asked of the
  // host loader or derived from the machine when first needed.
  std::vector<std::string> default_dirs;
  std::string default_dirs_source;           // e.g. "/etc/ld-musl-x86_64.path", "the interpreter's directory"
  bool reads_resolution_cache_note = false;  // .note.nixos.ldcache (Nixpkgs' loader patch)
  std::string glibc_release;                 // "2.36", read from the loader file; "" when unknown
  // glibc before 2.37 also searches the legacy subdirectories (tls/, the
  // platform's, the hwcaps') of every directory, after glibc-hwcaps/ (from 2.33).
  bool searches_legacy_hwcaps_subdirs = false;

  // One line: "loader: nix glibc /nix/store/…/ld-linux-x86-64.so.2 (PT_INTERP); no ld.so.cache; default path …".
  std::string describe() const;
  // What makes two models search alike (a key for reusing searches).
  std::string key() const;
};

}  // namespace runpatch
