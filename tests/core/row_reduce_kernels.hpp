// Test kernels of src/cuda/row_reduce.cuh (row_reduce_kernels.cu), behind a
// plain C++ interface for test_row_reduce.cpp. Each kernel reduces every row
// of a row-major f32 matrix [rows x len] at one scope, and EVERY thread of
// the scope writes its own copy of the result, so the test checks that all
// threads agree bit for bit as well as the value.
#pragma once
#include <cstdint>

namespace baracuda::row_reduce_test {

enum class Scope {
  Warp32,    // a warp per row (4 rows per 128-thread block)
  Warp8,     // 8 lanes per row (4 rows per warp)
  Block,     // a 256-thread block per row
  Cluster2,  // a cluster of 2 blocks of 128 threads per row (sm_90)
  Cluster4,  // a cluster of 4 blocks of 128 threads per row (sm_90)
};

enum class Kind {
  Sum,        // dev::RowSum<float>
  Max,        // dev::RowMax<float>
  LogSumExp,  // dev::RowMaxSumExp<float>: val = max + log(sum)
  ArgMax,     // the reduce family's ArgMaxOp<float>: val = value, idx = first index
  Var,        // the reduce family's VarOp<float> (Welford): val = M2 / n, idx = n
};

// Threads that hold a copy of one row's result (the copies are laid out
// [rows x threads_per_row]).
int threads_per_row(Scope s);

// True when the sm_90 cluster code is in the binary for this device (the
// cluster scopes may run).
bool cluster_code_present();

// Runs the kernel on the legacy stream and waits; val / idx are device
// arrays of rows * threads_per_row(s) elements (idx may be null unless Kind
// is ArgMax / Var). Returns the cudaError_t as int (0 = success).
int run(Scope s, Kind k, const float* x, int rows, int len, float* val, int64_t* idx);

}  // namespace baracuda::row_reduce_test
