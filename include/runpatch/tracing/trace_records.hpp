// What runpatch's rtld audit library (lib/tracing/audit/runpatch_audit.c)
// writes while a traced program runs, one record a line, and its parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

// la_objsearch's flag: the search step a candidate name comes from
// (LA_SER_* of <link.h>). RPATH and RUNPATH share one flag: which object's
// list it was is the static model's to say (trace_analysis.hpp).
enum class SearchStep : unsigned {
  Original = 0x01,       // LA_SER_ORIG: the name as asked, before any search
  LdLibraryPath = 0x02,  // LA_SER_LIBPATH
  Runpath = 0x04,        // LA_SER_RUNPATH: DT_RPATH or DT_RUNPATH
  Cache = 0x08,          // LA_SER_CONFIG: ld.so.cache
  Default = 0x40,        // LA_SER_DEFAULT: the loader's default directories
  Secure = 0x80,         // LA_SER_SECURE: secure-mode directories
};
// For people: "as asked", "LD_LIBRARY_PATH", "rpath/runpath", "ld.so.cache", "default directory", ...
std::string search_step_name(SearchStep step);
// For JSON: "original", "ld_library_path", "runpath", "cache", "default", "secure".
std::string search_step_id(SearchStep step);

struct TraceRecord {
  enum class Kind { Process, Search, Open, Activity };
  Kind kind = Kind::Process;
  long pid = 0;
  long parent = 0;        // Process: its parent's pid
  bool forked = false;    // Process: a fork's child, running its parent's program (else a program starting)
  unsigned flag = 0;      // Search: a SearchStep; Activity: LA_ACT_* (0 consistent, 1 add, 2 delete)
  long lmid = 0;          // Open: the link-map namespace
  std::string requester;  // Search: the requester's l_name ("" the program itself, "?" unknown)
  std::string name;       // Process: its executable; Search: the name tried; Open: the l_name loaded
};

// Parses the audit library's output (escapes \t \n \\ undone). A malformed
// line is an error naming its line number.
Expected<std::vector<TraceRecord>> parse_trace_records(std::string_view text);

}  // namespace runpatch
