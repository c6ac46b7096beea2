// AdditionTask / TextData (tasks.hpp).
#include "tasks.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace train_gpt {

AdditionTask::AdditionTask(int digits, uint64_t seed) : digits_(digits), rng_(seed) {
  if (digits < 1 || digits > 18) throw std::invalid_argument("AdditionTask: digits must be in [1, 18]");
}

uint64_t AdditionTask::draw() {
  uint64_t bound = 1;
  for (int i = 0; i < digits_; ++i) bound *= 10;
  return rng_() % bound;  // the modulo bias (< 2^-40 here) does not matter for a toy task
}

std::string AdditionTask::prompt(uint64_t a, uint64_t b) { return std::to_string(a) + "+" + std::to_string(b) + "="; }

std::string AdditionTask::answer(uint64_t a, uint64_t b) {
  std::string s = std::to_string(a + b);
  return std::string(s.rbegin(), s.rend()) + "\n";
}

void AdditionTask::ensure(size_t n) {
  if (stream_.size() - pos_ >= n) return;
  // Drop what was consumed, then append lines until n tokens are ahead.
  stream_.erase(stream_.begin(), stream_.begin() + static_cast<std::ptrdiff_t>(pos_));
  mask_.erase(mask_.begin(), mask_.begin() + static_cast<std::ptrdiff_t>(pos_));
  pos_ = 0;
  while (stream_.size() < n) {
    const uint64_t a = draw(), b = draw();
    for (char c : prompt(a, b)) stream_.push_back(static_cast<uint8_t>(c)), mask_.push_back(0);
    for (char c : answer(a, b)) stream_.push_back(static_cast<uint8_t>(c)), mask_.push_back(1);
  }
}

void AdditionTask::next_batch(int64_t B, int64_t T, Batch& batch) {
  batch.B = B, batch.T = T;
  batch.inputs.resize(static_cast<size_t>(B * T));
  batch.targets.resize(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    ensure(static_cast<size_t>(T) + 1);
    for (int64_t t = 0; t < T; ++t) {
      const size_t i = pos_ + static_cast<size_t>(t);
      batch.inputs[static_cast<size_t>(b * T + t)] = stream_[i];
      batch.targets[static_cast<size_t>(b * T + t)] = mask_[i + 1] ? stream_[i + 1] : kIgnore;
    }
    pos_ += static_cast<size_t>(T);
  }
}

double AdditionTask::accuracy(int n, uint64_t seed, const std::function<int(const std::vector<int32_t>&)>& next_token,
                              std::vector<std::string>* examples) const {
  AdditionTask fresh(digits_, seed);
  int right = 0;
  for (int k = 0; k < n; ++k) {
    const uint64_t a = fresh.draw(), b = fresh.draw();
    const std::string p = prompt(a, b), want = answer(a, b);
    std::vector<int32_t> ctx(p.begin(), p.end());
    std::string got;
    while (got.size() < want.size() + 1) {
      const int t = next_token(ctx);
      got.push_back(static_cast<char>(t));
      ctx.push_back(t);
      if (t == '\n') break;
    }
    if (got == want) ++right;
    if (examples && examples->size() < 5) {
      std::string shown = got;
      if (!shown.empty() && shown.back() == '\n') shown.pop_back();
      examples->push_back(p + shown + (got == want ? "   (right)" : "   (wrong: " + want.substr(0, want.size() - 1) + ")"));
    }
  }
  return n > 0 ? static_cast<double>(right) / n : 0.0;
}

TextData::TextData(const std::string& path, uint64_t seed) : path_(path), rng_(seed) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("--data " + path + ": cannot open");
  bytes_.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void TextData::next_batch(int64_t B, int64_t T, Batch& batch) {
  if (bytes_.size() < static_cast<size_t>(T) + 1)
    throw std::runtime_error("--data " + path_ + ": " + std::to_string(bytes_.size()) +
                             " bytes, fewer than the sequence length + 1 (" + std::to_string(T + 1) + ")");
  batch.B = B, batch.T = T;
  batch.inputs.resize(static_cast<size_t>(B * T));
  batch.targets.resize(static_cast<size_t>(B * T));
  const uint64_t starts = bytes_.size() - static_cast<size_t>(T);  // offsets 0 .. size - T - 1
  for (int64_t b = 0; b < B; ++b) {
    const size_t s = static_cast<size_t>(rng_() % starts);
    for (int64_t t = 0; t < T; ++t) {
      batch.inputs[static_cast<size_t>(b * T + t)] = bytes_[s + static_cast<size_t>(t)];
      batch.targets[static_cast<size_t>(b * T + t)] = bytes_[s + static_cast<size_t>(t) + 1];
    }
  }
}

}  // namespace train_gpt
