// Log lines and progress bars through Python's sys.stderr (trtutils/console.h), so that they
// show in a Jupyter cell (whose sys.stderr is the kernel's stream, not file descriptor 2) and
// follow contextlib.redirect_stderr. The sink takes the GIL itself: it is called from threads
// that run with the GIL released (build, calibration). Before the interpreter finalizes,
// trtutils/__init__.py's atexit hook puts stderr back.
#include "trtutils/console.h"

#include <cstdio>
#include <string>

#include "bindings.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

void write_to_sys_stderr(std::string_view text) {
  if (!Py_IsInitialized()) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    return;
  }
  py::gil_scoped_acquire gil;
  PyObject* err = PySys_GetObject("stderr");  // borrowed
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  bool ok = err != nullptr && err != Py_None && s != nullptr;
  if (ok) {
    PyObject* r = PyObject_CallMethod(err, "write", "O", s);
    ok = r != nullptr;
    Py_XDECREF(r);
    if (ok) Py_XDECREF(PyObject_CallMethod(err, "flush", nullptr));
  }
  Py_XDECREF(s);
  if (PyErr_Occurred()) PyErr_Clear();  // a closed or broken sys.stderr: never raise from here
  if (!ok) std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace

void bind_console(py::module_& m) {
  m.def(
      "_console_to_python",
      [](bool terminal) {
        set_console_sink(ConsoleSink{write_to_sys_stderr, terminal});
      },
      py::arg("terminal"),
      "Route log lines and progress to sys.stderr; terminal: redraw progress bars in place.");
  m.def(
      "_console_to_stderr", [] { set_console_sink(std::nullopt); },
      "Back to file descriptor 2 (at exit).");
}

}  // namespace trtutils::python
