// baracuda_bench: times the plans of every family (cases/<family>.cpp) with CUDA
// events and reports each figure against the ceiling measured in the same run
// (copy bandwidth; the cuBLAS GEMM rate). See harness.hpp for the method.
//
//   baracuda_bench [--family F]... [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]
//
// --family reduce|attention|rope|elementwise|gemm|softmax|norm|indexing|loss|random|random_sampling|optim (attn = attention, ew = elementwise),
// repeatable; default: all, in that order. --json writes one file per family,
// rewritten after every case; with several families PATH gets the family's name
// (out.json -> out_reduce.json, ...).
// Exit status: 0 all cases ran, 3 some failed (listed in the JSON), 1 no device
// or a setup failure, 2 a bad command line.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "registry.hpp"

using namespace baracuda::bench;

namespace {

struct Options {
  std::vector<const Family*> families;  // empty: all
  std::string json, filter;
  std::optional<int> iters, warmup;  // unset: each family's default
  bool list = false, help = false;
};

void print_usage(std::FILE* to, const char* argv0, const Registry& reg) {
  std::fprintf(to,
               "usage: %s [--family F]... [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list] [--help]\n"
               "  --family F     run family F (repeatable; default: all, in this order):\n",
               argv0);
  for (const Family& f : reg.families()) {
    const std::string alias = f.alias.empty() ? "" : " (or " + f.alias + ")";
    std::fprintf(to, "                   %-20s default %d iters, %d warm-up\n", (f.name + alias).c_str(), f.iters, f.warmup);
  }
  std::fprintf(to,
               "  --json PATH    write each family's results (several families: PATH_<family>.json)\n"
               "  --filter S     only the cases whose name contains S\n"
               "  --iters N      timed runs per case (median), --warmup N untimed runs first\n"
               "  --list         print the selected case names and exit (needs no GPU)\n");
}

// False (reported) on a bad command line.
bool parse_options(int argc, char** argv, const Registry& reg, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--list") o.list = true;
    else if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--json" && (v = next())) o.json = v;
    else if (a == "--filter" && (v = next())) o.filter = v;
    else if (a == "--iters" && (v = next())) o.iters = std::max(1, std::atoi(v));
    else if (a == "--warmup" && (v = next())) o.warmup = std::max(0, std::atoi(v));
    else if (a == "--family" && (v = next())) {
      const Family* f = reg.find(v);
      if (!f) {
        std::fprintf(stderr, "baracuda_bench: unknown family '%s'\n", v);
        return false;
      }
      bool seen = false;
      for (const Family* g : o.families) seen |= g == f;
      if (!seen) o.families.push_back(f);
    } else {
      std::fprintf(stderr, "baracuda_bench: unknown or incomplete option '%s'\n", a.c_str());
      return false;
    }
  }
  if (o.families.empty())
    for (const Family& f : reg.families()) o.families.push_back(&f);
  return true;
}

// The family's JSON file: PATH itself when one family runs, else PATH_<family>.json.
std::string json_path(const Options& o, const Family& f) {
  if (o.json.empty() || o.families.size() == 1) return o.json;
  const std::string ext = ".json";
  const bool has_ext = o.json.size() > ext.size() && o.json.compare(o.json.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? o.json.substr(0, o.json.size() - ext.size()) : o.json) + "_" + f.name + ext;
}

std::vector<const Case*> cases_of(const Registry& reg, const Family& f, const std::string& filter) {
  std::vector<const Case*> out;
  for (const Case& c : reg.cases())
    if (c.family == f.name && c.name.find(filter) != std::string::npos) out.push_back(&c);
  return out;
}

// Runs one family's cases; returns the number that failed, or -1 when the
// family's setup (its ceiling) failed.
int run_family(Env& env, const Family& f, const std::vector<const Case*>& cases, const std::string& path) {
  g_seed = 1;
  JsonObject header;
  try {
    header = f.start(env);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baracuda_bench: %s: setup failed: %s\n", f.name.c_str(), e.what());
    return -1;
  }
  std::vector<JsonObject> results;
  int failed = 0;
  for (const Case* c : cases) {
    Outcome o = c->run(env);
    failed += !o.ok;
    std::printf("%s\n", o.row.c_str());
    std::fflush(stdout);
    results.push_back(std::move(o.json));
    if (!path.empty()) write_file_atomic(path, json_document(header, results));
  }
  std::printf("\n%zu cases, %d failed\n", results.size(), failed);
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  Registry reg;
  register_reduce(reg);
  register_attention(reg);
  register_rope(reg);
  register_elementwise(reg);
  register_gemm(reg);
  register_softmax(reg);
  register_norm(reg);
  register_indexing(reg);
  register_loss(reg);
  register_random(reg);
  register_random_sampling(reg);
  register_optim(reg);
  register_attention_paged(reg);

  Options o;
  if (!parse_options(argc, argv, reg, o)) {
    print_usage(stderr, argv[0], reg);
    return 2;
  }
  if (o.help) {
    print_usage(stdout, argv[0], reg);
    return 0;
  }
  std::vector<std::vector<const Case*>> selected;
  size_t total = 0;
  for (const Family* f : o.families) {
    selected.push_back(cases_of(reg, *f, o.filter));
    total += selected.back().size();
  }
  if (o.list) {
    for (const auto& cases : selected)
      for (const Case* c : cases) std::printf("%s\n", c->name.c_str());
    return 0;
  }
  if (total == 0) {
    std::printf("no case matches --filter '%s'\n", o.filter.c_str());
    return 0;
  }

  Env env;
  env.filter = o.filter;
  try {
    open_device(env);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baracuda_bench: no usable CUDA device: %s\n", e.what());
    return 1;
  }
  int failed = 0;
  bool first = true;
  for (size_t i = 0; i < o.families.size(); ++i) {
    const Family& f = *o.families[i];
    if (selected[i].empty()) continue;  // --filter kept none of its cases
    env.iters = o.iters.value_or(f.iters);
    env.warmup = o.warmup.value_or(f.warmup);
    std::printf("%s== family %s: %zu cases\n", first ? "" : "\n", f.name.c_str(), selected[i].size());
    first = false;
    const int n = run_family(env, f, selected[i], json_path(o, f));
    if (n < 0) {
      close_device(env);
      return 1;
    }
    failed += n;
  }
  close_device(env);
  return failed ? 3 : 0;
}
