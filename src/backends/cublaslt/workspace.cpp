#include "backends/cublaslt/workspace.hpp"

namespace baracuda::cublaslt {

size_t default_workspace_limit(int arch) { return arch >= 90 ? kHopperWorkspaceLimit : kDefaultWorkspaceLimit; }

size_t workspace_limit(int arch, std::optional<size_t> plan_override) {
  return plan_override ? *plan_override : default_workspace_limit(arch);
}

}  // namespace baracuda::cublaslt
