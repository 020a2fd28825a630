// The C++ CLI in-process (`python -m trtutils ...`): the same parser, subcommands and messages
// as the trtutils executable; nothing is parsed in Python.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "run_cli.h"
#include "trtutils/file_util.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

int run(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"python -m trtutils"};  // usage lines name it
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return cli::run_cli(static_cast<int>(argv.size() - 1), argv.data());
}

}  // namespace

void bind_cli(py::module_& m) {
  m.def("run_cli", &run, py::arg("args"), py::call_guard<py::gil_scoped_release>(),
        "Runs `trtutils ARGS...` (without the program name) in this process; returns the exit "
        "code (0, 1 failure, 2 usage error or rejected option combination).");
  m.def("install_interrupt_cleanup", &install_interrupt_cleanup,
        "SIGINT / SIGTERM remove the temporary files being written, then end the process (for "
        "`python -m trtutils`, whose process is the command).");
}

}  // namespace trtutils::python
