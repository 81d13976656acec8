// Renderings of a resolved dependency tree and of one resolution.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

// libtree-style tree: each library once, where it came from; color for a TTY.
// given: the path as the user named it; a symlink's title names it, then
// the file it resolves to (whose directory is $ORIGIN).
std::string format_tree(const DependencyTree& tree, bool color, const std::string& given = "");
nlohmann::json tree_json(const DependencyTree& tree);
// Which loader's rules resolved a file: kind, interpreter, cache, default directories.
nlohmann::json loader_model_json(const LoaderModel& model);
nlohmann::json resolution_json(const Resolution& resolution);

}  // namespace runpatch
