#include "oracle_compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "readelf_oracle.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch::test {

namespace {
std::string show(const std::optional<std::string>& v) { return v ? "[" + *v + "]" : "(none)"; }
}  // namespace

std::string compare_with_readelf(const std::filesystem::path& file) {
  auto ours = read_elf_info(file);
  auto theirs = readelf_facts(file);
  if (!theirs) return ours ? fmt::format("{}: readelf failed but runpatch read it", file.string()) : "";
  if (!ours) return fmt::format("{}: runpatch failed: {}", file.string(), ours.error().message());
  std::string diff;
  auto field = [&](const char* name, const std::optional<std::string>& a, const std::optional<std::string>& b) {
    if (a != b) diff += fmt::format("{}: {} runpatch={} readelf={}\n", file.string(), name, show(a), show(b));
  };
  if (ours->has_dynamic != theirs->has_dynamic)
    diff +=
        fmt::format("{}: has_dynamic runpatch={} readelf={}\n", file.string(), ours->has_dynamic, theirs->has_dynamic);
  if (ours->needed != theirs->needed)
    diff += fmt::format("{}: needed runpatch={} readelf={}\n", file.string(), ours->needed, theirs->needed);
  field("runpath", ours->runpath, theirs->runpath);
  field("rpath", ours->rpath, theirs->rpath);
  field("soname", ours->soname, theirs->soname);
  field("interpreter", ours->interpreter, theirs->interpreter);
  bool pie_flag = std::find(theirs->flags_1.begin(), theirs->flags_1.end(), "PIE") != theirs->flags_1.end();
  if (pie_flag != bool(ours->flags_1 & 0x08000000)) diff += fmt::format("{}: DF_1_PIE disagrees\n", file.string());
  return diff;
}

}  // namespace runpatch::test
