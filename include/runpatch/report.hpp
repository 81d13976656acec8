// Text and JSON renderings of what the reader found.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runpatch/elf_info.hpp"

namespace runpatch {

// Multi-line, readelf-spirited description of one file.
std::string format_elf_info(const ElfInfo& info);

// One line per file, for tree scans: "PATH: KIND MACHINE runpath=… needed=…".
std::string format_scan_line(const ElfInfo& info);

nlohmann::json elf_info_json(const ElfInfo& info);

}  // namespace runpatch

#include "runpatch/resolve.hpp"

namespace runpatch {

// libtree-style tree: each library once, where it came from; color for a TTY.
std::string format_tree(const DependencyTree& tree, bool color);
nlohmann::json tree_json(const DependencyTree& tree);
// Which loader's rules resolved a file: kind, interpreter, cache, default directories.
nlohmann::json loader_model_json(const LoaderModel& model);
nlohmann::json resolution_json(const Resolution& resolution);

}  // namespace runpatch

#include "runpatch/check.hpp"

namespace runpatch {

// Findings by file, then (with summary) one "N files checked: ..." line.
std::string format_check_text(const CheckReport& report, bool color, bool summary = true);
// Findings under a tree or a why: "  RULE: message" lines, or nothing.
std::string format_findings(const std::vector<Finding>& findings);
nlohmann::json findings_json(const std::vector<Finding>& findings);
nlohmann::json check_json(const CheckReport& report);
// JUnit XML: one testcase per file, failing when it has findings at or above fail_on.
std::string check_junit(const CheckReport& report, Severity fail_on);
// SARIF 2.1.0: one run, every rule described, one result per finding.
nlohmann::json check_sarif(const CheckReport& report, const std::string& version);

}  // namespace runpatch

#include "runpatch/doctor.hpp"

namespace runpatch {

// Per file: which libcuda each loader gets, from where, what it shadows, the verdict and the fix.
std::string format_doctor(const DoctorReport& report, bool color);
// The driver facts doctor judged against, as one header line.
std::string format_driver_facts(const DriverFacts& facts);
// The kind of host, doctor's first line: "host: discrete GPU" or "host: L4T R36.4.4 (JetPack 6.2.1: ...)".
std::string format_host(const DriverFacts& facts);
nlohmann::json doctor_json(const DoctorReport& report);
nlohmann::json driver_facts_json(const DriverFacts& facts);

}  // namespace runpatch

#include "runpatch/resolution_cache.hpp"

namespace runpatch {

// `tree --stats`: open attempts per direct DT_NEEDED, without and with the resolution cache.
std::string format_open_attempts(const OpenAttemptStats& stats);
nlohmann::json open_attempts_json(const OpenAttemptStats& stats);

}  // namespace runpatch
