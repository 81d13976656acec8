// Fuzz target: the JSON policy-file parser, then applying what it accepted.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runpatch/policy/policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto policy = runpatch::RunpathPolicy::from_json_text(text, "fuzz-policy.json");
  if (!policy) {
    if (policy.error().what.empty()) std::abort();
    return 0;
  }
  // Applying a policy twice changes nothing the second time (idempotence).
  std::string once = runpatch::apply_policy(*policy, "/usr/lib:$ORIGIN:/run/opengl-driver/lib");
  std::string twice = runpatch::apply_policy(*policy, once);
  if (once != twice) std::abort();
  return 0;
}
