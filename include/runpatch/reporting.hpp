// Every public header of lib/reporting/ (include/runpatch/reporting/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/reporting/check_report.hpp"
#include "runpatch/reporting/doctor_report.hpp"
#include "runpatch/reporting/elf_info_report.hpp"
#include "runpatch/reporting/json_text.hpp"
#include "runpatch/reporting/open_attempts_report.hpp"
#include "runpatch/reporting/trace_report.hpp"
#include "runpatch/reporting/tree_report.hpp"
#include "runpatch/reporting/utf8.hpp"
#include "runpatch/reporting/why_report.hpp"
