// Writing a runpath into a file that has only DT_RPATH turns it into
// DT_RUNPATH (as patchelf does without --force-rpath). DT_RPATH is also
// searched for the dependencies of every object the file loads; DT_RUNPATH
// only for the file's own. This names what the file's DT_RPATH finds for
// others today, which the conversion takes away.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/editing/edit_outcome.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

// Does this request turn the file's DT_RPATH into DT_RUNPATH?
bool converts_rpath(const ElfInfo& before, const EditRequest& request);

// One warning per dependency of another object that the file's DT_RPATH
// resolves under the host's rules (none when the file cannot be resolved).
std::vector<EditWarning> inherited_rpath_warnings(const std::filesystem::path& file);

}  // namespace runpatch
