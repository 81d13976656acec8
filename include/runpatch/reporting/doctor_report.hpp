// Renderings of doctor's report and the driver facts it judged against.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runpatch/diagnosing/doctor.hpp"

namespace runpatch {

// Per file: which libcuda each loader gets, from where, what it shadows, the verdict and the fix.
std::string format_doctor(const DoctorReport& report, bool color);
// The driver facts doctor judged against, as one header line.
std::string format_driver_facts(const DriverFacts& facts);
// The kind of host, doctor's first line: "host: discrete GPU" or "host: L4T R36.4.4 (JetPack 6.2.1: ...)".
std::string format_host(const DriverFacts& facts);
nlohmann::json doctor_json(const DoctorReport& report);
nlohmann::json driver_facts_json(const DriverFacts& facts);
// doctor --run: the program's prediction, each run-time requester's, what the
// run loaded against them, and the command's exit status.
std::string format_doctor_run(const DoctorRun& run, const std::string& command, bool color);
nlohmann::json doctor_run_json(const DoctorRun& run);

}  // namespace runpatch
