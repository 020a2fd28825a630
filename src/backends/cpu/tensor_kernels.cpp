// CPU kernels for the tensor op family.
#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu {

void register_tensor_kernels(KernelRegistry& r) { (void)r; }

}  // namespace trtutils::cpu
