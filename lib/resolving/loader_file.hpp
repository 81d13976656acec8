// What a glibc loader's own bytes say about it: the ld.so.cache it reads (a
// string inside it: "/etc/ld.so.cache" for a system glibc, "<prefix>/etc/ld.so.cache"
// for one built at its own prefix, as Nixpkgs' glibc is), its release (the
// line `ld.so --version` prints) and whether it reads .note.nixos.ldcache.
// The model follows the file, not the path it lies at.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace runpatch {

struct GlibcVersion {
  int major = 0, minor = 0;
  bool before(int other_major, int other_minor) const {
    return major != other_major ? major < other_major : minor < other_minor;
  }
};

struct LoaderFileFacts {
  std::optional<std::string> ld_so_cache;    // the cache path compiled in, as the loader opens it
  std::optional<GlibcVersion> version;       // from "... release version X.Y"
  bool reads_resolution_cache_note = false;  // Nixpkgs' ldcache.patch ("RESCACHE")
};

// Reads the loader file once; an unreadable file gives no facts.
LoaderFileFacts read_loader_file(const std::filesystem::path& loader);

}  // namespace runpatch
