// UTF-8 as reports need it: ELF strings and paths are bytes, and a report
// (XML, Python's repr) must say which of them are not text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace runpatch {

// The length of the well-formed UTF-8 sequence starting at text[at] (1 for
// ASCII), or 0 where none starts (a stray continuation byte, an overlong form,
// a surrogate, past U+10FFFF, cut short).
size_t utf8_sequence_length(std::string_view text, size_t at);

// How many characters a well-formed UTF-8 text holds.
size_t utf8_characters(std::string_view text);

// Text for a terminal or a CI log, as `ls -b` quotes names: control
// characters (a newline that would forge a line, an ESC that would colour the
// log) and the backslash become C escapes (\n, \t, \r, \\, \xHH); every other
// byte is left as it is.
std::string escape_controls(std::string_view text);

// Text that is always UTF-8 and loses nothing: a byte that is not part of a
// well-formed UTF-8 sequence becomes \xHH and the backslash \\, so that
// x\xff and x\xfe stay apart (JSON reports; the XML ones escape so too).
std::string lossless_text(std::string_view text);

// Appends the byte as \xHH (lower-case hex): the escape both escape_controls
// and the XML reports write for a byte they cannot show.
void append_byte_escape(std::string& out, unsigned char byte);

}  // namespace runpatch
