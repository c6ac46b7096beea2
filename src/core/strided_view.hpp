// StridedView<N, Ptr>: the one way a launch struct hands a tensor to a kernel —
// a data pointer and N element strides (int64), nothing else. Extents live
// once in the launch struct (they are shared by several tensors), so a view is
// the tensor's address map only:
//     element (i0, ..., iN-1)  at  data + i0 * stride[0] + ... + iN-1 * stride[N-1]
// The axis order is the family's (attention and RoPE: [b, h, s, d]); a stride
// may be 0 (broadcast). Plain aggregate, usable from host .cpp files and
// device code without CUDA headers:
//     StridedView<4> q = {t.data, s0, s1, s2, s3};   // or view_of<4>(t)
#pragma once
#include <cstdint>

#include "core/host_device.hpp"

namespace baracuda::detail {

template <int N, class Ptr = const void*>
struct StridedView {
  static_assert(N >= 1 && N <= 8, "a view has 1..8 axes");
  Ptr data = nullptr;
  int64_t stride[N] = {};

  // Element offset of index (i0, ..., iN-1); fewer indices address a leading
  // sub-view (the remaining indices are 0).
  template <class... I>
  BARACUDA_HOST_DEVICE constexpr int64_t offset(I... idx) const {
    static_assert(static_cast<int>(sizeof...(I)) <= N, "more indices than axes");
    int64_t off = 0;
    int k = 0;
    ((off += static_cast<int64_t>(idx) * stride[k++]), ...);
    return off;
  }

  // The data pointer as a typed element pointer (T carries the constness).
  template <class T>
  BARACUDA_HOST_DEVICE T* as() const {
    return static_cast<T*>(data);
  }

  // The same strides over another pointer (a buffer of the same layout).
  template <class P>
  BARACUDA_HOST_DEVICE StridedView<N, P> with_data(P p) const {
    StridedView<N, P> v;
    v.data = p;
    for (int i = 0; i < N; ++i) v.stride[i] = stride[i];
    return v;
  }

  // The same view with a typed element pointer (T carries the constness).
  template <class T>
  BARACUDA_HOST_DEVICE StridedView<N, T*> typed() const {
    return with_data(static_cast<T*>(data));
  }
};

// The first N strides of any tensor view with `data` and `strides[]` members
// (TensorRef, TensorMut), as a StridedView with the view's pointer type.
template <int N, class Tensor>
auto view_of(const Tensor& t) {
  StridedView<N, decltype(t.data)> v;
  v.data = t.data;
  for (int i = 0; i < N; ++i) v.stride[i] = t.strides[i];
  return v;
}

}  // namespace baracuda::detail
