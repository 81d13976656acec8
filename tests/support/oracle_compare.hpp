// Compares our reader with readelf on one file; returns "" when they agree.
#pragma once

#include <filesystem>
#include <string>

namespace runpatch::test {

std::string compare_with_readelf(const std::filesystem::path& file);

}  // namespace runpatch::test
