// GPTQ weight rounding (see qdq.h): blocked Cholesky factors in float32 with oneDNN's sgemm for
// the large products, as the reference implementation does on the GPU.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "core/check.h"
#include "quantize/qdq.h"

namespace trtutils::quantize {

namespace {

constexpr int64_t kBlock = 128;

void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  TRT_CHECK(st == dnnl_success, ErrorCode::kInternal, "gptq: sgemm failed ({})",
            static_cast<int>(st));
}

// In-place lower Cholesky factor of the k x k row-major matrix a (upper part zeroed); false when
// a pivot is not positive.
bool cholesky_lower(std::vector<float>& a, int64_t k) {
  for (int64_t j0 = 0; j0 < k; j0 += kBlock) {
    const int64_t jb = std::min(kBlock, k - j0);
    // A[j0:, j0:j0+jb] -= L[j0:, :j0] L[j0:j0+jb, :j0]^T
    if (j0 > 0)
      sgemm('N', 'T', k - j0, jb, j0, -1.0f, &a[j0 * k], k, &a[j0 * k], k, 1.0f, &a[j0 * k + j0],
            k);
    // The diagonal block, unblocked in double.
    for (int64_t i = 0; i < jb; ++i) {
      float* ri = &a[(j0 + i) * k + j0];
      for (int64_t j = 0; j <= i; ++j) {
        const float* rj = &a[(j0 + j) * k + j0];
        double s = ri[j];
        for (int64_t p = 0; p < j; ++p) s -= static_cast<double>(ri[p]) * rj[p];
        if (i == j) {
          if (!(s > 0) || !std::isfinite(s)) return false;
          ri[j] = static_cast<float>(std::sqrt(s));
        } else {
          ri[j] = static_cast<float>(s / rj[j]);
        }
      }
    }
    // The panel below: rows solve X Ld^T = A.
    const float* ld = &a[j0 * k + j0];
#pragma omp parallel for schedule(static)
    for (int64_t r = j0 + jb; r < k; ++r) {
      float* x = &a[r * k + j0];
      for (int64_t j = 0; j < jb; ++j) {
        double s = x[j];
        for (int64_t p = 0; p < j; ++p) s -= static_cast<double>(x[p]) * ld[j * k + p];
        x[j] = static_cast<float>(s / ld[j * k + j]);
      }
    }
  }
  for (int64_t i = 0; i < k; ++i) std::fill(a.data() + i * k + i + 1, a.data() + (i + 1) * k, 0.0f);
  return true;
}

// The inverse of a lower-triangular k x k matrix, block row by block row:
// Linv[i, :i] = -inv(L[i, i]) (L[i, :i] Linv[:i, :i]).
std::vector<float> lower_inverse(const std::vector<float>& l, int64_t k) {
  std::vector<float> inv(static_cast<size_t>(k * k), 0.0f);
  std::vector<float> d, t;
  for (int64_t i0 = 0; i0 < k; i0 += kBlock) {
    const int64_t ib = std::min(kBlock, k - i0);
    d.assign(static_cast<size_t>(ib * ib), 0.0f);  // inverse of the diagonal block
    for (int64_t c = 0; c < ib; ++c)
      for (int64_t r = c; r < ib; ++r) {
        double s = r == c ? 1.0 : 0.0;
        for (int64_t p = c; p < r; ++p)
          s -= static_cast<double>(l[(i0 + r) * k + i0 + p]) * d[p * ib + c];
        d[r * ib + c] = static_cast<float>(s / l[(i0 + r) * k + i0 + r]);
      }
    if (i0 > 0) {
      t.assign(static_cast<size_t>(ib * i0), 0.0f);
      sgemm('N', 'N', ib, i0, i0, 1.0f, &l[i0 * k], k, inv.data(), k, 0.0f, t.data(), i0);
      sgemm('N', 'N', ib, i0, ib, -1.0f, d.data(), ib, t.data(), i0, 0.0f, &inv[i0 * k], k);
    }
    for (int64_t r = 0; r < ib; ++r)
      std::copy(d.data() + r * ib, d.data() + r * ib + r + 1, inv.data() + (i0 + r) * k + i0);
  }
  return inv;
}

// U upper triangular with H^{-1} = U^T U (GPTQ's "Cholesky of the inverse"), for the Hessian
// h already permuted: with P the index reversal, P H P = L L^T gives U = P L^{-1} P.
std::optional<std::vector<float>> inverse_cholesky_upper(const std::vector<float>& h, int64_t k) {
  std::vector<float> a(static_cast<size_t>(k * k));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) a[i * k + j] = h[(k - 1 - i) * k + (k - 1 - j)];
  if (!cholesky_lower(a, k)) return std::nullopt;
  const std::vector<float> linv = lower_inverse(a, k);
  std::vector<float> u(static_cast<size_t>(k * k));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) u[i * k + j] = linv[(k - 1 - i) * k + (k - 1 - j)];
  for (float v : u)
    if (!std::isfinite(v)) return std::nullopt;
  return u;
}

}  // namespace

std::vector<float> gptq_round(const std::vector<float>& w, int64_t n, int64_t k,
                              const std::vector<float>& hessian, const GridRound& round,
                              double damp) {
  TRT_CHECK(
      static_cast<int64_t>(w.size()) == n * k && static_cast<int64_t>(hessian.size()) == k * k,
      ErrorCode::kInternal, "gptq: {} weights for [{}, {}], Hessian of {} values", w.size(), n, k,
      hessian.size());
  auto nearest = [&] {
    std::vector<float> q(w.size());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) q[r * k + c] = round(w[r * k + c], r, c);
    return q;
  };
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) mean_diag += hessian[i * k + i];
  mean_diag /= static_cast<double>(std::max<int64_t>(k, 1));
  if (!(mean_diag > 0) || !std::isfinite(mean_diag)) return nearest();

  // Act order: the columns with the largest inputs first, while most columns can still absorb
  // their error. A column whose input is always zero (diagonal 0) gets diagonal 1: its rounding
  // error then costs nothing and is not propagated.
  std::vector<int64_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return hessian[a * k + a] > hessian[b * k + b]; });
  std::vector<float> hp(static_cast<size_t>(k * k));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) hp[i * k + j] = hessian[perm[i] * k + perm[j]];
  for (int64_t i = 0; i < k; ++i)
    if (!(hp[i * k + i] > 0)) {
      for (int64_t j = 0; j < k; ++j) hp[i * k + j] = hp[j * k + i] = 0.0f;
      hp[i * k + i] = 1.0f;
    }
  std::optional<std::vector<float>> u;
  for (int attempt = 0; attempt < 4 && !u; ++attempt, damp *= 10) {
    std::vector<float> hd = hp;
    for (int64_t i = 0; i < k; ++i) hd[i * k + i] += static_cast<float>(damp * mean_diag);
    u = inverse_cholesky_upper(hd, k);
  }
  if (!u) return nearest();

  std::vector<float> wp(w.size()), q(w.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < k; ++i) wp[r * k + i] = w[r * k + perm[i]];
  std::vector<float> err;
  for (int64_t i1 = 0; i1 < k; i1 += kBlock) {
    const int64_t i2 = std::min(k, i1 + kBlock), bw = i2 - i1;
    err.assign(static_cast<size_t>(n * bw), 0.0f);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      float* x = &wp[r * k];
      for (int64_t i = i1; i < i2; ++i) {
        const float v = round(x[i], r, perm[i]);
        q[r * k + i] = v;
        const float e = (x[i] - v) / (*u)[i * k + i];
        const float* ui = &(*u)[i * k];
        for (int64_t j = i + 1; j < i2; ++j) x[j] -= e * ui[j];
        err[r * bw + (i - i1)] = e;
      }
    }
    // The columns after the block absorb its errors: W[:, i2:] -= Err U[i1:i2, i2:].
    if (i2 < k)
      sgemm('N', 'N', n, k - i2, bw, -1.0f, err.data(), bw, &(*u)[i1 * k + i2], k, 1.0f, &wp[i2],
            k);
  }
  std::vector<float> out(w.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < k; ++i) out[r * k + perm[i]] = q[r * k + i];
  return out;
}

}  // namespace trtutils::quantize
