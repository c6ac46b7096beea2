// CPU reference for layer / RMS norm and their backward: the oracle. Plain
// loops over any strides, all math in double, one rounding to each output's
// dtype (h is rounded before it is normalized, as the header says).
#pragma once
#include "baracuda/ops/norm.hpp"

namespace baracuda::norm::ref {

// Calls validated by the plans (descriptor and arguments).
Status forward(const NormDescriptor& d, const NormArgs& a);
Status backward(const NormBackwardDescriptor& d, const NormBackwardArgs& a);

}  // namespace baracuda::norm::ref
