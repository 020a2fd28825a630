// CPU kernels for the nn op family.
#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu {

void register_nn_kernels(KernelRegistry& r) { (void)r; }

}  // namespace trtutils::cpu
