// Shape/type inference for the nn op family.
#include "ops/op_registry.h"

namespace trtutils::ops {

void register_nn_ops(OpRegistry& r) { (void)r; }

}  // namespace trtutils::ops
