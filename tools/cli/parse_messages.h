// The one-line messages of command-line errors (run_cli.cpp prints them): an unknown subcommand
// or flag names the closest known one ("did you mean ...?", by edit distance), and arguments that
// were not expected are listed in the order the user gave them (CLI11 2.1 lists them reversed).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace trtutils::cli {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring characters ("biuld" -> "build") count 1 each.
size_t edit_distance(std::string_view a, std::string_view b);

// The name in `names` closest to `word` (leading dashes ignored), if close enough: at most a third
// of the word's letters changed (at least 1; ties: a name the word begins, then the first in
// `names`), or else the only name
// that begins with the word; "" otherwise, and for a word under 3 letters ("-x": every short flag
// is one letter away).
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

// The message for `e`, thrown by app.parse(argc, argv). Where arguments were left unmatched
// (ExtrasError, or a RequiredError that a mistyped flag caused) they are reported instead:
// "unknown subcommand 'biuld' (did you mean 'build'?)", "unexpected arguments: --onxx (did you
// mean --onnx?) m.onnx". Other errors keep CLI11's message.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e, int argc,
                                const char* const* argv);

}  // namespace trtutils::cli
