// A floor for issue 11's VAE training step (bench/vae_step/floors.py): the VAE prior term as a
// C++ autograd node (torch::autograd::Function, registered with TORCH_LIBRARY) calling the
// library's forward and backward, so that no Python runs in the step but the call itself.
// A measurement, not part of gausskl: it links libtorch, which gausskl does not.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>
#include "gausskl/gausskl.hpp"
#include "gausskl/gradients.hpp"

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

gausskl::DiagGaussians<float> diag(const at::Tensor& mu, const at::Tensor& lv) {
  gausskl::DiagGaussians<float> g;
  g.mean = {mu.data_ptr<float>(), {mu.size(0), mu.size(1)}, {mu.stride(0), mu.stride(1)}};
  g.scale = {lv.data_ptr<float>(), {lv.size(0), lv.size(1)}, {lv.stride(0), lv.stride(1)}};
  g.param = gausskl::DiagParam::logvar;
  return g;
}

at::Tensor fwd(const at::Tensor& mu, const at::Tensor& lv) {
  at::Tensor out = at::empty({mu.size(0)}, mu.options());
  gausskl::Options o;
  o.threads = 0;
  gausskl::kl_standard_normal(gausskl::Gaussians<float>(diag(mu, lv)),
                              std::span<float>(out.data_ptr<float>(), out.numel()), o);
  return out;
}

struct KLStd : torch::autograd::Function<KLStd> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& mu, const at::Tensor& lv) {
    ctx->save_for_backward({mu, lv});
    return fwd(mu, lv);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto s = ctx->get_saved_variables();
    at::Tensor g = grads[0].contiguous();
    at::Tensor dmu = at::empty_like(s[0]), dlv = at::empty_like(s[1]);
    gausskl::Gradients<float> dp{{dmu.data_ptr<float>(), (size_t)dmu.numel()},
                                 {dlv.data_ptr<float>(), (size_t)dlv.numel()}};
    gausskl::kl_standard_normal_backward(gausskl::Gaussians<float>(diag(s[0], s[1])),
                                         std::span<const float>(g.data_ptr<float>(), g.numel()), dp,
                                         {});
    return {dmu, dlv};
  }
};

at::Tensor autograd_impl(const at::Tensor& mu, const at::Tensor& lv) {
  return KLStd::apply(mu, lv);
}
}  // namespace

TORCH_LIBRARY(gklp, m) {
  m.def("kl_std(Tensor mu, Tensor lv) -> Tensor");
}
TORCH_LIBRARY_IMPL(gklp, CPU, m) {
  m.impl("kl_std", fwd);
}
TORCH_LIBRARY_IMPL(gklp, Autograd, m) {
  m.impl("kl_std", autograd_impl);
}
