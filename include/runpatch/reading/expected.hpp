// Errors are values: every fallible library call returns Expected<T>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace runpatch {

// What kind of problem an error is: callers and tests tell errors apart by
// code; Error::what says it in full, with the numbers (error_code_name names
// the code).
enum class ErrorCode : uint8_t {
  // The file and the system
  SystemCall,      // a system call failed (open, read, write, sync, rename, lock): errno's words in what
  NotRegularFile,  // a directory, device or empty file where a file is needed
  FileChanged,     // the file changed under the tool (shrank while copied, kept being replaced)
  // What the bytes say
  NotElf,     // no ELF magic, or an ELF class or byte order this reader does not know
  Malformed,  // a structure lies outside the file or contradicts another (offset: where)
  // What an edit needs
  NothingToEdit,   // the file lacks what the request edits: dynamic section, string table, PT_INTERP, symbols
  InvalidRequest,  // the request cannot be written as asked: a NUL in a string, an empty interpreter
  Unsupported,     // a valid file with a feature the editor does not edit (DT_MIPS_XHASH, DT_SYMTAB_SHNDX)
  // Refusals: no exact way to fit the edit (docs/editing.md §3)
  TooManyProgramHeaders,     // a new program header would need more than e_phnum holds
  ProgramHeadersCannotMove,  // the table must move, and the first PT_LOAD is not page-congruent
  HoleTooLarge,              // the new segment would need a hole of over 1 GiB in the file
  NoAddressSpace,            // no address space above the last segment
  NotOneWrite,               // a grouped edit (CommitGroup) that one write cannot commit
  ResolutionCacheExists,     // --build-resolution-cache: the note present differs from the new one
  VerificationFailed,        // the planned result failed the edit's own check: nothing was written
  // Input other than ELF files
  InvalidInput,  // a policy file, ld.so.cache, option value, map file or trace record not understood
  Usage,         // a command line the tool does not accept
  CannotTrace,   // a program `runpatch trace` cannot run under its audit library
};

std::string_view error_code_name(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string file;                // which file the problem is in ("" when none)
  std::string what;                // what is wrong, in words
  std::optional<uint64_t> offset;  // file offset the problem was found at, if any

  // "FILE: WHAT (at offset 0x...)" — the one line tools print.
  std::string message() const;
};

Error make_error(ErrorCode code, std::string file, std::string what, std::optional<uint64_t> offset = std::nullopt);

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return storage_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(storage_); }

 private:
  std::variant<T, Error> storage_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)) {}

  bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

using Status = Expected<void>;

}  // namespace runpatch

#define RUNPATCH_CONCAT_INNER(a, b) a##b
#define RUNPATCH_CONCAT(a, b) RUNPATCH_CONCAT_INNER(a, b)

// RUNPATCH_TRY(auto x, expr): binds the value of expr or returns its error.
#define RUNPATCH_TRY(decl, expr)                                                                          \
  auto RUNPATCH_CONCAT(runpatch_try_, __LINE__) = (expr);                                                 \
  if (!RUNPATCH_CONCAT(runpatch_try_, __LINE__)) return RUNPATCH_CONCAT(runpatch_try_, __LINE__).error(); \
  decl = std::move(*RUNPATCH_CONCAT(runpatch_try_, __LINE__))

// RUNPATCH_CHECK(expr): returns the error of a failed Status.
#define RUNPATCH_CHECK(expr)                                \
  do {                                                      \
    auto runpatch_status_ = (expr);                         \
    if (!runpatch_status_) return runpatch_status_.error(); \
  } while (0)
