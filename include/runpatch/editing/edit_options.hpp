// How an edit is written: in place or by copy, synced, grouped (runpatch/editing/edit.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

class CommitGroup;

enum class Durability { Auto, Sync, NoSync };
// Auto resolved for one file: true when its edit syncs. Auto syncs only the
// files of the running system (under /usr, /lib*, /bin, /sbin, /etc, /opt,
// /boot, symlinks resolved) outside a Nix build: what a rebuild cannot
// restore. Everything else (build outputs, CI trees, a user's files) keeps
// the write order, which survives a killed process, without waiting for the disk.
bool syncs(Durability durability, const std::filesystem::path& file);
// Whether the file lies in the running system's directories (Auto's rule).
bool is_system_file(const std::filesystem::path& file);

struct EditOptions {
  std::optional<std::filesystem::path> output;  // write here instead of editing in place
  std::optional<uint64_t> page_size;            // alignment of a new segment (default: largest p_align)
  bool dry_run = false;                         // plan and report, write nothing
  // How the file itself is changed (docs/editing.md §4). An edit that fits the
  // existing tables is always one write into the file (a dynamic entry or a
  // string, inside one sector). One that appends a segment is, by default
  // (false), made on an edited copy renamed over the file: a process that has
  // it mapped keeps the old inode. true (--in-place, what the Nixpkgs hooks
  // pass; also implied inside a Nix build, $NIX_BUILD_TOP): written into the
  // file in crash-ordered phases, a library's grown program header table
  // committed in two one-sector steps, so a crash leaves the old or the new
  // file. Files with several hard links, whose owner a copy cannot keep, or in
  // a directory the caller cannot write are always written into.
  bool in_place = false;
  // Always take the copy path (--atomic-copy): also for single-page edits,
  // files with several hard links (this name gets the copy; other links keep
  // the old file) and files whose owner a copy cannot keep (then an error).
  bool atomic_copy = false;
  // Whether each edit waits for its bytes to reach the disk (fdatasync/fsync
  // between its phases and of a copy and its directory) — what survives a
  // power cut. The write order alone already survives a killed process (the
  // page cache keeps it). Auto: syncs for files of the running system only
  // (syncs() above; never inside a Nix build, whose failed builds are
  // discarded and whose outputs Nix does not sync either); --sync / --no-sync
  // decide.
  Durability durability = Durability::Auto;
  // Commit as part of this group (commit_group.hpp): the edit's first step is
  // written now, the rest when the group commits, whose errors it reports.
  CommitGroup* group = nullptr;
  // What names this edit among the group's failures (CommitFailure::ticket):
  // the caller's own key, e.g. the file's index in its list.
  size_t group_ticket = 0;
  // Where the dynamic table is read: patchelf's front end also edits a file
  // without PT_DYNAMIC through its `.dynamic` section (reading/elf_info.hpp).
  DynamicSource dynamic_source = DynamicSource::Segment;
  // patchelf's mark of a replaced runpath (runpatch-patchelf): where the
  // dynamic strings move into a new segment, the copy keeps the whole old
  // table with the replaced runpath's bytes overwritten by 'X' (no store path
  // stays either way). Off, the copy ends at the last string still referenced
  // and replaced strings are zeroed, so the bytes depend on the final content only.
  bool mark_replaced_runpath = false;
};

}  // namespace runpatch
