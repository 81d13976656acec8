#include "readelf_oracle.hpp"

#include <sstream>

#include "process.hpp"

namespace runpatch::test {

namespace {
// The text between the first '[' after `marker` and the matching last ']'.
std::optional<std::string> bracketed_after(const std::string& line, const std::string& marker) {
  auto at = line.find(marker);
  if (at == std::string::npos) return std::nullopt;
  auto open = line.find('[', at);
  auto close = line.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  return line.substr(open + 1, close - open - 1);
}
void keep_first(std::optional<std::string>& slot, std::optional<std::string> value) {
  if (!slot) slot = std::move(value);
}
}  // namespace

std::optional<OracleFacts> readelf_facts(const std::filesystem::path& file) {
  auto result = run_command({"env", "LC_ALL=C", "readelf", "-dlW", "--", file.string()});
  if (result.exit_code != 0) return std::nullopt;
  OracleFacts facts;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    if (auto at = line.find("[Requesting program interpreter: "); at != std::string::npos)
      facts.interpreter = line.substr(at + 33, line.rfind(']') - (at + 33));
    if (line.find("Dynamic section at offset") != std::string::npos) facts.has_dynamic = true;
    if (line.find("(NEEDED)") != std::string::npos) facts.needed.push_back(*bracketed_after(line, "Shared library:"));
    if (line.find("(RUNPATH)") != std::string::npos)
      keep_first(facts.runpath, bracketed_after(line, "Library runpath:"));
    if (line.find("(RPATH)") != std::string::npos) keep_first(facts.rpath, bracketed_after(line, "Library rpath:"));
    if (line.find("(SONAME)") != std::string::npos) keep_first(facts.soname, bracketed_after(line, "Library soname:"));
    if (auto at = line.find("(FLAGS_1)"); at != std::string::npos) {
      std::istringstream words(line.substr(line.find("Flags:", at) + 6));
      for (std::string w; words >> w;) facts.flags_1.push_back(w);
    }
  }
  return facts;
}

}  // namespace runpatch::test
