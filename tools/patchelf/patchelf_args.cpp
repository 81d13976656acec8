#include "patchelf_args.hpp"

#include <cstdlib>

#include "runpatch/runpath_ops.hpp"

namespace runpatch::cli {

Expected<PatchelfArguments> parse_patchelf_arguments(const std::vector<std::string>& args) {
  PatchelfArguments a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::optional<Error> missing;
    auto value = [&]() -> std::string {
      if (i + 1 == args.size()) {
        missing = make_error("", "missing argument to '" + arg + "'");
        return {};
      }
      return args[++i];
    };
    if (arg == "--set-interpreter" || arg == "--interpreter") a.interpreter = value();
    else if (arg == "--page-size") {
      std::string v = value();
      char* end = nullptr;
      unsigned long long size = std::strtoull(v.c_str(), &end, 10);
      if (!missing && (!end || *end || size == 0 || (size & (size - 1))))
        return make_error("", "invalid argument to --page-size");
      a.page_size = size;
    } else if (arg == "--print-interpreter") a.print_interpreter = true;
    else if (arg == "--print-soname") a.print_soname = true;
    else if (arg == "--set-soname") a.soname = value();
    else if (arg == "--remove-rpath") a.remove_rpath = true;
    else if (arg == "--shrink-rpath") a.shrink_rpath = true;
    else if (arg == "--allowed-rpath-prefixes") {
      for (const auto& p : split_runpath(value()))
        if (!p.empty()) a.allowed_prefixes.push_back(p);
    } else if (arg == "--set-rpath") a.set_rpath = value();
    else if (arg == "--add-rpath") a.add_rpath = value();
    else if (arg == "--print-rpath") a.print_rpath = true;
    else if (arg == "--force-rpath") a.force_rpath = true;
    else if (arg == "--print-needed") a.print_needed = true;
    else if (arg == "--add-needed") a.add_needed.push_back(value());
    else if (arg == "--remove-needed") a.remove_needed.push_back(value());
    else if (arg == "--replace-needed") {
      std::string from = value();
      std::string to = value();
      a.replace_needed.emplace_back(from, to);
    } else if (arg == "--output") a.output = value();
    else if (arg == "--debug") a.debug = true;
    else if (arg == "--build-resolution-cache") a.build_resolution_cache = true;
    else if (arg == "--help" || arg == "-h") a.help = true;
    else if (arg == "--version") a.version = true;
    else a.files.push_back(arg);
    if (missing) return *missing;
  }
  return a;
}

EditRequest patchelf_request(const PatchelfArguments& a) {
  EditRequest request;
  request.force_rpath = a.force_rpath;
  // patchelf applies one runpath operation, in this precedence.
  if (a.shrink_rpath) request.runpath = shrink_runpath_update(a.allowed_prefixes);
  else if (a.remove_rpath) request.runpath = remove_runpath_update();
  else if (a.set_rpath) request.runpath = set_runpath_update(*a.set_rpath);
  else if (a.add_rpath) request.runpath = add_runpath_update(*a.add_rpath, /*prepend=*/false, /*deduplicate=*/false);
  request.interpreter = a.interpreter;
  request.soname = a.soname;
  request.add_needed = a.add_needed;
  request.remove_needed = a.remove_needed;
  request.replace_needed = a.replace_needed;
  if (a.build_resolution_cache) request.resolution_cache = ResolutionCacheMode::Write;
  return request;
}

}  // namespace runpatch::cli
