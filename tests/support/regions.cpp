#include "regions.hpp"

#include <fmt/format.h>

#include <sstream>

#include "process.hpp"
#include "synthetic_elf.hpp"

namespace runpatch::test {

namespace {
uint64_t hex(const std::string& s) { return std::stoull(s, nullptr, 16); }
}  // namespace

std::vector<Region> editable_regions(const std::filesystem::path& original, bool string_table_grown) {
  std::vector<Region> regions;
  auto lines_of = [](const std::string& flags, const std::filesystem::path& f) {
    return run_command({"env", "LC_ALL=C", "readelf", flags, "-W", f.string()}).output;
  };
  struct Load {
    uint64_t off, vaddr, filesz;
  };
  std::vector<Load> loads;
  uint64_t phoff = 0, phnum = 0, phentsize = 0, ehsize = 0, shoff = 0, shnum = 0, shentsize = 0;
  {
    std::istringstream in(lines_of("-h", original));
    for (std::string line; std::getline(in, line);) {
      auto value = [&](const char* key) -> std::optional<uint64_t> {
        auto at = line.find(key);
        if (at == std::string::npos) return std::nullopt;
        return std::stoull(line.substr(line.find(':') + 1));
      };
      if (auto v = value("Start of program headers:")) phoff = *v;
      if (auto v = value("Number of program headers:")) phnum = *v;
      if (auto v = value("Size of program headers:")) phentsize = *v;
      if (auto v = value("Size of this header:")) ehsize = *v;
      if (auto v = value("Start of section headers:")) shoff = *v;
      if (auto v = value("Number of section headers:")) shnum = *v;
      if (auto v = value("Size of section headers:")) shentsize = *v;
    }
  }
  regions.push_back({0, ehsize, "ELF header"});
  // Updated where it is when no section is added (only tools read it).
  if (shoff) regions.push_back({shoff, shoff + shnum * shentsize, "section headers"});
  // One more entry may be added in place, over bytes moved out of its way.
  regions.push_back({phoff, phoff + (phnum + 1) * phentsize, "program headers"});
  {
    std::istringstream in(lines_of("-l", original));
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string type, off, vaddr, paddr, filesz;
      words >> type >> off >> vaddr >> paddr >> filesz;
      if (off.rfind("0x", 0) != 0) continue;
      if (type == "LOAD") loads.push_back({hex(off), hex(vaddr), hex(filesz)});
      if (type == "INTERP" || type == "DYNAMIC" || type == "NOTE")
        regions.push_back({hex(off), hex(off) + hex(filesz), type});
    }
  }
  {
    std::istringstream in(lines_of("-d", original));
    uint64_t strtab = 0, strsz = 0;
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string tag, name, value;
      words >> tag >> name >> value;
      if (name == "(STRTAB)") strtab = hex(value);
      if (name == "(STRSZ)") strsz = std::stoull(value);
    }
    for (const auto& l : loads) {
      if (strtab < l.vaddr || strtab >= l.vaddr + l.filesz) continue;
      regions.push_back({strtab - l.vaddr + l.off, strtab - l.vaddr + l.off + strsz, "dynamic strings"});
      // The tables after the table, moved up to the end of the segment's last page.
      uint64_t page_end = (l.off + l.filesz + 0xfff) / 0x1000 * 0x1000;
      if (string_table_grown) regions.push_back({strtab - l.vaddr + l.off + strsz, page_end, "grown string table"});
    }
  }
  {
    std::istringstream in(lines_of("-S", original));
    for (std::string line; std::getline(in, line);) {
      for (const char* type : {" SYMTAB ", " DYNSYM "}) {
        auto at = line.find(type);
        if (at == std::string::npos) continue;
        std::istringstream words(line.substr(at + std::string(type).size()));
        std::string addr, off, size;
        words >> addr >> off >> size;
        regions.push_back({hex(off), hex(off) + hex(size), type});
      }
    }
  }
  return regions;
}

std::string differences_outside(const std::filesystem::path& a, const std::filesystem::path& b,
                                const std::vector<Region>& regions) {
  auto before = read_file(a), after = read_file(b);
  std::string report;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    if (before[i] == after[i]) continue;
    bool allowed = false;
    for (const auto& r : regions) allowed = allowed || (i >= r.begin && i < r.end);
    if (!allowed) {
      report += fmt::format("byte {:#x} changed outside the edited regions\n", i);
      if (report.size() > 500) break;
    }
  }
  if (after.size() < before.size()) report += "file shrank\n";
  return report;
}

}  // namespace runpatch::test
