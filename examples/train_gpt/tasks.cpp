// AdditionTask / TextData (tasks.hpp).
#include "tasks.hpp"

#include <algorithm>
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

namespace {
std::string padded(uint64_t v, int width) {
  std::string s = std::to_string(v);
  return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(s.size()))), '0') + s;
}
}  // namespace

std::string AdditionTask::prompt(uint64_t a, uint64_t b) const {
  return padded(a, digits_) + "+" + padded(b, digits_) + "=";
}

std::string AdditionTask::answer(uint64_t a, uint64_t b) const {
  const std::string s = padded(a + b, digits_ + 1);
  return std::string(s.rbegin(), s.rend()) + "\n";
}

void AdditionTask::next_batch(int64_t B, int64_t T, Batch& batch) {
  batch.B = B, batch.T = T;
  batch.inputs.resize(static_cast<size_t>(B * T));
  batch.targets.resize(static_cast<size_t>(B * T));
  std::vector<int32_t> tokens;
  std::vector<uint8_t> scored;
  for (int64_t b = 0; b < B; ++b) {
    // Whole lines from the row's first position on (the last one cut short).
    tokens.clear();
    scored.clear();
    while (tokens.size() < static_cast<size_t>(T) + 1) {
      const uint64_t x = draw(), y = draw();
      for (char ch : prompt(x, y)) tokens.push_back(static_cast<uint8_t>(ch)), scored.push_back(0);
      for (char ch : answer(x, y)) tokens.push_back(static_cast<uint8_t>(ch)), scored.push_back(1);
    }
    for (int64_t t = 0; t < T; ++t) {
      const size_t i = static_cast<size_t>(t);
      batch.inputs[static_cast<size_t>(b * T + t)] = tokens[i];
      batch.targets[static_cast<size_t>(b * T + t)] = scored[i + 1] ? tokens[i + 1] : kIgnore;
    }
  }
}

double AdditionTask::accuracy(int n, uint64_t seed, size_t batch, const NextTokens& next_tokens,
                              std::vector<std::string>* examples) const {
  AdditionTask fresh(digits_, seed);
  int right = 0;
  for (int first = 0; first < n; first += static_cast<int>(batch)) {
    const int m = std::min<int>(static_cast<int>(batch), n - first);
    std::vector<std::vector<int32_t>> ctx(static_cast<size_t>(m));
    std::vector<std::string> want(static_cast<size_t>(m)), got(static_cast<size_t>(m)), prompts(static_cast<size_t>(m));
    for (size_t k = 0; k < static_cast<size_t>(m); ++k) {
      const uint64_t a = fresh.draw(), b = fresh.draw();
      prompts[k] = prompt(a, b);
      want[k] = answer(a, b);
      ctx[k].assign(prompts[k].begin(), prompts[k].end());
    }
    // Every row decodes until its newline or one byte past its answer's length.
    for (size_t step = 0; step <= static_cast<size_t>(digits_) + 2; ++step) {
      const std::vector<int> next = next_tokens(ctx);
      for (size_t k = 0; k < static_cast<size_t>(m); ++k) {
        if ((!got[k].empty() && got[k].back() == '\n') || got[k].size() > want[k].size()) continue;
        got[k].push_back(static_cast<char>(next[k]));
        ctx[k].push_back(next[k]);
      }
    }
    for (size_t k = 0; k < static_cast<size_t>(m); ++k) {
      if (got[k] == want[k]) ++right;
      if (examples && examples->size() < 5) {
        std::string shown = got[k];
        if (!shown.empty() && shown.back() == '\n') shown.pop_back();
        const std::string rev = want[k].substr(0, want[k].size() - 1);  // the expected digits, reversed
        const std::string sum(rev.rbegin(), rev.rend());
        examples->push_back(prompts[k] + shown +
                            (got[k] == want[k] ? "   right (the sum " + sum + " written backwards)"
                                               : "   wrong (expected " + rev + ", the sum " + sum + " written backwards)"));
      }
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
