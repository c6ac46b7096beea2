// train_gpt's data: tokens are bytes (vocabulary 256), so one tokenizer
// serves the built-in task and any text file.
//
// AdditionTask (the default; nothing to download): lines "a+b=c\n" with a and
// b uniform in [0, 10^digits) written with exactly `digits` digits (leading
// zeros) and the sum c written with digits + 1 digits, LEAST-significant digit
// first (3 digits: 123+456=9750 means 0579): every line has the same layout,
// and a transformer produces each digit of the sum from digits it has
// already seen (the carry flows the way it writes), which makes the task
// learnable by a tiny model in a minute of CPU time. Each training row starts
// at the beginning of a line and holds whole lines (the last one cut at T + 1
// tokens), so a digit's role is also told by its position. The targets of
// every position that is not part of an answer (its digits and the "\n"
// after them) are kIgnore: the loss measures exactly the task.
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
  std::string prompt(uint64_t a, uint64_t b) const;
  std::string answer(uint64_t a, uint64_t b) const;
  void next_batch(int64_t B, int64_t T, Batch& batch);
  // Greedy-decodes `n` fresh problems (seeded by `seed`) and returns the
  // fraction answered exactly. `next_tokens` maps a batch of contexts to the
  // model's most likely next byte of each (it is called with at most
  // `batch` contexts at a time); `examples` receives the first few lines as
  // decoded.
  using NextTokens = std::function<std::vector<int>(const std::vector<std::vector<int32_t>>&)>;
  double accuracy(int n, uint64_t seed, size_t batch, const NextTokens& next_tokens,
                  std::vector<std::string>* examples = nullptr) const;
  int digits() const { return digits_; }
  size_t line_length() const { return static_cast<size_t>(3 * digits_ + 4); }  // a+b=c\n

 private:
  int digits_;
  std::mt19937_64 rng_;
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
