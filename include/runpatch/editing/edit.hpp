// Editing ELF files in place: runpath, interpreter, soname and needed entries.
// Edits are planned in memory, then written so that a crash at any moment
// leaves the old or the new file (see docs/editing.md). A unit that needs only
// the request, the options or the outcome includes that header alone.
#pragma once

#include <filesystem>

#include "runpatch/editing/edit_options.hpp"
#include "runpatch/editing/edit_outcome.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/reading/expected.hpp"

namespace runpatch {

Expected<EditOutcome> edit_elf_file(const std::filesystem::path& path, const EditRequest& request,
                                    const EditOptions& options = {});

}  // namespace runpatch
