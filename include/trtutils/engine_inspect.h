// An engine's description as JSON: what `trtutils inspect --json` prints and the Python
// `trtutils.inspect_engine` returns (one implementation, so the two cannot drift apart).
//
// Keys: "engine" (the path it was loaded from), "trtutils_version" (this library),
// "engine_format_version" (of the file), "engine_producer" ("trtutils <version>" that wrote it),
// "backend", "target_sm", "strongly_typed", "weight_bytes", "activation_arena_bytes",
// "inputs" / "outputs" ([{name, dtype, shape, format, min, opt, max}]), "layers_per_precision"
// ({precision: count}), "layers" ([{index, name, op, precision, device, kernel, tactic, inputs,
// outputs, input_shapes, output_shapes}]) and "build" (Engine::info_json()).
#pragma once

#include <string>

#include "trtutils/engine.h"

namespace trtutils {

// The JSON text (indented by 2; invalid UTF-8 in names replaced, never an exception).
std::string engine_inspect_json(const Engine& engine);

// This library's version, e.g. "0.1.0".
const char* library_version();

}  // namespace trtutils
