// Device helpers for baracuda_bench (bench_kernels.cu), plain C++ interface.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"

// Fills n elements (F32, F16 or BF16) with deterministic uniform values in
// (lo, hi): a counter-based hash of (seed, index), so no RNG state and no
// upload. Never produces exactly 0 when lo = -hi (no accidental zeros for Prod).
// Bool: true or false with probability 1/2 each (lo, hi ignored).
cudaError_t bench_fill_uniform(void* dst, baracuda::DType dtype, size_t n, float lo, float hi, uint64_t seed,
                               cudaStream_t stream);

// Occupies the stream for `ns` nanoseconds (one thread spinning on %globaltimer).
// Enqueued before the timed launches so the host can queue them all while the
// GPU waits: launch overhead then never shows up inside an event pair.
cudaError_t bench_spin(uint64_t ns, cudaStream_t stream);
