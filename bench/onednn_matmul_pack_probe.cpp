// oneDNN matmul on plain (ab) weights against weights reordered once into the primitive's own
// layout (format any): ViT-B/16's products at batch 1 (197 rows). The measurement behind
// "pre-packed weights" in bench/RESULTS.md (issue 36). Build and run:
//   g++ -O2 -std=c++17 bench/onednn_matmul_pack_probe.cpp -ldnnl -o /tmp/mm_probe
//   OMP_NUM_THREADS=2 /tmp/mm_probe
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dnnl.hpp>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
double run(engine& eng, stream& s, int M, int K, int N, bool any) {
  memory::desc a({M, K}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab),
      bias({1, N}, dt::f32, tag::ab);
  memory::desc bu({K, N}, dt::f32, tag::ab);
  memory::desc b = any ? memory::desc({K, N}, dt::f32, tag::any) : bu;
  matmul::desc d(a, b, bias, c);
  matmul::primitive_desc pd(d, eng);
  memory am(a, eng), cm(c, eng), biasm(bias, eng), bum(bu, eng), bm(pd.weights_desc(), eng);
  std::memset(am.get_data_handle(), 0, a.get_size());
  std::memset(bum.get_data_handle(), 0, bu.get_size());
  if (any)
    reorder(bum, bm).execute(s, bum, bm);
  else
    bm = bum;
  matmul mm(pd);
  std::vector<double> t;
  for (int i = 0; i < 30; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    mm.execute(
        s,
        {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_BIAS, biasm}, {DNNL_ARG_DST, cm}});
    s.wait();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  printf("%dx%dx%d %s %s %.3f ms\n", M, K, N, any ? "any" : "ab ", pd.impl_info_str(),
         t[t.size() / 2]);
  return t[t.size() / 2];
}
int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  for (int rep = 0; rep < 2; ++rep) {
    run(eng, s, 197, 768, 3072, false);
    run(eng, s, 197, 768, 3072, true);
    run(eng, s, 197, 3072, 768, false);
    run(eng, s, 197, 3072, 768, true);
    run(eng, s, 197, 768, 2304, false);
    run(eng, s, 197, 768, 2304, true);
  }
}
