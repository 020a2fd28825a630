// CPU kernels for the quant op family.
#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu {

void register_quant_kernels(KernelRegistry& r) { (void)r; }

}  // namespace trtutils::cpu
