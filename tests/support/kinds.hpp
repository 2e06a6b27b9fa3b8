// The divergences the tests run over: a kind and, for renyi, its order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gausskl/types.hpp"
#include "support/batches.hpp"

namespace gausskl::test {

struct Kind {
  Divergence kind;
  double alpha = 0;
};

std::string name(const Kind& k);  // e.g. "jeffreys", "renyi(0.50)"

// Every kind, kl first; renyi with orders below and above 1.
std::vector<Kind> all_kinds();
// all_kinds() but kl.
std::vector<Kind> kinds_but_kl();

Options options_of(const Kind& k, std::int64_t memory_budget = 0);

// p and q of 2 rows, D = 3, means 0 and standard deviations 1 but p's row 1 has 2 in dimension 2:
// 3 v_q - 2 v_p = 3 - 2 * 4 < 0 there, so renyi of order 3 is infinite for p row 1 against any q
// row.
std::pair<DiagBatch<double>, DiagBatch<double>> renyi3_infinite_pair();

}  // namespace gausskl::test
