// train_gpt's data: tokens are bytes (vocabulary 256), so one tokenizer
// serves the built-in task and any text file.
//
// AdditionTask (the default; nothing to download): lines "a+b=c\n" with a and
// b uniform in [0, 10^digits) written in decimal and the sum c written
// LEAST-significant digit first (123+456=975 means 579): a transformer then
// produces each digit from digits it has already seen (the carry flows the
// way it writes), which makes the task learnable by a tiny model in a minute
// of CPU time. Training windows are cut from a stream of such lines; the
// targets of every position that is not part of an answer (its digits and the
// "\n" after them) are kIgnore, so the loss measures exactly the task.
// accuracy(): greedy decoding of fresh problems, scored exactly.
//
// TextData (--data FILE): the file's bytes; windows of T + 1 bytes at
// uniformly random offsets; every target counts.
//
// Both are deterministic functions of their seed (std::mt19937_64 and plain
// modulo reductions, no <random> distributions: the same numbers on every
// platform).
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace train_gpt {

constexpr int kVocab = 256;
constexpr int32_t kIgnore = -100;  // CrossEntropy's ignore_index

// One training batch: inputs / targets [B, T] row-major.
struct Batch {
  int64_t B = 0, T = 0;
  std::vector<int32_t> inputs, targets;
};

class AdditionTask {
 public:
  AdditionTask(int digits, uint64_t seed);
  // "a+b=" and the expected continuation (reversed sum then "\n").
  static std::string prompt(uint64_t a, uint64_t b);
  static std::string answer(uint64_t a, uint64_t b);
  void next_batch(int64_t B, int64_t T, Batch& batch);
  // Greedy-decodes `n` fresh problems (seeded by `seed`) with `next_token`
  // (context -> the model's most likely next byte) and returns the fraction
  // answered exactly; `examples` receives the first few lines as decoded.
  double accuracy(int n, uint64_t seed, const std::function<int(const std::vector<int32_t>&)>& next_token,
                  std::vector<std::string>* examples = nullptr) const;
  int digits() const { return digits_; }
  size_t max_line() const { return static_cast<size_t>(3 * digits_ + 4); }  // a+b=c\n, c up to digits + 1

 private:
  void ensure(size_t n);  // n tokens available from pos_
  int digits_;
  std::mt19937_64 rng_;
  std::vector<int32_t> stream_, mask_;  // tokens; 1 where the token is part of an answer
  size_t pos_ = 0;
  uint64_t draw();
};

class TextData {
 public:
  // Reads the whole file; throws std::runtime_error when it cannot or when it
  // is shorter than T + 1 bytes at the first batch.
  TextData(const std::string& path, uint64_t seed);
  void next_batch(int64_t B, int64_t T, Batch& batch);
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;
  std::mt19937_64 rng_;
};

}  // namespace train_gpt
