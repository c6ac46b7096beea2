#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/descriptors.hpp"

#include <cstdint>
#include <string>

#include "backends/cublaslt/errors.hpp"

namespace baracuda::cublaslt {

namespace {

cublasComputeType_t compute_type(ComputeType c) {
  switch (c) {
    case ComputeType::F32: return CUBLAS_COMPUTE_32F;
    case ComputeType::F32FastTF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case ComputeType::F32FastBF16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case ComputeType::F32FastF16: return CUBLAS_COMPUTE_32F_FAST_16F;
    case ComputeType::F64: return CUBLAS_COMPUTE_64F;
    case ComputeType::I32: return CUBLAS_COMPUTE_32I;
  }
  return CUBLAS_COMPUTE_32F;
}

cublasLtEpilogue_t epilogue_of(Epilogue e) {
  switch (e) {
    case Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::ReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::GeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilogue::GeluAux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case Epilogue::GeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilogue::BGradA: return CUBLASLT_EPILOGUE_BGRADA;
    case Epilogue::BGradB: return CUBLASLT_EPILOGUE_BGRADB;
    case Epilogue::DGelu: return CUBLASLT_EPILOGUE_DGELU;
    case Epilogue::DGeluBGrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// Sets one attribute; the first failure wins.
template <class Set, class Obj, class Attr, class T>
void set_attr(Status& st, const char* plan, Set set, Obj obj, Attr attr, const T& value, const char* step) {
  if (!st.is_ok()) return;
  const cublasStatus_t s = set(obj, attr, &value, sizeof(T));
  if (s != CUBLAS_STATUS_SUCCESS) st = library_status(plan, s, step);
}

Result<MatrixLayout> make_layout(const char* plan, DType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                 int64_t stride, const char* step) {
  auto dt = data_type(plan, t);
  if (!dt) return dt.status();
  cublasLtMatrixLayout_t raw = nullptr;
  const cublasStatus_t s =
      api().cublasLtMatrixLayoutCreate(&raw, *dt, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld);
  if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, step);
  MatrixLayout layout(raw);
  if (batch > 1) {
    Status st;
    const auto count = static_cast<int32_t>(batch);
    set_attr(st, plan, api().cublasLtMatrixLayoutSetAttribute, raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count,
             "setting a layout's batch count");
    set_attr(st, plan, api().cublasLtMatrixLayoutSetAttribute, raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride,
             "setting a layout's batch stride");
    if (!st.is_ok()) return st;
  }
  return layout;
}

}  // namespace

Result<cudaDataType_t> data_type(const char* plan, DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F8E4M3: return CUDA_R_8F_E4M3;
    case DType::F8E5M2: return CUDA_R_8F_E5M2;
    case DType::I8: return CUDA_R_8I;
    case DType::U8: return CUDA_R_8U;
    case DType::I32: return CUDA_R_32I;
    default: break;
  }
  return Status(StatusCode::Unsupported,
                std::string(plan) + ": cuBLASLt: dtype " + std::string(dtype_name(t)) + " has no cuBLASLt data type");
}

Result<MatmulDescriptors> make_descriptors(const char* plan, const MatmulProblem& p) {
  BARACUDA_RETURN_IF_ERROR(check_problem(plan, p));
  BARACUDA_RETURN_IF_ERROR(require_api(plan));
  auto scale = data_type(plan, p.scale_type);
  if (!scale) return scale.status();
  MatmulDescriptors out;
  {
    cublasLtMatmulDesc_t raw = nullptr;
    const cublasStatus_t s = api().cublasLtMatmulDescCreate(&raw, compute_type(p.compute), *scale);
    if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "creating the matmul descriptor");
    out.op.reset(raw);
  }
  Status st;
  const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epi = epilogue_of(p.epilogue);
  set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_TRANSA, ta, "setting transa");
  set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_TRANSB, tb, "setting transb");
  set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, epi,
           "setting the epilogue");
  if (has_bias(p.epilogue) || has_bias_grad(p.epilogue)) {
    auto bias = data_type(plan, p.bias_type);
    if (!bias) return bias.status();
    set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, *bias,
             "setting the bias data type");
  }
  auto scale_mode = [](ScaleMode m) -> int32_t {
    return m == ScaleMode::OuterVec ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  };
  if (p.a_scale != ScaleMode::None)
    set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
             scale_mode(p.a_scale), "setting A's scale mode");
  if (p.b_scale != ScaleMode::None)
    set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
             scale_mode(p.b_scale), "setting B's scale mode");
  if (p.fast_accum) {
    const int8_t on = 1;
    set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, on,
             "setting fp8 fast accumulation");
  }
  if (has_aux(p.epilogue)) {
    auto aux = data_type(plan, p.aux_type);
    if (!aux) return aux.status();
    const int64_t ld = p.aux_ld, stride = p.aux_stride;
    set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, *aux,
             "setting the aux data type");
    set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld,
             "setting the aux leading dimension");
    if (p.batch > 1)
      set_attr(st, plan, api().cublasLtMatmulDescSetAttribute, out.op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
               stride, "setting the aux batch stride");
  }
  if (!st.is_ok()) return st;
  const StoredShape sa = stored_a(p), sb = stored_b(p);
  auto a = make_layout(plan, p.a_type, sa.rows, sa.cols, p.lda, p.batch, p.stride_a, "creating the A layout");
  if (!a) return a.status();
  auto b = make_layout(plan, p.b_type, sb.rows, sb.cols, p.ldb, p.batch, p.stride_b, "creating the B layout");
  if (!b) return b.status();
  auto c = make_layout(plan, p.c_type, p.m, p.n, p.ldc, p.batch, p.stride_c, "creating the C layout");
  if (!c) return c.status();
  auto d = make_layout(plan, p.d_type, p.m, p.n, p.ldd, p.batch, p.stride_d, "creating the D layout");
  if (!d) return d.status();
  out.a = std::move(*a);
  out.b = std::move(*b);
  out.c = std::move(*c);
  out.d = std::move(*d);
  return out;
}

Result<Preference> make_preference(const char* plan, const MatmulProblem& p, size_t workspace_limit) {
  BARACUDA_RETURN_IF_ERROR(require_api(plan));
  cublasLtMatmulPreference_t raw = nullptr;
  const cublasStatus_t s = api().cublasLtMatmulPreferenceCreate(&raw);
  if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "creating the heuristic preference");
  Preference pref(raw);
  Status st;
  const uint64_t limit = workspace_limit;
  set_attr(st, plan, api().cublasLtMatmulPreferenceSetAttribute, raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, limit,
           "setting the workspace limit");
  set_attr(st, plan, api().cublasLtMatmulPreferenceSetAttribute, raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.align_a,
           "setting A's alignment");
  set_attr(st, plan, api().cublasLtMatmulPreferenceSetAttribute, raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.align_b,
           "setting B's alignment");
  set_attr(st, plan, api().cublasLtMatmulPreferenceSetAttribute, raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.align_c,
           "setting C's alignment");
  set_attr(st, plan, api().cublasLtMatmulPreferenceSetAttribute, raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.align_d,
           "setting D's alignment");
  if (!st.is_ok()) return st;
  return pref;
}

}  // namespace baracuda::cublaslt
#endif
