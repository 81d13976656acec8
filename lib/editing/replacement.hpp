// The copy path of an edit: the edited copy is built where nobody sees it (an
// unnamed O_TMPFILE inode in the destination's directory), synced, and put in
// place with one rename (docs/editing.md §4).
#pragma once

#include <sys/stat.h>

#include <string>

#include "editing/commit_steps.hpp"
#include "editing/planned_write.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

// Whether a copy can be given the owner and group of st: root can give files
// away; anyone else only to themselves and to a group they belong to.
bool copy_can_keep_owner(const struct stat& st);

// Whether an edited copy can be made beside path (its directory is writable).
bool copy_can_be_created(const std::string& path);

// Refuses, as patchelf does (it writes through the path), when the caller may
// not write the file: replacing it needs only a writable directory, and the
// caller would become the owner. A running program (text file busy) may be replaced.
Status check_may_write(const std::string& path);

// Who else may be creating copies beside dest.
enum class DestLock {
  Held,     // the caller holds dest's lock: a copy name left beside it is a killed editor's
  NotHeld,  // --output: other writers may be at work; names are random
};

// The plan written onto a copy of source, renamed over dest, as commit steps
// (commit_steps.hpp): build the copy, rename it. An existing dest keeps its
// owner, group, mode and extended attributes (the caller may write it:
// check_may_write; an owner that cannot be kept is an error); a new one gets
// source's mode. A dest that is not a regular file (/dev/null, a FIFO) is
// written through, as patchelf does.
Expected<PendingCommit> commit_by_copy(const std::string& source, const std::string& dest, EditPlan plan,
                                       DestLock lock);

}  // namespace runpatch
