// Forwarding header: the elementwise layout (EwLayout, make_ew_layout,
// ew_operand_extent) is part of the public detail header that the device-side
// template baracuda/cuda/elementwise.cuh builds on.
#pragma once
#include "baracuda/cuda/detail/elementwise_host.hpp"
