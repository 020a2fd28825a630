// Command-line error messages with suggestions (see parse_messages.h).
#include "parse_messages.h"

#include <algorithm>
#include <map>

namespace trtutils::cli {

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: the distance between a[0, i) and b[0, j).
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

namespace {

std::string_view without_dashes(std::string_view s) {
  return s.substr(std::min(s.find_first_not_of('-'), s.size()));
}

bool begins(std::string_view name, std::string_view word) {
  return name.substr(0, word.size()) == word;
}

// An argument as the message shows it: quoted when empty or holding a blank, so that the list
// reads as the arguments given.
std::string shown(const std::string& arg) {
  return arg.empty() || arg.find_first_of(" \t") != std::string::npos ? "'" + arg + "'" : arg;
}

// Every flag spelling of `app` and of the subcommands it parsed ("--onnx", "-v", ...).
void collect_flag_names(const CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands()) collect_flag_names(*sub, names);
}

// The arguments nobody matched, in the order of argv (CLI11 keeps them per subcommand).
std::vector<std::string> unmatched_in_order(const CLI::App& app, int argc,
                                            const char* const* argv) {
  std::map<std::string, int> left;
  for (const auto& a : app.remaining(/*recurse=*/true)) ++left[a];
  std::vector<std::string> ordered;
  for (int i = 1; i < argc; ++i) {
    const auto it = left.find(argv[i]);
    if (it == left.end() || it->second == 0) continue;
    --it->second;
    ordered.emplace_back(argv[i]);
  }
  for (const auto& [a, n] : left) ordered.insert(ordered.end(), static_cast<size_t>(n), a);
  return ordered;
}

std::string unknown_subcommand(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string near = closest_name(word, names);
  return "unknown subcommand '" + word + "'" +
         (near.empty() ? "" : " (did you mean '" + near + "'?)");
}

std::string unexpected_arguments(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  collect_flag_names(app, flags);
  std::string list;
  for (const auto& a : args) {
    list += (list.empty() ? "" : " ") + shown(a);
    if (a.size() < 2 || a[0] != '-') continue;
    const std::string name = a.substr(0, a.find('='));
    const std::string near = closest_name(name, flags);
    // near == name: a known flag left over, e.g. one after `--`.
    if (!near.empty() && near != name) list += " (did you mean " + near + "?)";
  }
  return (args.size() == 1 ? "unexpected argument: " : "unexpected arguments: ") + list;
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  const std::string_view w = without_dashes(word);
  if (w.size() < 3) return "";
  const size_t limit = std::max<size_t>(1, w.size() / 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const auto& n : names) {
    const std::string_view name = without_dashes(n);
    const size_t gap = w.size() > name.size() ? w.size() - name.size() : name.size() - w.size();
    if (gap > limit) continue;  // at least `gap` edits apart (and a huge argument costs nothing)
    const size_t d = edit_distance(w, name);
    // A tie goes to a name the word begins: "build_d" -> build_dla, not build.
    if (d < best_d || (d == best_d && begins(name, w) && !begins(without_dashes(best), w)))
      best = n, best_d = d;
  }
  if (!best.empty()) return best;
  // Else a unique name the word begins ("bench" -> "benchmark").
  for (const auto& n : names) {
    if (!begins(without_dashes(n), w)) continue;
    if (!best.empty() && best != n) return "";
    best = n;
  }
  return best;
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e, int argc,
                                const char* const* argv) {
  const bool extras_caused_it = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr ||
                                dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
  const std::vector<std::string> args =
      extras_caused_it ? unmatched_in_order(app, argc, argv) : std::vector<std::string>{};
  if (args.empty()) return e.what();
  if (app.get_subcommands().empty()) {
    const auto word = std::find_if(args.begin(), args.end(),
                                   [](const std::string& a) { return a.empty() || a[0] != '-'; });
    if (word != args.end()) return unknown_subcommand(app, *word);
  }
  return unexpected_arguments(app, args);
}

}  // namespace trtutils::cli
