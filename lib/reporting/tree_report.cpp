#include <fmt/format.h>

#include <iterator>

#include "runpatch/reporting/tree_report.hpp"

namespace runpatch {

namespace {

std::string source_label(const Resolution& r) {
  switch (r.via) {
    case FoundVia::Rpath: return r.via_object.empty() ? "rpath" : "rpath of " + r.via_object;
    default: return found_via_name(r.via);
  }
}

}  // namespace

std::string format_tree(const DependencyTree& tree, bool color, const std::string& given) {
  const char* red = color ? "\033[1;31m" : "";
  const char* dim = color ? "\033[2m" : "";
  const char* reset = color ? "\033[0m" : "";
  std::string out;
  out.reserve(96 * (tree.edges.size() + 1));  // about a line per edge: one allocation
  if (!tree.objects.empty()) {
    // A static executable has no loader: naming the host's would say it runs under one.
    const ElfInfo* root = tree.objects[0].info.get();
    bool loaderless = root && root->is_static();
    const std::string& file = tree.objects[0].path;
    out += (given.empty() || given == file ? file : given + " -> " + file) + "  (" +
           (loaderless ? "statically linked: no loader, nothing is resolved" : tree.loader.describe()) + ")\n";
  }
  auto append = std::back_inserter(out);
  // Edges grouped by requester once (a walk that scanned every edge per node
  // is quadratic): first[o] .. first[o + 1] index into by_requester.
  std::vector<size_t> first(tree.objects.size() + 1, 0);
  for (const auto& e : tree.edges)
    if (!e.dlopen && e.from < tree.objects.size()) ++first[e.from + 1];
  for (size_t o = 0; o < tree.objects.size(); ++o) first[o + 1] += first[o];
  std::vector<const DependencyEdge*> by_requester(first.back());
  std::vector<size_t> filled(first.begin(), first.end() - 1);
  for (const auto& e : tree.edges)
    if (!e.dlopen && e.from < tree.objects.size()) by_requester[filled[e.from]++] = &e;
  std::vector<bool> printed(tree.objects.size(), false);
  if (!printed.empty()) printed[0] = true;
  std::string indent;
  std::vector<const DependencyEdge*> shown;  // one stack for every level: a level's lines sit above its children's
  auto walk = [&](auto& self, size_t from) -> void {
    // Libraries shown elsewhere already are not repeated, as in libtree.
    size_t begin = shown.size();
    for (size_t k = first[from]; k < first[from + 1]; ++k) {
      const auto* e = by_requester[k];
      if (!e->to || !printed[*e->to]) {
        shown.push_back(e);
        if (e->to) printed[*e->to] = true;
      }
    }
    size_t end = shown.size();
    for (size_t i = begin; i < end; ++i) {
      const auto& e = *shown[i];
      bool last = i + 1 == end;
      out += indent;
      out += last ? "└── " : "├── ";
      // Plain appends: this runs per line of output, and fmt's iterator path is slower.
      if (!e.to && !e.resolution.path) {
        ((((out += red) += e.resolution.name) += " not found") += reset) += "\n";
        continue;
      }
      ((((out += e.resolution.name) += " ") += dim) += "=> ") += e.resolution.path.value_or("?");
      ((((out += " [") += source_label(e.resolution)) += "]") += reset) += "\n";
      if (e.to) {
        size_t depth = indent.size();
        indent += last ? "    " : "│   ";
        self(self, *e.to);
        indent.resize(depth);
      }
    }
    shown.resize(begin);
  };
  if (!tree.objects.empty()) walk(walk, 0);
  for (const auto& e : tree.edges) {
    if (!e.dlopen) continue;
    fmt::format_to(append, "dlopen by {}: ", tree.objects[e.from].path);
    if (e.resolution.path)
      fmt::format_to(append, "{} {}=> {} [{}]{} ({})\n", e.resolution.name, dim, *e.resolution.path,
                     source_label(e.resolution), reset, e.dlopen_reason);
    else
      fmt::format_to(append, "{}{} not found{} ({})\n", red, e.resolution.name, reset, e.dlopen_reason);
  }
  return out;
}

nlohmann::json resolution_json(const Resolution& r) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const auto& a : r.attempts)
    attempts.push_back({{"path", a.path}, {"outcome", a.outcome_text()}, {"rule", a.rule}});
  return {{"name", r.name},
          {"path", r.path ? nlohmann::json(*r.path) : nlohmann::json(nullptr)},
          {"via", found_via_name(r.via)},
          {"via_object", r.via_object},
          {"attempts", attempts}};
}

nlohmann::json loader_model_json(const LoaderModel& model) {
  return {{"kind", loader_kind_name(model.kind)},
          {"interpreter", model.interpreter},
          {"chosen_by", model.chosen_by},
          {"ld_so_cache", model.ld_so_cache ? nlohmann::json(model.ld_so_cache->string()) : nlohmann::json(nullptr)},
          {"default_dirs", model.default_dirs},
          {"default_dirs_source", model.default_dirs_source},
          {"reads_ldcache_note", model.reads_resolution_cache_note}};
}

nlohmann::json tree_json(const DependencyTree& tree) {
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& o : tree.objects)
    objects.push_back({{"path", o.path},
                       {"soname", o.info->soname ? nlohmann::json(*o.info->soname) : nlohmann::json(nullptr)},
                       {"depth", o.depth},
                       {"loader", o.loader ? nlohmann::json(*o.loader) : nlohmann::json(nullptr)}});
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& e : tree.edges) {
    auto j = resolution_json(e.resolution);
    j["from"] = e.from;
    j["to"] = e.to ? nlohmann::json(*e.to) : nlohmann::json(nullptr);
    j["dlopen"] = e.dlopen;
    if (e.dlopen) j["dlopen_reason"] = e.dlopen_reason;
    edges.push_back(j);
  }
  return {{"file", tree.objects.empty() ? "" : tree.objects[0].path},
          {"loader", loader_model_json(tree.loader)},
          {"all_found", tree.all_found()},
          {"objects", objects},
          {"edges", edges}};
}

}  // namespace runpatch
