#include "backends/cudnn/library.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include "backends/cudnn/graph.hpp"

#include <string>

#include "backends/cudnn/api.hpp"

namespace baracuda::cudnn {

std::vector<int64_t> packed_strides(std::span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

cudnnBackendDescriptor_t OperationGraph::tensor(int64_t uid, cudnnDataType_t dt, std::span<const int64_t> dims,
                                                std::span<const int64_t> strides, bool is_virtual, bool by_value,
                                                int64_t alignment) {
  if (st_.is_ok() && dims.size() != strides.size())
    st_ = Status(StatusCode::InvalidProblem, std::string(plan_) + ": cuDNN: a tensor's dims and strides differ in rank");
  cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "creating a tensor descriptor");
  if (!t) return nullptr;
  const auto rank = static_cast<int64_t>(dims.size());
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "setting a tensor data type");
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims.data(), "setting tensor dimensions");
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data(), "setting tensor strides");
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "setting a tensor uid");
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "setting a tensor alignment");
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, "marking a tensor virtual");
  if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "marking a tensor by-value");
  finalize_descriptor(t, "finalizing a tensor descriptor");
  return t;
}

cudnnBackendDescriptor_t OperationGraph::virtual_tensor(cudnnDataType_t dt, std::span<const int64_t> dims) {
  const std::vector<int64_t> strides = packed_strides(dims);
  return tensor(next_uid_++, dt, dims, strides, /*is_virtual=*/true);
}

cudnnBackendDescriptor_t OperationGraph::virtual_tensor(cudnnDataType_t dt, std::span<const int64_t> dims,
                                                        std::span<const int64_t> strides) {
  return tensor(next_uid_++, dt, dims, strides, /*is_virtual=*/true);
}

cudnnBackendDescriptor_t OperationGraph::scalar(int64_t uid, cudnnDataType_t dt, int rank) {
  const std::vector<int64_t> ones(static_cast<size_t>(rank), 1);
  return tensor(uid, dt, ones, ones, /*is_virtual=*/false, /*by_value=*/true);
}

void OperationGraph::pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                               cudnnBackendDescriptor_t y, cudnnDataType_t compute, int64_t axis,
                               cudnnBackendDescriptor_t t) {
  cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "creating a pointwise descriptor");
  if (!pw) return;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "setting a pointwise mode");
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute, "setting a pointwise precision");
  if (axis >= 0) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "setting a pointwise axis");
  finalize_descriptor(pw, "finalizing a pointwise descriptor");
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "creating a pointwise operation");
  if (!op) return;
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw,
      "attaching a pointwise descriptor");
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "setting a pointwise input");
  if (b) set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "setting a pointwise second input");
  if (t) set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "setting a pointwise mask input");
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "setting a pointwise output");
  finalize_descriptor(op, "finalizing a pointwise operation");
  ops_.push_back(op);
}

void OperationGraph::matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
                            cudnnDataType_t compute) {
  cudnnBackendDescriptor_t mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "creating a matmul descriptor");
  if (!mm) return;
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, "setting the matmul compute type");
  finalize_descriptor(mm, "finalizing a matmul descriptor");
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "creating a matmul operation");
  if (!op) return;
  set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "setting matmul A");
  set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "setting matmul B");
  set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "setting matmul C");
  set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm, "attaching a matmul descriptor");
  finalize_descriptor(op, "finalizing a matmul operation");
  ops_.push_back(op);
}

void OperationGraph::reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                               cudnnDataType_t compute) {
  cudnnBackendDescriptor_t rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "creating a reduction descriptor");
  if (!rd) return;
  set(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "setting a reduction operator");
  set(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, "setting a reduction compute type");
  finalize_descriptor(rd, "finalizing a reduction descriptor");
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "creating a reduction operation");
  if (!op) return;
  set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "setting a reduction input");
  set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "setting a reduction output");
  set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "attaching a reduction descriptor");
  finalize_descriptor(op, "finalizing a reduction operation");
  ops_.push_back(op);
}

void OperationGraph::reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "creating a reshape operation");
  if (!op) return;
  set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "setting a reshape input");
  set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "setting a reshape output");
  finalize_descriptor(op, "finalizing a reshape operation");
  ops_.push_back(op);
}

cudnnBackendDescriptor_t OperationGraph::finalize(cudnnHandle_t handle, const char* finalize_step) {
  cudnnBackendDescriptor_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "creating the operation graph");
  if (!g) return nullptr;
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops_.size()), ops_.data(),
      "adding the operations to the graph");
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "setting the graph's handle");
  finalize_descriptor(g, finalize_step);
  graph_ = st_.is_ok() ? g : nullptr;
  return graph_;
}

cudnnBackendDescriptor_t OperationGraph::make(cudnnBackendDescriptorType_t type, const char* step) {
  if (!st_.is_ok()) return nullptr;
  auto d = make_descriptor(plan_, type, step);
  if (!d) {
    st_ = d.status();
    return nullptr;
  }
  owned_.push_back(std::move(*d));
  return owned_.back().get();
}

void OperationGraph::set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t n, const void* v, const char* step) {
  if (!st_.is_ok() || !d) return;
  const cudnnStatus_t s = api().cudnnBackendSetAttribute(d, name, type, n, v);
  if (s != CUDNN_STATUS_SUCCESS) st_ = library_status(plan_, s, step);
}

void OperationGraph::finalize_descriptor(cudnnBackendDescriptor_t d, const char* step) {
  if (!st_.is_ok() || !d) return;
  const cudnnStatus_t s = api().cudnnBackendFinalize(d);
  if (s != CUDNN_STATUS_SUCCESS) st_ = library_status(plan_, s, step);
}

}  // namespace baracuda::cudnn

#endif
