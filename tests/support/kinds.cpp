#include "support/kinds.hpp"

namespace gausskl::test {

std::string name(const Kind& k) {
  std::string s = divergence_name(k.kind);
  if (k.kind != Divergence::renyi) return s;
  // Appended piece by piece: "(" + ... + ")" trips GCC 12's -Wrestrict false positive here.
  s += '(';
  s += std::to_string(k.alpha).substr(0, 4);
  s += ')';
  return s;
}

std::vector<Kind> all_kinds() {
  return {{Divergence::kl},          {Divergence::jeffreys},     {Divergence::bhattacharyya},
          {Divergence::hellinger},   {Divergence::wasserstein2}, {Divergence::renyi, 0.5},
          {Divergence::renyi, 0.05}, {Divergence::renyi, 2.0}};
}

std::vector<Kind> kinds_but_kl() {
  std::vector<Kind> kinds = all_kinds();
  kinds.erase(kinds.begin());
  return kinds;
}

Options options_of(const Kind& k, std::int64_t memory_budget) {
  Options o;
  o.divergence = k.kind;
  o.alpha = k.alpha;
  o.memory_budget = memory_budget;
  return o;
}

std::pair<DiagBatch<double>, DiagBatch<double>> renyi3_infinite_pair() {
  const std::vector<double> mean(6, 0.0);
  return {DiagBatch<double>{2, 3, DiagParam::stddev, mean, {1, 1, 1, 1, 1, 2}},
          DiagBatch<double>{2, 3, DiagParam::stddev, mean, std::vector<double>(6, 1.0)}};
}

}  // namespace gausskl::test
