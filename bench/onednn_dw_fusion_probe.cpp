// oneDNN's 1x1 convolution with a fused depthwise post-op (append_dw) against the two
// convolutions run one after the other, blocked (nChw16c) activations, cold memory (4 buffer
// sets rotated): the measurement behind fusing an inverted-residual block's expand and depthwise
// convolutions (bench/RESULTS.md, issue 36). MobileNetV2 layer shapes. Build and run:
//   g++ -O2 -std=c++17 bench/onednn_dw_fusion_probe.cpp -ldnnl -o /tmp/dw_fusion_probe
//   OMP_NUM_THREADS=2 /tmp/dw_fusion_probe 1 [swish]  # batch (default 1), activation (relu6)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <functional>
#include <string>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Block {
  int ic, oc, hw, stride;
};

algorithm g_act = algorithm::eltwise_clip;  // swish with a second argument
float g_alpha = 0.f, g_beta = 6.f;

constexpr int kSets = 4;

std::vector<memory> buffers(const memory::desc& md, engine& eng) {
  std::vector<memory> v;
  for (int i = 0; i < kSets; ++i) {
    v.emplace_back(md, eng);
    std::memset(v.back().get_data_handle(), 0, md.get_size());
  }
  return v;
}

double median_ms(const std::function<void(int)>& call, stream& s) {
  std::vector<double> t;
  for (int i = 0; i < 80; ++i) {
    const auto a = std::chrono::steady_clock::now();
    call(i % kSets);
    s.wait();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

convolution_forward::primitive_desc conv_pd(engine& eng, const memory::desc& src,
                                            const memory::desc& dst, const memory::dims& w,
                                            int stride, int pad, const post_ops& po) {
  primitive_attr attr;
  attr.set_post_ops(po);
  const auto d =
      convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src,
                                memory::desc(w, dt::f32, tag::any),
                                memory::desc({w[0] * (w.size() == 5 ? w[1] : 1)}, dt::f32, tag::a),
                                dst, {stride, stride}, {pad, pad}, {pad, pad});
  return convolution_forward::primitive_desc(d, attr, eng);
}

void run(engine& eng, stream& s, int mb, const Block& b) {
  const int ohw = (b.hw + 2 - 3) / b.stride + 1;
  const auto smd = memory::desc({mb, b.ic, b.hw, b.hw}, dt::f32, tag::nChw16c);
  const auto mmd = memory::desc({mb, b.oc, b.hw, b.hw}, dt::f32, tag::nChw16c);
  const auto dmd = memory::desc({mb, b.oc, ohw, ohw}, dt::f32, tag::nChw16c);
  post_ops clip;
  clip.append_eltwise(1.f, g_act, g_alpha, g_beta);
  const auto pw = conv_pd(eng, smd, mmd, {b.oc, b.ic, 1, 1}, 1, 0, clip);
  const auto dw = conv_pd(eng, mmd, dmd, {b.oc, 1, 1, 3, 3}, b.stride, 1, clip);
  post_ops fused_po;
  fused_po.append_eltwise(1.f, g_act, g_alpha, g_beta);
  fused_po.append_dw(dt::f32, dt::f32, dt::f32, 3, b.stride, 1, 0, {});
  fused_po.append_eltwise(1.f, g_act, g_alpha, g_beta);
  const auto fused = conv_pd(eng, smd, mmd, {b.oc, b.ic, 1, 1}, 1, 0, fused_po);
  auto src = buffers(smd, eng), mid = buffers(mmd, eng), dst = buffers(dmd, eng);
  memory pww(pw.weights_desc(), eng), dww(dw.weights_desc(), eng), fw(fused.weights_desc(), eng);
  memory pwb(memory::desc({b.oc}, dt::f32, tag::a), eng), dwb(pwb.get_desc(), eng);
  memory fdw(fused.query_md(query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS), eng);
  auto pwp = convolution_forward(pw), dwp = convolution_forward(dw),
       fp = convolution_forward(fused);
  const double separate = median_ms(
      [&](int i) {
        pwp.execute(s, {{DNNL_ARG_SRC, src[i]},
                        {DNNL_ARG_WEIGHTS, pww},
                        {DNNL_ARG_BIAS, pwb},
                        {DNNL_ARG_DST, mid[i]}});
        dwp.execute(s, {{DNNL_ARG_SRC, mid[i]},
                        {DNNL_ARG_WEIGHTS, dww},
                        {DNNL_ARG_BIAS, dwb},
                        {DNNL_ARG_DST, dst[i]}});
      },
      s);
  const double together = median_ms(
      [&](int i) {
        fp.execute(s, {{DNNL_ARG_SRC, src[i]},
                       {DNNL_ARG_WEIGHTS, fw},
                       {DNNL_ARG_BIAS, pwb},
                       {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, fdw},
                       {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, dwb},
                       {DNNL_ARG_DST, dst[i]}});
      },
      s);
  std::printf("ic %4d oc %4d %3dpx s%d  %7.3f  %7.3f  %s\n", b.ic, b.oc, b.hw, b.stride, separate,
              together, fused.impl_info_str());
}

int main(int argc, char** argv) {
  const int mb = argc > 1 ? std::atoi(argv[1]) : 1;
  if (argc > 2 && std::string(argv[2]) == "swish") {
    g_act = algorithm::eltwise_swish;
    g_alpha = 1.f;
    g_beta = 0.f;
  }
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const Block blocks[] = {{16, 96, 112, 2}, {24, 144, 56, 1}, {24, 144, 56, 2}, {32, 192, 28, 1},
                          {32, 192, 28, 2}, {64, 384, 14, 1}, {96, 576, 14, 1}, {160, 960, 7, 1}};
  std::printf("batch %d: median ms, 1x1 then dw / 1x1 with dw post-op\n", mb);
  for (const Block& b : blocks) run(eng, s, mb, b);
}
