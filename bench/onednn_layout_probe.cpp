// oneDNN convolutions on channels-last (nhwc) against blocked (nChw16c) activations, cold memory
// (4 buffer sets rotated, so each call reads and writes memory outside the caches, as a layer of a
// model does): the measurement behind the CPU plan's blocked layout
// (passes/conv_blocked_layout.cpp, bench/RESULTS.md issue 36). MobileNetV2 / EfficientNet-B0 /
// ResNet-50 layer shapes. Build and run (Debian's libdnnl-dev):
//   g++ -O2 -std=c++17 bench/onednn_layout_probe.cpp -ldnnl -o /tmp/layout_probe
//   OMP_NUM_THREADS=2 /tmp/layout_probe 8        # batch 8 (default 1)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Layer {
  int ic, oc, hw, k, stride, groups;
  bool residual;
};

double median_ms(engine& eng, stream& s, int mb, const Layer& l, tag fmt) {
  const int pad = l.k / 2, ohw = (l.hw + 2 * pad - l.k) / l.stride + 1;
  const auto smd = memory::desc({mb, l.ic, l.hw, l.hw}, dt::f32, fmt);
  const auto dmd = memory::desc({mb, l.oc, ohw, ohw}, dt::f32, fmt);
  const memory::dims w = l.groups > 1
                             ? memory::dims{l.groups, l.oc / l.groups, l.ic / l.groups, l.k, l.k}
                             : memory::dims{l.oc, l.ic, l.k, l.k};
  const auto wmd = memory::desc(w, dt::f32, tag::any);
  const auto bmd = memory::desc({l.oc}, dt::f32, tag::a);
  post_ops po;
  if (l.residual)
    po.append_sum(1.f);
  else
    po.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f);
  primitive_attr attr;
  attr.set_post_ops(po);
  const auto d =
      convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, smd,
                                wmd, bmd, dmd, {l.stride, l.stride}, {pad, pad}, {pad, pad});
  const auto pd = convolution_forward::primitive_desc(d, attr, eng);
  constexpr int kSets = 4;
  std::vector<memory> src, dst;
  for (int i = 0; i < kSets; ++i) {
    src.emplace_back(smd, eng);
    dst.emplace_back(dmd, eng);
    std::memset(src.back().get_data_handle(), 0, smd.get_size());
    std::memset(dst.back().get_data_handle(), 0, dmd.get_size());
  }
  memory wm(pd.weights_desc(), eng), bm(bmd, eng);
  auto conv = convolution_forward(pd);
  std::vector<double> t;
  for (int i = 0; i < 60; ++i) {
    const auto a = std::chrono::steady_clock::now();
    conv.execute(s, {{DNNL_ARG_SRC, src[i % kSets]},
                     {DNNL_ARG_WEIGHTS, wm},
                     {DNNL_ARG_BIAS, bm},
                     {DNNL_ARG_DST, dst[i % kSets]}});
    s.wait();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const int mb = argc > 1 ? std::atoi(argv[1]) : 1;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const Layer layers[] = {{16, 96, 112, 1, 1, 1, false},    {96, 96, 112, 3, 2, 96, false},
                          {144, 144, 56, 3, 1, 144, false}, {144, 24, 56, 1, 1, 1, true},
                          {96, 24, 56, 1, 1, 1, false},     {24, 144, 56, 1, 1, 1, false},
                          {240, 240, 28, 5, 1, 240, false}, {240, 40, 28, 1, 1, 1, true},
                          {64, 64, 56, 3, 1, 1, false},     {256, 64, 56, 1, 1, 1, false},
                          {64, 256, 56, 1, 1, 1, true},     {512, 128, 28, 1, 1, 1, false},
                          {256, 256, 14, 3, 1, 1, false},   {2048, 512, 7, 1, 1, 1, false}};
  std::printf("batch %d: median ms, nhwc / nChw16c\n", mb);
  for (const Layer& l : layers)
    std::printf("ic %4d oc %4d %3dpx k%d s%d g%-4d %s  %7.3f  %7.3f\n", l.ic, l.oc, l.hw, l.k,
                l.stride, l.groups, l.residual ? "+sum " : "clip ",
                median_ms(eng, s, mb, l, tag::nhwc), median_ms(eng, s, mb, l, tag::nChw16c));
}
