// train_gpt's file and data helpers: safetensors round trips, a file written
// by hand to the format's specification, every rule load() checks, and the
// built-in addition task's windows and masks.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "safetensors.hpp"
#include "tasks.hpp"

using baracuda::DType;
using baracuda::StatusCode;
using namespace train_gpt;

namespace {

std::string temp_path(const std::string& name) {
  return std::string(::testing::TempDir()) + "train_gpt_" + name;
}

// A file of the format's bytes: header length, header text, data.
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  bytes += header;
  bytes.append(data.begin(), data.end());
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

void expect_invalid(const std::string& header, const std::vector<uint8_t>& data, const std::string& fragment) {
  auto r = parse_safetensors(file_of(header, data), "t.safetensors");
  ASSERT_FALSE(r.is_ok()) << header;
  EXPECT_EQ(r.status().code(), StatusCode::InvalidProblem);
  EXPECT_NE(r.status().message().find("safetensors: t.safetensors"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

}  // namespace

TEST(TrainGptSafetensors, RoundTripKeepsNamesDtypesShapesBytesAndMetadata) {
  const std::vector<float> a{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const std::vector<uint16_t> b{0x3f80, 0xbf80, 0x4000};  // bf16 bits
  const std::vector<int64_t> c{-1, 1LL << 40};
  const std::vector<uint8_t> d{1, 0, 1};
  const std::string path = temp_path("roundtrip.safetensors");
  ASSERT_TRUE(save_safetensors(path,
                               {{"layer.w", DType::F32, {2, 3}, a.data()},
                                {"b16", DType::BF16, {3}, b.data()},
                                {"ids", DType::I64, {2}, c.data()},
                                {"empty", DType::F32, {0, 4}, nullptr},
                                {"mask", DType::Bool, {3}, d.data()}},
                               {{"format", "pt"}, {"step", "12"}})
                  .is_ok());
  auto r = load_safetensors(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const SafetensorsFile& f = r.value();
  EXPECT_EQ(f.metadata.at("format"), "pt");
  EXPECT_EQ(f.metadata.at("step"), "12");
  EXPECT_EQ(f.data_start % 8, 0u);  // the header is padded so the data are 8-byte aligned
  ASSERT_EQ(f.tensors.size(), 5u);
  const LoadedTensor* w = f.find("layer.w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(w->bytes, 24u);
  EXPECT_EQ(std::memcmp(f.bytes_of(*w), a.data(), 24), 0);
  const LoadedTensor* h = f.find("b16");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->dtype, DType::BF16);
  EXPECT_EQ(std::memcmp(f.bytes_of(*h), b.data(), 6), 0);
  const LoadedTensor* i = f.find("ids");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(std::memcmp(f.bytes_of(*i), c.data(), 16), 0);
  const LoadedTensor* e = f.find("empty");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->bytes, 0u);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(f.find("mask")->dtype, DType::Bool);
  EXPECT_EQ(f.find("absent"), nullptr);
  std::remove(path.c_str());
}

TEST(TrainGptSafetensors, ReadsAFileWrittenToTheSpecification) {
  // Two tensors stored out of name order, header without padding.
  const std::string header =
      R"({"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]},)"
      R"("__metadata__":{"k":"v"}})";
  std::vector<uint8_t> data(12);
  const float z[2] = {1.0f, 2.0f};
  const int32_t a = 42;
  std::memcpy(data.data(), z, 8);
  std::memcpy(data.data() + 8, &a, 4);
  auto r = parse_safetensors(file_of(header, data), "spec");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const SafetensorsFile& f = r.value();
  EXPECT_EQ(f.tensors[0].name, "z");  // file order
  float zz[2];
  std::memcpy(zz, f.bytes_of(*f.find("z")), 8);
  EXPECT_EQ(zz[1], 2.0f);
  int32_t aa = 0;
  std::memcpy(&aa, f.bytes_of(*f.find("a")), 4);
  EXPECT_EQ(aa, 42);
  EXPECT_EQ(f.metadata.at("k"), "v");
}

TEST(TrainGptSafetensors, EveryRuleOfTheReaderIsAnError) {
  const std::vector<uint8_t> d8(8, 0);
  {
    auto r = parse_safetensors(std::vector<uint8_t>(5, 0), "t.safetensors");
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("shorter than"), std::string::npos);
  }
  {
    std::vector<uint8_t> f = file_of("{}", {});
    f[0] = 200;  // header length beyond the file
    auto r = parse_safetensors(f, "t.safetensors");
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("exceeds the file"), std::string::npos);
  }
  {
    std::vector<uint8_t> f = file_of("{}", {});
    f[7] = 1;  // 2^56 bytes of header
    auto r = parse_safetensors(f, "t.safetensors");
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("100 MB"), std::string::npos);
  }
  expect_invalid("{not json", {}, "not valid JSON");
  expect_invalid("[1,2]", {}, "not a JSON object");
  expect_invalid(R"({"x":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", d8, "unknown dtype");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[2]}})", d8, "lacks dtype, shape or data_offsets");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8, "bad extent");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8, "need 12");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", d8, "hold 0 bytes");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d8, "16 of a 8-byte data area");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 d8, "overlaps");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8, "a hole");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d8, "cover 4 bytes of a 8-byte");
  expect_invalid(R"({"__metadata__":{"k":1}})", {}, "not a string");
  expect_invalid(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[-1,7]}})", d8, "two non-negative integers");
}

TEST(TrainGptSafetensors, SaveRefusesWhatTheFormatCannotHold) {
  const float v = 1;
  const std::string path = temp_path("refused.safetensors");
  auto st = save_safetensors(path, {{"c", DType::C64, {1}, &v}});
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
  EXPECT_NE(st.message().find("c64"), std::string::npos) << st.message();
  st = save_safetensors(path, {{"a", DType::F32, {1}, &v}, {"a", DType::F32, {1}, &v}});
  EXPECT_NE(st.message().find("appears twice"), std::string::npos) << st.message();
  st = save_safetensors(path, {{"__metadata__", DType::F32, {1}, &v}});
  EXPECT_NE(st.message().find("not allowed"), std::string::npos) << st.message();
  st = save_safetensors(path, {{"a", DType::F32, {2}, nullptr}});
  EXPECT_NE(st.message().find("no data"), std::string::npos) << st.message();
  EXPECT_FALSE(load_safetensors(temp_path("does_not_exist")).is_ok());
  std::remove(path.c_str());
}

TEST(TrainGptTasks, AdditionLinesHaveFixedWidthsAndTheSumReversed) {
  const AdditionTask t3(3, 0), t2(2, 0);
  EXPECT_EQ(t3.prompt(123, 456), "123+456=");
  EXPECT_EQ(t3.answer(123, 456), "9750\n");  // 0579 reversed
  EXPECT_EQ(t3.answer(999, 1), "0001\n");    // 1000 reversed
  EXPECT_EQ(t3.prompt(7, 40), "007+040=");
  EXPECT_EQ(t2.answer(0, 0), "000\n");
  EXPECT_EQ(t2.prompt(5, 99) + t2.answer(5, 99), "05+99=401\n");
  EXPECT_EQ((t2.prompt(5, 99) + t2.answer(5, 99)).size(), t2.line_length());
}

TEST(TrainGptTasks, AdditionBatchesShiftByOneAndScoreOnlyAnswers) {
  AdditionTask task(3, 7);
  Batch b;
  task.next_batch(4, 40, b);
  ASSERT_EQ(b.inputs.size(), 160u);
  int scored = 0;
  for (int64_t r = 0; r < 4; ++r) {
    // Reassemble the row's text: inputs, then its last target if scored.
    for (int64_t t = 0; t + 1 < 40; ++t) {
      const int32_t next = b.inputs[r * 40 + t + 1], target = b.targets[r * 40 + t];
      if (target != kIgnore) {
        EXPECT_EQ(target, next);
        ++scored;
      }
    }
  }
  EXPECT_GT(scored, 20);
  // Scored targets are digits or newlines; an '=' is never a target.
  for (int32_t t : b.targets) {
    if (t == kIgnore) continue;
    EXPECT_TRUE((t >= '0' && t <= '9') || t == '\n') << t;
  }
  // The target after each '=' is the first answer digit (scored).
  for (size_t i = 0; i < b.inputs.size(); ++i)
    if (b.inputs[i] == '=') EXPECT_NE(b.targets[i], kIgnore);
  // Deterministic in the seed.
  AdditionTask again(3, 7);
  Batch b2;
  again.next_batch(4, 40, b2);
  EXPECT_EQ(b.inputs, b2.inputs);
  EXPECT_EQ(b.targets, b2.targets);
}

TEST(TrainGptTasks, AccuracyScoresExactAnswers) {
  AdditionTask task(2, 1);
  // An oracle that reads each prompt and answers right, and one that always says "0\n".
  auto oracle = [](const std::vector<std::vector<int32_t>>& ctxs) {
    std::vector<int> out;
    for (const auto& ctx : ctxs) {
      std::string s(ctx.begin(), ctx.end());
      const size_t plus = s.find('+'), eq = s.find('=');
      const uint64_t a = std::stoull(s.substr(0, plus)), b = std::stoull(s.substr(plus + 1, eq - plus - 1));
      const std::string want = AdditionTask(2, 0).answer(a, b);
      const size_t at = s.size() - eq - 1;
      out.push_back(at < want.size() ? static_cast<uint8_t>(want[at]) : 'x');
    }
    return out;
  };
  std::vector<std::string> shown;
  EXPECT_EQ(task.accuracy(50, 3, 7, oracle, &shown), 1.0);
  ASSERT_EQ(shown.size(), 5u);
  EXPECT_NE(shown[0].find("right (the sum "), std::string::npos) << shown[0];
  auto zero = [](const std::vector<std::vector<int32_t>>& ctxs) {
    std::vector<int> out;
    for (const auto& ctx : ctxs) out.push_back(ctx.back() == '0' ? '\n' : '0');
    return out;
  };
  EXPECT_LT(task.accuracy(50, 3, 16, zero), 0.2);
}

TEST(TrainGptTasks, TextWindowsAreSlicesOfTheFile) {
  const std::string path = temp_path("text.txt");
  const std::string text = "the quick brown fox jumps over the lazy dog";
  { std::ofstream(path, std::ios::binary) << text; }
  TextData data(path, 5);
  Batch b;
  data.next_batch(3, 8, b);
  for (int64_t r = 0; r < 3; ++r) {
    std::string in, tg;
    for (int64_t t = 0; t < 8; ++t) in.push_back(static_cast<char>(b.inputs[r * 8 + t])), tg.push_back(static_cast<char>(b.targets[r * 8 + t]));
    const size_t at = text.find(in);
    ASSERT_NE(at, std::string::npos) << in;
    EXPECT_EQ(text.substr(at + 1, 8), tg);
  }
  Batch too_long;
  EXPECT_THROW(data.next_batch(1, 100, too_long), std::runtime_error);
  std::remove(path.c_str());
}
