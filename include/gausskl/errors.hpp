// The library's errors: what() reads "[op] what, where", and the parts an interface words
// differently (the kind, the op, the distribution, the hint) are data besides it.
//
// Every error the operations throw is a gausskl::Error and also an std::invalid_argument (bad
// input: InputError, OptionError, NotPositiveDefiniteError) or an std::runtime_error (resources:
// ResourceError, MemoryBudgetError), so either catch works.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gausskl/export.hpp"

namespace gausskl {

enum class ErrorKind {
  invalid_input,          // a value, a shape or a size breaks a rule
  option,                 // a field of Options out of range (OptionError)
  overflow,               // a size does not fit in int64
  not_positive_definite,  // a matrix whose Cholesky factorization fails
  memory_budget,          // Options::memory_budget too small (MemoryBudgetError)
  out_of_memory,          // an allocation failed
};

// "invalid_input", "option", "overflow", "not_positive_definite", "memory_budget",
// "out_of_memory".
GAUSSKL_API const char* error_kind_name(ErrorKind kind) noexcept;

// The hints the library's messages end with.
namespace hints {
// A matrix that is not positive definite.
inline constexpr const char* regularize =
    "to regularize, add eps to the diagonal only: C + eps * I";
// A packed_scale_tril diagonal entry that is not positive (it may hold log L_rr).
inline constexpr const char* log_diagonal = "for log L_rr on the diagonal, set log_diagonal";
}  // namespace hints

// What every error of the library carries besides what().
class GAUSSKL_API Error {
 public:
  virtual ~Error();
  // The operation's tag, as what() opens: "[op] ".
  const std::string& op() const noexcept { return op_; }
  ErrorKind kind() const noexcept { return kind_; }
  // The batch the error is about ("p" or "q") and the distribution's index in it, if the error
  // is about one distribution; else "" and -1.
  const std::string& side() const noexcept { return side_; }
  std::int64_t index() const noexcept { return index_; }
  // The advice what() ends with (e.g. hints::regularize), or "".
  const std::string& hint() const noexcept { return hint_; }
  // The option or parameter the hint says to set ("log_diagonal"), or "": hint() then ends with
  // "set " + hint_option(), for an interface that sets it otherwise ("pass --log-diagonal").
  const std::string& hint_option() const noexcept { return hint_option_; }

 protected:
  Error(ErrorKind kind, std::string op, std::string side = {}, std::int64_t index = -1,
        std::string hint = {}, std::string hint_option = {});

 private:
  ErrorKind kind_;
  std::string op_, side_;
  std::int64_t index_;
  std::string hint_, hint_option_;
};

// Bad input: what() is "[op] " + what, then "; " + hint if there is one.
class GAUSSKL_API InputError : public std::invalid_argument, public Error {
 public:
  InputError(ErrorKind kind, const std::string& op, const std::string& what, std::string side = {},
             std::int64_t index = -1, std::string hint = {}, std::string hint_option = {});
  ~InputError() override;

 protected:
  // what() given whole.
  struct Whole {};
  InputError(Whole, ErrorKind kind, const std::string& op, const std::string& what_text,
             std::string side = {}, std::int64_t index = -1, std::string hint = {});
};

// A lack of resources: what() is "[op] " + what.
class GAUSSKL_API ResourceError : public std::runtime_error, public Error {
 public:
  ResourceError(ErrorKind kind, const std::string& op, const std::string& what);
  ~ResourceError() override;
};

// A bad field of Options: what() reads "[op] options.NAME RULE, found VALUE"; option() is NAME
// ("tolerance"), rule() is RULE ("must be 0 (the default) or at most 1e-3").
class GAUSSKL_API OptionError : public InputError {
 public:
  OptionError(const std::string& op, std::string option, std::string rule,
              const std::string& found);
  ~OptionError() override;
  const std::string& option() const noexcept { return option_; }
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string option_, rule_;
};

// "[op] SIDE.scale (PARAM) is not positive definite at distribution INDEX: pivot PIVOT is VALUE
// (to regularize, ...)": the Cholesky factorization of distribution INDEX of SIDE failed at
// pivot PIVOT (0-based), whose value is given as text ("-0.5", or "not positive" when unknown).
class GAUSSKL_API NotPositiveDefiniteError : public InputError {
 public:
  NotPositiveDefiniteError(const std::string& op, const std::string& side, const std::string& param,
                           std::int64_t index, std::int64_t pivot, const std::string& value);
  ~NotPositiveDefiniteError() override;
  std::int64_t pivot() const noexcept { return pivot_; }

 private:
  std::int64_t pivot_;
};

// "[op] the memory budget (BUDGET) is too small: NEEDS", NEEDS saying what takes the memory
// ("the row-wise work takes 1.5 KiB").
class GAUSSKL_API MemoryBudgetError : public ResourceError {
 public:
  MemoryBudgetError(const std::string& op, std::int64_t budget, std::string needs);
  ~MemoryBudgetError() override;
  std::int64_t budget() const noexcept { return budget_; }
  const std::string& needs() const noexcept { return needs_; }

 private:
  std::int64_t budget_;
  std::string needs_;
};

}  // namespace gausskl
