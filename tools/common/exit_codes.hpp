// Exit codes shared by every tool.
#pragma once

namespace runpatch::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitProblem = 1;  // a problem found, or an edit failed
inline constexpr int kExitUsage = 2;

}  // namespace runpatch::cli
