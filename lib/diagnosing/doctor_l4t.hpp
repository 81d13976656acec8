// doctor on an L4T host (Jetson): the verdicts that depend on the L4T
// release and the JetPack table (docs/doctor.md, "Jetson").
#pragma once

#include <filesystem>

#include "runpatch/diagnosing/doctor.hpp"

namespace runpatch {

// Judges load (its chosen libcuda is neither missing nor the stub, and a GPU
// kernel driver is loaded) against driver.l4t; session resolves cuda_compat's
// libcuda's own dependencies.
void judge_l4t(const DriverFacts& driver, ResolutionSession& session, const std::filesystem::path& root,
               LibcudaLoad& load);

}  // namespace runpatch
