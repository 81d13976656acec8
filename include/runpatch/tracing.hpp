// Every public header of lib/tracing/ (include/runpatch/tracing/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/tracing/trace_analysis.hpp"
#include "runpatch/tracing/trace_records.hpp"
#include "runpatch/tracing/trace_run.hpp"
