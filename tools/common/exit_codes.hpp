// Exit codes shared by every tool, and the one rule that turns an error into one.
#pragma once

#include "runpatch/reading/expected.hpp"

namespace runpatch::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitProblem = 1;  // a problem found, or an edit failed
inline constexpr int kExitUsage = 2;

// Where an error comes from: what the command line gives (an option's
// value, a policy, map or report file it names), or the files the tool
// works on (or the system while it does).
enum class ErrorSource { CommandLine, WorkedOn };

// 2 for what the command line gives and for an error that says so (Usage),
// 1 for a problem with the files worked on.
inline int exit_code_for(const Error& error, ErrorSource source) {
  return source == ErrorSource::CommandLine || error.code == ErrorCode::Usage ? kExitUsage : kExitProblem;
}

}  // namespace runpatch::cli
