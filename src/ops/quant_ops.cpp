// Shape/type inference for the quant op family.
#include "ops/op_registry.h"

namespace trtutils::ops {

void register_quant_ops(OpRegistry& r) { (void)r; }

}  // namespace trtutils::ops
