// The loader-environment options `tree` and `why` share.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "runpatch/resolving/resolve.hpp"

namespace runpatch::cli {

struct SearchOptions {
  std::string root = "/";
  std::optional<std::string> ld_library_path;
  std::optional<std::string> ld_so_cache;
  bool ignore_environment = false;
  bool use_ldcache = false;
  LoaderChoice loader;

  void add_to(CLI::App* app) {
    app->add_option("--root", root, "Resolve inside this tree (a Nix store, a Jetson rootfs)");
    app->add_option("--ld-library-path", ld_library_path, "Use this LD_LIBRARY_PATH instead of the environment's");
    app->add_option("--ld-so-cache", ld_so_cache, "Use this ld.so.cache (default: ROOT/etc/ld.so.cache)");
    app->add_flag("--ignore-environment", ignore_environment, "Ignore LD_LIBRARY_PATH of the environment");
    app->add_option_function<std::string>(
           "--loader",
           [this](const std::string& text) {
             auto choice = parse_loader_choice(text);
             if (!choice) throw CLI::ValidationError("--loader", choice.error().what);
             loader = *choice;
           },
           "Whose search rules apply: auto (each file's PT_INTERP decides), host (this system's glibc), nix "
           "(a glibc at its own prefix), musl, or PATH to an ld.so")
        ->type_name("auto|host|nix|musl|PATH");
    app->add_flag("--use-ldcache", use_ldcache,
                  "Resolve as Nixpkgs' patched loader does: a library listed in a file's .note.nixos.ldcache is "
                  "looked for at the note's locations");
  }

  SearchEnvironment environment() const {
    bool host = root == "/";
    SearchEnvironment env =
        host ? SearchEnvironment::host(!ignore_environment && !ld_library_path) : SearchEnvironment{};
    env.root = root;
    if (ld_library_path) env.ld_library_path = split_search_path(*ld_library_path);
    if (ld_so_cache) env.ld_so_cache = *ld_so_cache;
    env.use_resolution_cache = use_ldcache;
    env.loader = loader;
    return env;
  }
};

}  // namespace runpatch::cli
