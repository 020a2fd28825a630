// trtutils::Error -> Python. kConfig (the seed's option-combination rules) is the seed's
// ValueError, text unchanged; every other code has its own subclass of TrtutilsError
// (a RuntimeError) that is also the matching built-in: InvalidArgumentError is a ValueError,
// FileError an OSError, MissingFileError a FileNotFoundError, NotSupportedError a
// NotImplementedError. The message is what() unchanged: one line, as the CLI prints it.
#include <memory>
#include <new>
#include <string_view>

#include "bindings.h"
#include "trtutils/status.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

struct ExceptionTypes {
  PyObject* base = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* not_supported = nullptr;
  PyObject* file = nullptr;
  PyObject* missing_file = nullptr;
  PyObject* out_of_range = nullptr;
  PyObject* internal = nullptr;
};

ExceptionTypes& types() {
  static ExceptionTypes t;  // the module keeps a reference to each: they live as long as it
  return t;
}

PyObject* add_type(py::module_& m, const char* name, const char* doc,
                   std::initializer_list<PyObject*> bases) {
  py::tuple b(bases.size());
  size_t i = 0;
  for (PyObject* base : bases) b[i++] = py::reinterpret_borrow<py::object>(base);
  const std::string qualified = std::string("trtutils.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, b.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.attr(name) = py::reinterpret_borrow<py::object>(type);
  return type;
}

// A file the call needed is missing: the library says so in these words (file_util.h,
// quantize.h), whatever the code it uses for it.
bool says_missing(std::string_view what) {
  return what.find("does not exist") != std::string_view::npos ||
         what.find("not found") != std::string_view::npos ||
         what.find("No such file") != std::string_view::npos;
}

PyObject* type_for(const Error& e) {
  const ExceptionTypes& t = types();
  const std::string_view what = e.what();
  switch (e.code()) {
    case ErrorCode::kConfig:
      return PyExc_ValueError;
    case ErrorCode::kInvalidArgument:
      return says_missing(what) ? t.missing_file : t.invalid_argument;
    case ErrorCode::kIO:
      return says_missing(what) ? t.missing_file : t.file;
    case ErrorCode::kNotSupported:
      return t.not_supported;
    case ErrorCode::kOutOfRange:
      return t.out_of_range;
    case ErrorCode::kInternal:
      return t.internal;
  }
  return t.base;
}

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Error& e) {
    PyErr_SetString(type_for(e), e.what());
  }
}

}  // namespace

void bind_errors(py::module_& m) {
  ExceptionTypes& t = types();
  t.base = add_type(m, "TrtutilsError", "An error reported by the trtutils library.",
                    {PyExc_RuntimeError});
  t.invalid_argument = add_type(m, "InvalidArgumentError",
                                "Bad input: arguments, shapes, dtypes, files that do not parse.",
                                {t.base, PyExc_ValueError});
  t.not_supported = add_type(m, "NotSupportedError",
                             "Valid input that this build cannot handle (an op, a dtype).",
                             {t.base, PyExc_NotImplementedError});
  t.file =
      add_type(m, "FileError", "A file could not be read or written.", {t.base, PyExc_OSError});
  t.missing_file = add_type(m, "MissingFileError", "A file the call needs does not exist.",
                            {t.file, PyExc_FileNotFoundError});
  t.out_of_range =
      add_type(m, "OutOfRangeError", "A size over a limit, an offset outside a buffer.", {t.base});
  t.internal = add_type(m, "InternalError", "A bug in trtutils.", {t.base});
  py::register_exception_translator(&translate);
}

}  // namespace trtutils::python
