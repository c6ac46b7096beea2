// Optional NVIDIA libraries (cuDNN, cuBLASLt) are loaded at first use
// (src/backends/dynamic_library.hpp), never linked. ctest runs the
// LazyLibraries tests twice: as discovered (with whatever this machine has),
// and as cpu.LazyLibraries.MissingNvidiaLibraries with BARACUDA_CUDNN_LIBRARY /
// BARACUDA_CUBLASLT_LIBRARY naming files that do not exist and
// BARACUDA_TEST_EXPECT_MISSING=1: then every route must say which library is
// missing (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cudnn/library.hpp"
#include "backends/dynamic_library.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/api.hpp"
#include "backends/cublaslt/handle.hpp"
#endif

namespace {

using baracuda::StatusCode;
using baracuda::backends::DynamicLibrary;
using baracuda::backends::library_candidates;
namespace cudnn = baracuda::cudnn;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
bool expect_missing() { return env("BARACUDA_TEST_EXPECT_MISSING") == "1"; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(LazyLibraries, MissingLibraryIsNamed) {
  const auto lib = DynamicLibrary::open({"libbaracuda-test-no-such-library.so.1"});
  EXPECT_FALSE(lib.loaded());
  EXPECT_TRUE(lib.name().empty());
  EXPECT_TRUE(contains(lib.error(), "libbaracuda-test-no-such-library.so.1")) << lib.error();
}

TEST(LazyLibraries, FirstCandidateThatOpensIsKeptAndResolves) {
  auto lib = DynamicLibrary::open({"libbaracuda-test-no-such-library.so.1", "libm.so.6"});
  ASSERT_TRUE(lib.loaded()) << lib.error();
  EXPECT_EQ(lib.name(), "libm.so.6");
  EXPECT_TRUE(lib.error().empty()) << lib.error();
  double (*cosine)(double) = nullptr;
  ASSERT_TRUE(lib.resolve("cos", cosine)) << lib.error();
  EXPECT_EQ(cosine(0.0), 1.0);
  void (*missing)() = nullptr;
  EXPECT_FALSE(lib.resolve("baracuda_test_no_such_function", missing));
  EXPECT_EQ(missing, nullptr);
  EXPECT_EQ(lib.error(),
            "libm.so.6 has no function baracuda_test_no_such_function (an older or incompatible version?)");
}

TEST(LazyLibraries, CandidatesHonourTheEnvironmentOverride) {
  const char* var = "BARACUDA_TEST_LIBRARY_OVERRIDE";
  using Names = std::vector<std::string>;
  unsetenv(var);
  EXPECT_EQ(library_candidates(var, "libx.so.9", "/opt/x/lib"), (Names{"libx.so.9", "/opt/x/lib/libx.so.9"}));
  EXPECT_EQ(library_candidates(var, "libx.so.9", ""), (Names{"libx.so.9"}));
  setenv(var, "/elsewhere/libx.so.9", 1);  // set: the only place tried
  EXPECT_EQ(library_candidates(var, "libx.so.9", "/opt/x/lib"), (Names{"/elsewhere/libx.so.9"}));
  setenv(var, "", 1);  // empty counts as unset
  EXPECT_EQ(library_candidates(var, "libx.so.9", "/opt/x/lib"), (Names{"libx.so.9", "/opt/x/lib/libx.so.9"}));
  unsetenv(var);
}

TEST(LazyLibraries, CudnnSaysWhyItIsNotUsable) {
  const std::string why = cudnn::unavailable_reason();
  if (!cudnn::in_build()) {
    EXPECT_FALSE(cudnn::loaded());
    EXPECT_EQ(why, "this build has no cuDNN (BARACUDA_WITH_CUDNN is off)");
    return;
  }
  // The first place looked at: the override when set, else the versioned name.
  const std::string override_name = env("BARACUDA_CUDNN_LIBRARY");
  const std::string first = override_name.empty() ? "libcudnn.so." : override_name;
  if (expect_missing()) {
    ASSERT_FALSE(override_name.empty());
    EXPECT_FALSE(cudnn::loaded());
  }
  if (cudnn::loaded()) {
    EXPECT_GT(cudnn::version(), 0u);
    EXPECT_EQ(why.empty(), cudnn::available()) << why;
  } else {
    EXPECT_FALSE(cudnn::available());
    EXPECT_EQ(cudnn::version(), 0u);
    EXPECT_TRUE(contains(why, "cuDNN could not be loaded (" + first)) << why;
  }
}

#ifdef BARACUDA_WITH_CUDA
namespace cublaslt = baracuda::cublaslt;

TEST(LazyLibraries, CublasLtRoutesNameTheMissingLibrary) {
  const baracuda::Status st = cublaslt::require_api("GemmPlan");
  const std::string override_name = env("BARACUDA_CUBLASLT_LIBRARY");
  if (expect_missing()) ASSERT_FALSE(override_name.empty());
  if (!expect_missing() && cublaslt::try_api()) {
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(cublaslt::load_error().empty()) << cublaslt::load_error();
    return;
  }
  const std::string name = override_name.empty() ? "libcublasLt.so." : override_name;
  EXPECT_EQ(cublaslt::try_api(), nullptr);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_TRUE(contains(st.message(), "GemmPlan: cuBLASLt could not be loaded (" + name)) << st.message();
  // The handle (first step of every cuBLASLt route) reports the library before touching a device.
  const auto handle = cublaslt::device_handle("GemmPlan", 0, /*capturing=*/false);
  ASSERT_FALSE(handle.is_ok());
  EXPECT_EQ(handle.status().message(), st.message());
}
#endif

}  // namespace

// The loader both backends use (backends::load_api): a table is usable only
// when every function resolved, and otherwise says which step failed.
namespace {
struct MathApi {
  double (*cos)(double) = nullptr;
  double (*sqrt)(double) = nullptr;
  void (*baracuda_test_no_such_function)() = nullptr;
};
}  // namespace

TEST(LazyLibraries, LoadApiFillsTheTableOrSaysWhy) {
  using baracuda::backends::load_api;
  const auto math = load_api<MathApi>({"libm.so.6"}, [](DynamicLibrary& lib, MathApi& api) {
    return BARACUDA_RESOLVE_FUNCTION(cos) BARACUDA_RESOLVE_FUNCTION(sqrt) true;
  });
  ASSERT_NE(math.table(), nullptr) << math.error;
  EXPECT_TRUE(math.error.empty()) << math.error;
  EXPECT_EQ(math.table()->cos(0.0), 1.0);
  EXPECT_EQ(math.table()->sqrt(9.0), 3.0);

  // A missing function: no table, the function named, resolution stops there.
  const auto partial = load_api<MathApi>({"libm.so.6"}, [](DynamicLibrary& lib, MathApi& api) {
    return BARACUDA_RESOLVE_FUNCTION(cos) BARACUDA_RESOLVE_FUNCTION(baracuda_test_no_such_function)
        BARACUDA_RESOLVE_FUNCTION(sqrt) true;
  });
  EXPECT_EQ(partial.table(), nullptr);
  EXPECT_EQ(partial.error, "libm.so.6 has no function baracuda_test_no_such_function (an older or incompatible version?)");
  EXPECT_EQ(partial.api.sqrt, nullptr);

  // A missing library: no table, the library named, resolve_all never called.
  bool resolved = false;
  const auto absent = load_api<MathApi>({"libbaracuda-test-no-such-library.so.1"}, [&](DynamicLibrary&, MathApi&) {
    resolved = true;
    return true;
  });
  EXPECT_EQ(absent.table(), nullptr);
  EXPECT_TRUE(contains(absent.error, "libbaracuda-test-no-such-library.so.1")) << absent.error;
  EXPECT_FALSE(resolved);
}
