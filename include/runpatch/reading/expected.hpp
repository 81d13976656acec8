// Errors are values: every fallible library call returns Expected<T>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace runpatch {

struct Error {
  std::string file;                // which file the problem is in ("" when none)
  std::string what;                // what is wrong, in words
  std::optional<uint64_t> offset;  // file offset the problem was found at, if any

  // "FILE: WHAT (at offset 0x...)" — the one line tools print.
  std::string message() const;
};

Error make_error(std::string file, std::string what, std::optional<uint64_t> offset = std::nullopt);

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
