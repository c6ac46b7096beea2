// Umbrella header.
#pragma once
#include "baracuda/core/buffer.hpp"
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/half.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/ops/reduce.hpp"
#include "baracuda/ops/rope.hpp"
