// Einsum: the equation parser (einsum.h) and the schema (dtype of the operands; the output shape
// from the letters' sizes where the input shapes are known).
#include "ops/einsum.h"

#include <algorithm>
#include <map>

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops::einsum {
namespace {

std::string strip_spaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

// How many dimensions the term's "..." stands for in an operand of `rank`.
size_t ellipsis_dims(const std::string& term, size_t rank) {
  const size_t dots = term.find("...");
  return dots == std::string::npos || term.size() - 3 > rank ? 0 : rank - (term.size() - 3);
}

// One term with "..." replaced by characters '0'.. (right-aligned: with ell_max dimensions in
// all, an operand's k-th of n is '0' + ell_max - n + k).
std::string expand(const ir::Node& node, const std::string& term, size_t rank, size_t ell_max) {
  const size_t dots = term.find("...");
  const size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
  TRT_CHECK_ARG(dots != std::string::npos ? letters <= rank : letters == rank,
                "{}: term '{}' does not fit an operand of rank {}", node.describe(), term, rank);
  for (size_t i = 0; i < term.size(); ++i)
    TRT_CHECK_ARG(std::isalpha(static_cast<unsigned char>(term[i])) ||
                      (dots != std::string::npos && i >= dots && i < dots + 3),
                  "{}: equation character '{}' (letters and one ellipsis only)", node.describe(),
                  term[i]);
  if (dots == std::string::npos) return term;
  const size_t n = rank - letters;
  std::string e;
  for (size_t k = 0; k < n; ++k) e.push_back(static_cast<char>('0' + (ell_max - n + k)));
  return term.substr(0, dots) + e + term.substr(dots + 3);
}

}  // namespace

std::map<char, int64_t> letter_sizes(const ir::Node& node, const Equation& e,
                                     const std::vector<Shape>& shapes) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < e.inputs.size(); ++i)
    for (size_t d = 0; d < e.inputs[i].size(); ++d) {
      const int64_t n = shapes[i][d];
      auto [it, fresh] = size.emplace(e.inputs[i][d], n);
      if (fresh || it->second == n || n == 1) continue;
      TRT_CHECK_ARG(it->second == 1, "{}: letter '{}' has sizes {} and {}", node.describe(),
                    e.inputs[i][d], it->second, n);
      it->second = n;
    }
  return size;
}

Equation parse(const ir::Node& node, const std::vector<size_t>& ranks) {
  const std::string eq = strip_spaces(node.attr_string("equation", ""));
  TRT_CHECK_ARG(!eq.empty(), "{}: the equation attribute is missing", node.describe());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  TRT_CHECK_ARG(terms.size() == ranks.size(), "{}: the equation has {} operands, the node {}",
                node.describe(), terms.size(), ranks.size());
  Equation e;
  size_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) ell = std::max(ell, ellipsis_dims(terms[i], ranks[i]));
  TRT_CHECK_ARG(ell <= 10, "{}: at most 10 ellipsis dimensions", node.describe());
  for (size_t i = 0; i < terms.size(); ++i)
    e.inputs.push_back(expand(node, terms[i], ranks[i], ell));
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    const bool dots = rhs.find("...") != std::string::npos;
    e.output = expand(node, rhs, dots ? ell + rhs.size() - 3 : rhs.size(), ell);
    for (char c : e.output) {
      bool used = false;
      for (const auto& t : e.inputs) used = used || t.find(c) != std::string::npos;
      TRT_CHECK_ARG(used, "{}: output letter '{}' is not in any operand", node.describe(), c);
    }
  } else {  // implicit: ellipsis dims, then the letters used once, alphabetically
    std::map<char, int> count;
    for (const auto& t : e.inputs)
      for (char c : t) ++count[c];
    for (size_t k = 0; k < ell; ++k) e.output.push_back(static_cast<char>('0' + k));
    for (const auto& [c, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c))) e.output.push_back(c);
  }
  return e;
}

namespace {

void infer_einsum(InferContext& ctx) {
  std::vector<size_t> ranks;
  bool known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const auto& s = ctx.input_shape(i);
    known = known && s.has_value();
    ranks.push_back(s ? s->size() : 0);
  }
  const DataType dt = ctx.input_dtype(0);
  if (!known) return ctx.set_output(0, dt, std::nullopt);
  const Equation e = parse(ctx.node, ranks);
  std::map<char, ir::Dim> dims;
  for (size_t i = 0; i < e.inputs.size(); ++i)
    for (size_t d = 0; d < e.inputs[i].size(); ++d) {
      const ir::Dim& v = (*ctx.input_shape(i))[d];
      auto [it, fresh] = dims.emplace(e.inputs[i][d], v);
      if (!fresh && it->second.is_static() && it->second.value == 1) it->second = v;
    }
  ir::SymShape out;
  for (char c : e.output) out.push_back(dims.at(c));
  ctx.set_output(0, dt, out);
}

}  // namespace
}  // namespace trtutils::ops::einsum

namespace trtutils::ops {
void register_einsum_op(OpRegistry& r) {
  r.add({"Einsum", "", einsum::infer_einsum});
}
}  // namespace trtutils::ops
