#include "editing/planned_write.hpp"

#include <fmt/format.h>

namespace runpatch {

std::string PlannedWrite::description() const {
  if (kind == WriteKind::SymbolVersion) return fmt::format("version of {}", subject);
  return std::string(write_kind_name(kind));
}

}  // namespace runpatch
