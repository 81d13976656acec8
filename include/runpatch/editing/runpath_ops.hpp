// Runpath computations shared by the front ends: appending, prepending, and
// patchelf's --shrink-rpath.
#pragma once

#include <string>
#include <vector>

#include "runpatch/editing/edit_request.hpp"
#include "runpatch/reading/loader_paths.hpp"  // effective_runpath, split_runpath, join_runpath

namespace runpatch {

// RunpathUpdate that sets value.
RunpathUpdate set_runpath_update(std::string value);
RunpathUpdate remove_runpath_update();
// Appends (or prepends) entries to the current runpath (DT_RUNPATH, else DT_RPATH).
// deduplicate keeps the first occurrence of each entry, so applying it twice
// equals once; patchelf's --add-rpath does not deduplicate.
RunpathUpdate add_runpath_update(std::string entries, bool prepend, bool deduplicate);

// patchelf --shrink-rpath: keeps relative entries ($ORIGIN/...) always, drops
// absolute entries outside allowed_prefixes (when given), and keeps an absolute directory only if
// it holds a not-yet-found DT_NEEDED library of the same class and machine.
RunpathUpdate shrink_runpath_update(std::vector<std::string> allowed_prefixes);

}  // namespace runpatch
