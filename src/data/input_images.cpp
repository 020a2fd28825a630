#include "data/input_images.h"

#include <array>
#include <string>

#include "core/check.h"

namespace trtutils::data {

namespace {

// The axes of H, W and C in a rank-4 input of layout `order`.
std::array<int, 3> hwc_axes(DataOrder order) {
  return order == DataOrder::kNCHW ? std::array<int, 3>{2, 3, 1} : std::array<int, 3>{1, 2, 3};
}

bool is_image_dtype(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kUInt8 ||
         t == DataType::kInt8;
}

}  // namespace

ImageBatcherOptions fit_images_to_input(ImageBatcherOptions o, const ir::ValueInfo& in) {
  const std::string order(data_order_name(o.order));
  const bool open = o.shape == std::array<int64_t, 3>{0, 0, 0};
  const std::string shape = in.shape ? ir::sym_shape_str(*in.shape) : "(no shape)";
  const bool rank4 = in.shape && in.shape->size() == 4;
  const auto axes = hwc_axes(o.order);
  TRT_CHECK_ARG(rank4 || !in.shape,
                "images need a model input of rank 4 ([N, C, H, W] or [N, H, W, C]); '{}' is {}",
                in.name, shape);
  if (open) {
    bool fixed = rank4;
    for (int a : axes) fixed = fixed && (*in.shape)[static_cast<size_t>(a)].is_static();
    TRT_CHECK_ARG(fixed,
                  "images for the model input '{}' {}: its H, W, C are not all fixed in {} order; "
                  "give the image shape (input_shape H W C) or the layout (data_order)",
                  in.name, shape, order);
    for (size_t k = 0; k < 3; ++k) o.shape[k] = (*in.shape)[static_cast<size_t>(axes[k])].value;
  } else if (in.shape) {
    for (size_t k = 0; k < 3; ++k) {
      const ir::Dim& d = (*in.shape)[static_cast<size_t>(axes[k])];
      TRT_CHECK_ARG(!d.is_static() || d.value == o.shape[k],
                    "image shape (H, W, C) = ({}, {}, {}) does not fit the model input '{}' {} in "
                    "{} order; set input_shape H W C (or data_order) to match it",
                    o.shape[0], o.shape[1], o.shape[2], in.name, shape, order);
    }
  }
  if (o.dtype == DataType::kUndefined)
    o.dtype = is_image_dtype(in.dtype) ? in.dtype : DataType::kFloat32;
  return o;
}

}  // namespace trtutils::data
