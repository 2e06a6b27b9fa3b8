// --keys mean=mu,std=sigma: the names under which a file stores the arrays gausskl reads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gausskl::cli {

class Keys {
 public:
  Keys() = default;
  // "ARRAY=NAME[,ARRAY=NAME...]", ARRAY one of the contract's names (mean, std, ...), each
  // ARRAY and each NAME at most once. Throws std::invalid_argument with a message for CLI11
  // (no tag: it names the option) when the text breaks a rule.
  static Keys parse(std::string_view text);

  // The array a name in a file stands for: the ARRAY whose NAME it is; else the name itself
  // if it is a contract name not given another NAME; else none (the array is not read).
  std::optional<std::string> array_of(std::string_view written) const;
  // The name the file stores `array` under.
  std::string written_of(const std::string& array) const;
  // "mean=mu", for messages; empty when `array` keeps its own name.
  std::string mapping_of(const std::string& array) const;
  // The option the text came from (--keys, --p-keys or --q-keys), for messages.
  const std::string& flag() const { return flag_; }
  void set_flag(std::string flag) { flag_ = std::move(flag); }

 private:
  std::map<std::string, std::string> written_;  // array -> name in the file
  std::string flag_ = "--keys";
};

}  // namespace gausskl::cli
