// Assertions the input-rule tests share.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gausskl::test {

// call() throws std::invalid_argument whose message contains every one of parts.
inline void expect_invalid(const std::function<void()>& call,
                           const std::vector<std::string>& parts) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one mentioning " << parts.front();
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

}  // namespace gausskl::test
