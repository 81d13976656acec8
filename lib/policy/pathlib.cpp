#include "pathlib.hpp"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>

namespace runpatch::pathlib {

std::string normalize(const std::string& text) {
  std::string root;
  if (text.starts_with("//") && !text.starts_with("///"))
    root = "//";
  else if (text.starts_with("/"))
    root = "/";
  std::string out = root;
  size_t i = 0;
  while (i <= text.size()) {
    size_t end = text.find('/', i);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(i, end - i);
    if (!part.empty() && part != ".") {
      if (out.size() > root.size()) out += '/';
      out += part;
    }
    i = end + 1;
  }
  return out.empty() ? "." : out;
}

std::string join(const std::string& dir, const std::string& name) {
  if (name.starts_with("/")) return normalize(name);
  if (dir == ".") return normalize(name);
  return normalize(dir + "/" + name);
}

std::string name(const std::string& path) {
  std::string p = normalize(path);
  if (p == "." || p == "/" || p == "//") return "";
  return p.substr(p.rfind('/') + 1);
}

std::string parent(const std::string& path) {
  std::string p = normalize(path);
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (p == "/" || p == "//") return p;
  std::string head = p.substr(0, slash);
  if (head.empty() || head == "/") return p.starts_with("//") ? "//" : "/";
  return head;
}

bool is_absolute(const std::string& path) { return path.starts_with("/"); }

bool fnmatch(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), FNM_NOESCAPE) == 0;
}

namespace {

bool stat_is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool lstat_is_real_dir(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;  // pathlib ignores unreadable directories
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void walk(const std::string& dir, const std::string& pattern, bool recursive, std::vector<std::string>& out) {
  std::vector<std::string> names = entries(dir);
  for (const auto& n : names)
    if (fnmatch(pattern, n)) out.push_back(join(dir, n));
  if (!recursive) return;
  for (const auto& n : names) {
    std::string child = join(dir, n);
    if (lstat_is_real_dir(child)) walk(child, pattern, true, out);
  }
}

}  // namespace

std::vector<std::string> glob(const std::string& path, const std::string& pattern, bool recursive) {
  std::string p = normalize(path);
  std::vector<std::string> out;
  if (stat_is_dir(p))
    walk(p, pattern, recursive, out);
  else if (fnmatch(pattern, name(p)))
    out.push_back(p);
  return out;
}

}  // namespace runpatch::pathlib
