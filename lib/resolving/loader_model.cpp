// Loader models: which loader's rules apply to a file, and what that loader
// reads. Facts from glibc (elf/dl-cache.c, sysdeps/generic/dl-cache.h),
// Nixpkgs' glibc patches (dont-use-system-ld-so-cache.patch: the cache is
// <prefix>/etc/ld.so.cache; ldcache.patch: the .note.nixos.ldcache reader) and
// musl (ldso/dynlink.c: load_library, the ld-musl-ARCH.path file).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "resolving/loader_file.hpp"
#include "resolving/loader_pick.hpp"
#include "resolving/machine_defaults.hpp"
#include "runpatch/reading/loader_paths.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

// glibc's own directories on any distribution: a glibc interpreter there is
// the system's; anywhere else it belongs to a glibc installed at its own prefix.
bool in_system_dir(const std::string& interpreter, const MachineDefaults& defaults) {
  std::string dir = dirname_of(interpreter);
  for (const char* system :
       {"/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32"})
    if (dir == system) return true;
  return !defaults.multiarch.empty() &&
         (dir == "/lib/" + defaults.multiarch || dir == "/usr/lib/" + defaults.multiarch);
}

LoaderPick pick_from_interpreter(const std::string& interpreter, const MachineDefaults& defaults, std::string why) {
  if (is_musl_interpreter(interpreter)) return {LoaderKind::Musl, interpreter, std::move(why)};
  if (in_system_dir(interpreter, defaults)) return {LoaderKind::HostGlibc, interpreter, std::move(why)};
  return {LoaderKind::NixGlibc, interpreter, std::move(why)};
}

bool needs(const ElfInfo& file, const char* name) {
  return std::find(file.needed.begin(), file.needed.end(), name) != file.needed.end();
}

// A library has no PT_INTERP: the glibc in its runpath (Nixpkgs puts its
// glibc's lib directory there) tells whose loader will load it.
std::optional<std::string> runpath_interpreter(const ElfInfo& file, const std::string& file_view,
                                               const MachineDefaults& defaults, const fs::path& root) {
  std::string runpath = effective_runpath(file);
  if (runpath.empty() || defaults.interpreter.empty()) return std::nullopt;
  std::string loader_name = basename_of(defaults.interpreter);
  for (const auto& entry : split_runpath(runpath)) {
    std::string dir = expand_origin(entry, dirname_of(file_view));
    if (dir.empty() || dir[0] != '/' || dir.find('$') != std::string::npos) continue;
    std::string candidate = (dir == "/" ? "" : dir) + "/" + loader_name;
    struct stat st {};
    if (::stat(under_root(root, candidate).c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
  }
  return std::nullopt;
}

std::string musl_interpreter(const MachineDefaults& defaults) {
  return defaults.musl_arch.empty() ? "" : "/lib/ld-musl-" + defaults.musl_arch + ".so.1";
}

// musl reads PREFIX/etc/ld-musl-ARCH.path, PREFIX being the interpreter's
// path up to its next-to-last slash; ':' and newlines separate entries, empty
// ones are skipped. An unreadable file (other than a missing one) means no
// directories at all.
void musl_search_path(LoaderModel& model, const fs::path& root) {
  const std::string& interp = model.interpreter;
  std::string arch = basename_of(interp).substr(std::strlen("ld-musl-"));
  if (auto dot = arch.find(".so"); dot != std::string::npos) arch.resize(dot);
  std::string prefix = interp.empty() || interp[0] != '/' ? "" : dirname_of(dirname_of(interp));
  if (prefix == "/") prefix.clear();
  std::string path_file = prefix + "/etc/ld-musl-" + arch + ".path";
  int fd = ::open(under_root(root, path_file).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    model.default_dirs = {"/lib", "/usr/local/lib", "/usr/lib"};
    model.default_dirs_source = "musl's built-in path (no " + path_file + ")";
    return;
  }
  model.default_dirs_source = path_file;
  if (fd < 0) return;
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<size_t>(n));
  ::close(fd);
  for (auto& dir : split_list(text, ":\n"))
    if (!dir.empty()) model.default_dirs.push_back(std::move(dir));
}

}  // namespace

LoaderPick pick_loader(const ElfInfo& file, const std::string& file_view, const SearchEnvironment& env) {
  MachineDefaults defaults = machine_defaults(file.identity);
  using Mode = LoaderChoice::Mode;
  std::string own = file.interpreter.value_or("");
  switch (env.loader.mode) {
    case Mode::Host: return {LoaderKind::HostGlibc, defaults.interpreter, "--loader host"};
    case Mode::Nix: {
      if (own.empty()) own = runpath_interpreter(file, file_view, defaults, env.root).value_or("");
      return {LoaderKind::NixGlibc, own, "--loader nix"};
    }
    case Mode::Musl:
      return {LoaderKind::Musl, is_musl_interpreter(own) ? own : musl_interpreter(defaults), "--loader musl"};
    case Mode::Path: return pick_from_interpreter(env.loader.path, defaults, "--loader");
    case Mode::Auto: break;
  }
  if (!own.empty()) return pick_from_interpreter(own, defaults, "PT_INTERP");
  if (needs(file, "libc.so") && !needs(file, "libc.so.6") && !defaults.musl_arch.empty())
    return {LoaderKind::Musl, musl_interpreter(defaults), "needs musl's libc.so"};
  if (auto interp = runpath_interpreter(file, file_view, defaults, env.root))
    return pick_from_interpreter(*interp, defaults, "the glibc in its runpath");
  return {LoaderKind::HostGlibc, defaults.interpreter, "no PT_INTERP"};
}

namespace {

constexpr const char* kSystemCache = "/etc/ld.so.cache";

void host_glibc(LoaderModel& model, const SearchEnvironment& env) {
  model.kind = LoaderKind::HostGlibc;
  model.ld_so_cache = env.ld_so_cache.value_or(under_root(env.root, kSystemCache));
  model.reads_resolution_cache_note = env.use_resolution_cache;
  model.default_dirs_source = env.root == "/" || env.root.empty() ? "the host loader" : "the machine's";
}

// Nixpkgs' glibc reads PREFIX/etc/ld.so.cache (none is installed; the string
// inside the loader says which) and searches only its own lib directory by default.
void glibc_at_prefix(LoaderModel& model, const LoaderFileFacts& file, const SearchEnvironment& env) {
  model.kind = LoaderKind::NixGlibc;
  if (!model.interpreter.empty()) {
    std::string own_cache = file.ld_so_cache.value_or(dirname_of(dirname_of(model.interpreter)) + kSystemCache);
    std::error_code ec;
    if (fs::is_regular_file(under_root(env.root, own_cache), ec)) model.ld_so_cache = under_root(env.root, own_cache);
    model.default_dirs = {dirname_of(model.interpreter)};
  }
  if (env.ld_so_cache) model.ld_so_cache = env.ld_so_cache;
  model.default_dirs_source = "the interpreter's directory";
  model.reads_resolution_cache_note = env.use_resolution_cache || file.reads_resolution_cache_note;
}

}  // namespace

LoaderModel build_loader_model(const LoaderPick& pick, const SearchEnvironment& env) {
  LoaderModel model;
  model.kind = pick.kind;
  model.interpreter = pick.interpreter;
  model.chosen_by = pick.chosen_by;
  if (pick.kind == LoaderKind::Musl) {
    if (!pick.interpreter.empty()) musl_search_path(model, env.root);
    return model;
  }
  // The loader's own bytes decide, not the directory it lies in: a copy of the
  // system's ld.so elsewhere still reads /etc/ld.so.cache and the system's directories.
  LoaderFileFacts file;
  if (!pick.interpreter.empty()) file = read_loader_file(under_root(env.root, pick.interpreter));
  if (file.version) {
    model.glibc_release = std::to_string(file.version->major) + "." + std::to_string(file.version->minor);
    // glibc before 2.37 also searches tls/, the platform's and the hwcaps' subdirectories of each directory.
    model.searches_legacy_hwcaps_subdirs = file.version->before(2, 37);
  }
  bool system_cache = file.ld_so_cache == std::string(kSystemCache);
  if (pick.kind == LoaderKind::NixGlibc && system_cache)
    model.chosen_by += "; it reads /etc/ld.so.cache: a system glibc";
  if (pick.kind == LoaderKind::HostGlibc || system_cache)
    host_glibc(model, env);
  else
    glibc_at_prefix(model, file, env);
  return model;
}

LoaderModel choose_loader_model(const ElfInfo& file, const std::string& file_view, const SearchEnvironment& env) {
  return build_loader_model(pick_loader(file, file_view, env), env);
}

std::string loader_kind_name(LoaderKind kind) {
  switch (kind) {
    case LoaderKind::HostGlibc: return "host";
    case LoaderKind::NixGlibc: return "nix";
    case LoaderKind::Musl: return "musl";
  }
  return "?";
}

Expected<LoaderChoice> parse_loader_choice(const std::string& text) {
  using Mode = LoaderChoice::Mode;
  if (text == "auto") return LoaderChoice{Mode::Auto, ""};
  if (text == "host") return LoaderChoice{Mode::Host, ""};
  if (text == "nix") return LoaderChoice{Mode::Nix, ""};
  if (text == "musl") return LoaderChoice{Mode::Musl, ""};
  if (!text.empty() && text[0] == '/') return LoaderChoice{Mode::Path, text};
  return make_error(ErrorCode::InvalidInput, "",
                    "expected auto, host, nix, musl or an absolute path to an ld.so, got '" + text + "'");
}

std::string LoaderModel::describe() const {
  std::string kind_text = kind == LoaderKind::HostGlibc  ? "host glibc"
                          : kind == LoaderKind::NixGlibc ? "nix glibc"
                                                         : "musl";
  std::string out = "loader: " + kind_text + " " + (interpreter.empty() ? "(interpreter unknown)" : interpreter) +
                    " (" + chosen_by + "); ";
  out += ld_so_cache ? "ld.so.cache " + ld_so_cache->string() : std::string("no ld.so.cache");
  out += "; default path ";
  if (kind == LoaderKind::HostGlibc) {
    out += "from " + default_dirs_source;
  } else {
    std::string dirs = join_runpath(default_dirs);
    out += (dirs.empty() ? "(none)" : dirs) + " (" + default_dirs_source + ")";
  }
  if (reads_resolution_cache_note) out += "; reads .note.nixos.ldcache";
  if (!glibc_release.empty())
    out += "; glibc " + glibc_release + (searches_legacy_hwcaps_subdirs ? " (legacy hwcaps subdirectories too)" : "");
  return out;
}

std::string LoaderModel::key() const {
  std::string k = loader_kind_name(kind) + '\0' + interpreter + '\0' + (ld_so_cache ? ld_so_cache->string() : "") +
                  '\0' + (reads_resolution_cache_note ? "note" : "") + '\0' +
                  (searches_legacy_hwcaps_subdirs ? "legacy" : "");
  for (const auto& d : default_dirs) (k += '\0') += d;
  return k;
}

}  // namespace runpatch
