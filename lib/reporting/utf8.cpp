#include "runpatch/reporting/utf8.hpp"

#include <algorithm>

namespace runpatch {

size_t utf8_sequence_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  if (at >= text.size()) return 0;
  unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t n = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 && lead < 0xf0 ? 3 : lead >= 0xc2 && lead < 0xe0 ? 2 : 0;
  if (n == 0 || at + n > text.size()) return 0;
  for (size_t i = 1; i < n; ++i)
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
  // Overlong three- and four-byte forms, UTF-16 surrogates, beyond U+10FFFF.
  if ((lead == 0xe0 && byte(at + 1) < 0xa0) || (lead == 0xed && byte(at + 1) >= 0xa0) ||
      (lead == 0xf0 && byte(at + 1) < 0x90) || (lead == 0xf4 && byte(at + 1) >= 0x90))
    return 0;
  return n;
}

size_t utf8_characters(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

void append_byte_escape(std::string& out, unsigned char byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xf];
}

std::string lossless_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    size_t n = utf8_sequence_length(text, at);
    if (n == 0) {
      append_byte_escape(out, static_cast<unsigned char>(text[at++]));
      continue;
    }
    if (text[at] == '\\') out += '\\';
    out.append(text, at, n);
    at += n;
  }
  return out;
}

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      case '\\': out += "\\\\"; continue;
      default: break;
    }
    if (byte < 0x20 || byte == 0x7f) {
      append_byte_escape(out, byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace runpatch
