// Hooks that make the editor misbehave on purpose, for tests of what must
// catch it (crash replays, the verifier). Not part of the public options.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runpatch/editing/edit.hpp"

namespace runpatch {

struct EditTestHooks {
  // Perform this many of the planned writes, then stop as if killed.
  std::optional<size_t> stop_after_writes;
  // A deliberately wrong plan, which verification must catch (the file stays
  // untouched): a write the planner did not make (offset, bytes), and/or the
  // plan's writes named `what` dropped.
  std::optional<std::pair<uint64_t, std::vector<uint8_t>>> inject_write;
  std::optional<WriteKind> drop_writes;
};

// edit_elf_file with the hooks applied.
Expected<EditOutcome> edit_elf_file_for_testing(const std::filesystem::path& path, const EditRequest& request,
                                                const EditOptions& options, const EditTestHooks& hooks);

}  // namespace runpatch
