// The bench's registry: families (reduce, attention, rope, elementwise, gemm, ...) and their cases.
// A family's case file (cases/<family>.cpp) defines register_<family>(Registry&),
// which adds the family (its default iteration counts, and how it starts: the
// ceiling it measures, its table header and its JSON file's header fields) and
// its cases; main.cpp calls every register_ function and runs what the command
// line selects.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "json_writer.hpp"

namespace baracuda::bench {

// What one case reports: the table line and its object in the family's JSON file.
struct Outcome {
  bool ok = false;
  std::string row;
  JsonObject json;
};

struct Case {
  std::string family;
  std::string name;  // unique over every family; --filter matches it
  std::function<Outcome(Env&)> run;  // never throws
};

struct Family {
  std::string name;   // --family value, and the name of its results
  std::string alias;  // another accepted --family value ("attn"), may be empty
  int iters = 30, warmup = 5;  // defaults of --iters / --warmup
  // Measures the family's ceiling, prints its table header and returns the JSON
  // file's header fields; throws on a CUDA error.
  std::function<JsonObject(Env&)> start;
};

class Registry {
 public:
  void add_family(Family f) { families_.push_back(std::move(f)); }
  void add_case(Case c) {
    for (const Case& o : cases_)
      if (o.name == c.name) throw std::logic_error("bench: case " + c.name + " registered twice");
    cases_.push_back(std::move(c));
  }
  const std::vector<Family>& families() const { return families_; }
  const std::vector<Case>& cases() const { return cases_; }
  // The family named or aliased `name`, or nullptr.
  const Family* find(const std::string& name) const {
    for (const Family& f : families_)
      if (f.name == name || (!f.alias.empty() && f.alias == name)) return &f;
    return nullptr;
  }

 private:
  std::vector<Family> families_;
  std::vector<Case> cases_;
};

void register_reduce(Registry& r);
void register_attention(Registry& r);
void register_rope(Registry& r);
void register_elementwise(Registry& r);
void register_gemm(Registry& r);
void register_softmax(Registry& r);
void register_norm(Registry& r);
void register_indexing(Registry& r);
void register_loss(Registry& r);
void register_random(Registry& r);
void register_random_sampling(Registry& r);
void register_optim(Registry& r);
void register_attention_paged(Registry& r);

// Runs run(env, r) on a fresh R (which has `error`), turning an exception into
// r.error (what run filled before it threw stays). After an error, a lost
// context (sticky fault) is recorded; once it is lost, cases are skipped.
template <class R, class Run>
R run_guarded(Env& env, Run&& run) {
  R r;
  if (env.context_lost) {
    r.error = "skipped: CUDA context lost in an earlier case";
    return r;
  }
  try {
    run(env, r);
  } catch (const std::exception& e) {  // Status failures, CUDA errors, allocation failures
    r.error = e.what();
  }
  if (!r.error.empty() && context_lost_after_error(env.cs)) {
    env.context_lost = true;
    r.error += " [CUDA context lost]";
  }
  return r;
}

}  // namespace baracuda::bench
