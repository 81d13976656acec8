#include <fmt/format.h>

#include <algorithm>

#include "runpatch/reading/resolution_cache_format.hpp"

#include "runpatch/reading/loader_paths.hpp"

namespace runpatch {

std::vector<uint8_t> encode_resolution_cache(const ResolutionCache& cache) {
  std::vector<uint8_t> out;
  auto put = [&](std::string_view text) {
    out.insert(out.end(), text.begin(), text.end());
    out.push_back(0);
  };
  for (const auto& entry : cache) {
    put(entry.needed);
    put(join_locations(entry.locations));
  }
  out.push_back(0);
  return out;
}

Expected<ResolutionCache> decode_resolution_cache(std::span<const uint8_t> descriptor) {
  ResolutionCache cache;
  size_t at = 0;
  auto next_string = [&](const char* what) -> Expected<std::string> {
    auto nul = std::find(descriptor.begin() + at, descriptor.end(), uint8_t(0));
    if (nul == descriptor.end())
      return make_error(ErrorCode::Malformed, "",
                        fmt::format("resolution cache: {} at descriptor byte {} is not NUL-terminated", what, at));
    std::string text(descriptor.begin() + at, nul);
    at = size_t(nul - descriptor.begin()) + 1;
    return text;
  };
  for (;;) {
    if (at >= descriptor.size())
      return make_error(ErrorCode::Malformed, "", "resolution cache: descriptor ends without its closing NUL");
    RUNPATCH_TRY(std::string needed, next_string("library name"));
    if (needed.empty()) break;  // the closing NUL
    RUNPATCH_TRY(std::string joined, next_string("location list"));
    ResolutionCacheEntry entry{std::move(needed), {}};
    // An empty list is one empty location, as malformed as any other.
    for (auto& location : joined.empty() ? std::vector<std::string>{""} : split_runpath(joined)) {
      if (location.empty() || (location[0] != '=' && location[0] != '?'))
        return make_error(ErrorCode::Malformed, "",
                          fmt::format("resolution cache: location '{}' of {} starts with neither '=' nor '?'", location,
                                      entry.needed));
      entry.locations.push_back(std::move(location));
    }
    if (!cache.empty() && !(cache.back().needed < entry.needed))
      return make_error(ErrorCode::Malformed, "",
                        fmt::format("resolution cache: {} is out of order or repeated", entry.needed));
    cache.push_back(std::move(entry));
  }
  return cache;
}

std::string join_locations(const std::vector<std::string>& locations) { return join_runpath(locations); }

std::string format_resolution_cache_entry(const ResolutionCacheEntry& entry) {
  return entry.needed + " => " + join_locations(entry.locations);
}

}  // namespace runpatch
