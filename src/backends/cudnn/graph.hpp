// Builder of one cuDNN backend operation graph: tensor descriptors and
// operations, added in order; the first error wins and later calls do nothing,
// so a family writes its graph as straight-line code and checks status() once.
// The builder owns every descriptor it creates (release() hands them to the
// execution plan, which must keep them alive).
//
// Tensors are rank-N with explicit element strides (cuDNN's backend API works
// on 3- to 8-D tensors; the routes so far use 4-D). Non-virtual tensors carry
// a caller-chosen uid (the variant pack binds pointers by uid); virtual ones
// get fresh uids counting up from `first_virtual_uid`.
#pragma once
#include <cudnn.h>

#include <cstdint>
#include <span>
#include <vector>

#include "backends/cudnn/descriptor.hpp"

namespace baracuda::cudnn {

// Row-major packed strides of `dims`.
std::vector<int64_t> packed_strides(std::span<const int64_t> dims);

class OperationGraph {
 public:
  OperationGraph(const char* plan, int64_t first_virtual_uid) : plan_(plan), next_uid_(first_virtual_uid) {}

  const Status& status() const { return st_; }

  // A finalized tensor descriptor (null after an error). `alignment`: the
  // byte alignment cuDNN may assume for the data pointer.
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t dt, std::span<const int64_t> dims,
                                  std::span<const int64_t> strides, bool is_virtual = false, bool by_value = false,
                                  int64_t alignment = 16);
  // Intermediate tensors (never bound to memory); packed unless strides are given.
  cudnnBackendDescriptor_t virtual_tensor(cudnnDataType_t dt, std::span<const int64_t> dims);
  cudnnBackendDescriptor_t virtual_tensor(cudnnDataType_t dt, std::span<const int64_t> dims,
                                          std::span<const int64_t> strides);
  // A by-value scalar operand (passed by host pointer in the variant pack),
  // shaped [1,...,1] with `rank` dims to broadcast against rank-`rank` tensors.
  cudnnBackendDescriptor_t scalar(int64_t uid, cudnnDataType_t dt, int rank = 4);

  // y = mode(x [, b] [, t]) computed in `compute`; `axis` for GEN_INDEX; t is
  // BINARY_SELECT's mask.
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t y, cudnnDataType_t compute = CUDNN_DATA_FLOAT, int64_t axis = -1,
                 cudnnBackendDescriptor_t t = nullptr);
  // c = a . b (batched over the leading dims), accumulated in `compute`.
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
              cudnnDataType_t compute = CUDNN_DATA_FLOAT);
  // y = reduce(x) over the dims where y has extent 1.
  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                 cudnnDataType_t compute = CUDNN_DATA_FLOAT);
  // y = x viewed with y's dims/strides (e.g. a transpose).
  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);

  // Creates and finalizes the operation graph over every operation added so
  // far (null after an error). `finalize_step` names the step in the error:
  // the place where cuDNN says whether it recognises the graph at all.
  cudnnBackendDescriptor_t finalize(cudnnHandle_t handle, const char* finalize_step);
  // The finalized graph descriptor (null before finalize()).
  cudnnBackendDescriptor_t graph() const { return graph_; }

  // Hands over every descriptor created so far.
  std::vector<Descriptor> release() { return std::move(owned_); }

 private:
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type, const char* step);
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
           const void* v, const char* step);
  void finalize_descriptor(cudnnBackendDescriptor_t d, const char* step);

  const char* plan_;
  Status st_;
  std::vector<Descriptor> owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  cudnnBackendDescriptor_t graph_ = nullptr;
  int64_t next_uid_;
};

}  // namespace baracuda::cudnn
