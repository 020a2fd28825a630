// Shape/type inference for the tensor op family.
#include "ops/op_registry.h"

namespace trtutils::ops {

void register_tensor_ops(OpRegistry& r) { (void)r; }

}  // namespace trtutils::ops
