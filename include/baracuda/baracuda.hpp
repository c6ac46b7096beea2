// Umbrella header. DLPack interop (core/dlpack.hpp) is included: with
// dlpack/dlpack.h on the include path it is the real thing, without it a call
// to from_dlpack / to_dlpack fails to compile naming the missing header.
#pragma once
#include "baracuda/core/buffer.hpp"
#include "baracuda/core/dlpack.hpp"
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/dtype_dispatch.hpp"
#include "baracuda/core/float8.hpp"
#include "baracuda/core/half.hpp"
#include "baracuda/core/host_types.hpp"
#include "baracuda/core/promotion.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/ops/reduce.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/rope.hpp"
#include "baracuda/ops/norm.hpp"
#include "baracuda/ops/softmax.hpp"
#include "baracuda/version.hpp"
