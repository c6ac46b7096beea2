// The generated version header (cmake/version.hpp.in) and the library's
// baracuda::version() agree with project(baracuda VERSION ...), which the
// build passes to this test as BARACUDA_TEST_PROJECT_VERSION.
#include <gtest/gtest.h>

#include <string>

#include "baracuda/baracuda.hpp"  // the umbrella header brings baracuda/version.hpp

namespace {

TEST(Version, HeaderMacrosMatchTheProject) {
  EXPECT_STREQ(BARACUDA_VERSION_STRING, BARACUDA_TEST_PROJECT_VERSION);
  const std::string joined = std::to_string(BARACUDA_VERSION_MAJOR) + "." + std::to_string(BARACUDA_VERSION_MINOR) +
                             "." + std::to_string(BARACUDA_VERSION_PATCH);
  EXPECT_EQ(joined, BARACUDA_VERSION_STRING);
  EXPECT_EQ(BARACUDA_VERSION, BARACUDA_VERSION_MAJOR * 10000 + BARACUDA_VERSION_MINOR * 100 + BARACUDA_VERSION_PATCH);
}

TEST(Version, LibraryReportsTheVersionItWasBuiltAs) {
  ASSERT_NE(baracuda::version(), nullptr);
  EXPECT_STREQ(baracuda::version(), BARACUDA_TEST_PROJECT_VERSION);
}

}  // namespace
