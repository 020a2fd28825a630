// CPU kernels for the elementwise op family.
#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu {

void register_elementwise_kernels(KernelRegistry& r) { (void)r; }

}  // namespace trtutils::cpu
