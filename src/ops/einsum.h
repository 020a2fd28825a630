// Einsum's equation, parsed once for the schema and the CPU kernel: each operand's letters (an
// ellipsis expanded into the broadcast dimensions it stands for) and the output's letters
// (explicit after "->", else the letters used once, in alphabetical order, after the ellipsis).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::ops::einsum {

struct Equation {
  std::vector<std::string> inputs;  // per operand, one character per dimension
  std::string output;
};

// ranks: each operand's rank. Ellipsis dimensions become the characters '0', '1', ... (aligned
// to the right, numpy-style). Throws Error(kInvalidArgument) naming the node for a malformed
// equation or a rank that does not fit it.
Equation parse(const ir::Node& node, const std::vector<size_t>& ranks);

// Each letter's size over the operands' shapes (a size-1 dimension broadcasts to the others);
// Error(kInvalidArgument) naming the node when two sizes disagree.
std::map<char, int64_t> letter_sizes(const ir::Node& node, const Equation& e,
                                     const std::vector<Shape>& shapes);

}  // namespace trtutils::ops::einsum
