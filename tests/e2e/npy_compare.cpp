// npy_compare: compares two .npy files (ACTUAL against REFERENCE) and prints
//   max_abs_err  = max |a - b|
//   max_rel_err  = max |a - b| / max |b|   (relative to the reference's largest magnitude, not
//                                           element-wise: near-zero logits would dominate that)
//   cosine       = <a, b> / (|a| |b|)
// Exit 0 when max_rel_err <= --rtol (default 1e-4) and shapes match and neither side has a NaN
// the other lacks; 1 over tolerance or on mismatch; 2 on bad usage or unreadable files.
//
//   npy_compare ACTUAL.npy REFERENCE.npy [--rtol X] [--name LABEL]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trtutils/npy.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

int main(int argc, char** argv) {
  std::string actual_path, ref_path, label;
  double rtol = 1e-4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--rtol" || a == "--name") && i + 1 < argc) {
      if (a == "--rtol")
        rtol = std::atof(argv[++i]);
      else
        label = argv[++i];
    } else if (actual_path.empty()) {
      actual_path = a;
    } else if (ref_path.empty()) {
      ref_path = a;
    } else {
      std::fprintf(stderr, "usage: npy_compare ACTUAL.npy REFERENCE.npy [--rtol X] [--name L]\n");
      return 2;
    }
  }
  if (ref_path.empty()) {
    std::fprintf(stderr, "usage: npy_compare ACTUAL.npy REFERENCE.npy [--rtol X] [--name L]\n");
    return 2;
  }
  if (label.empty()) label = actual_path;
  trtutils::Tensor a, b;
  try {
    a = trtutils::npy_load(actual_path);
    b = trtutils::npy_load(ref_path);
  } catch (const trtutils::Error& e) {
    std::fprintf(stderr, "npy_compare: %s\n", e.what());
    return 2;
  }
  if (a.shape() != b.shape()) {
    std::printf("%s: FAIL shape %s vs reference %s\n", label.c_str(),
                trtutils::shape_str(a.shape()).c_str(), trtutils::shape_str(b.shape()).c_str());
    return 1;
  }
  double max_abs = 0, max_ref = 0, dot = 0, na = 0, nb = 0;
  int64_t nan_mismatch = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = a.at_double(i), y = b.at_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) ++nan_mismatch;
      continue;
    }
    max_abs = std::max(max_abs, std::fabs(x - y));
    max_ref = std::max(max_ref, std::fabs(y));
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  const double rel = max_ref > 0 ? max_abs / max_ref : (max_abs > 0 ? INFINITY : 0.0);
  const double cosine = (na > 0 && nb > 0) ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  const bool ok = nan_mismatch == 0 && rel <= rtol;
  std::printf(
      "%s: %s shape %s dtype %s/%s max_abs_err %.3e max|ref| %.3e max_rel_err %.3e "
      "(max|a-b|/max|ref|, tolerance %.1e) cosine %.9f nan_mismatch %lld\n",
      label.c_str(), ok ? "OK" : "FAIL", trtutils::shape_str(b.shape()).c_str(),
      std::string(trtutils::dtype_name(a.dtype())).c_str(),
      std::string(trtutils::dtype_name(b.dtype())).c_str(), max_abs, max_ref, rel, rtol, cosine,
      static_cast<long long>(nan_mismatch));
  return ok ? 0 : 1;
}
