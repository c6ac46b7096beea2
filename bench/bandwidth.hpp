// What the memory-bound families (reduce, rope, elementwise, softmax, norm) share: bytes moved
// against the copy bandwidth measured when the family starts, one table and one
// JSON schema.
#pragma once

#include <cstdio>
#include <string>
#include <utility>

#include "registry.hpp"

namespace baracuda::bench {

// A case's description: its JSON fields "name", "op", "dir", "dtype", "shape", "axes".
struct BandwidthCase {
  std::string name, op;
  bool bwd = false;
  DType dtype = DType::F32;
  Dims shape, axes;
};

struct BandwidthResult {
  std::string error;  // empty = ok
  double us = 0, gbps = 0, frac = 0;
  double bytes = 0;  // counted per run
  int sets = 0;      // independent buffer sets rotated through
  std::string variant, backend, sku;
};

inline void record_sku(BandwidthResult& r, const KernelSku& sku) {
  r.variant = sku.variant;
  r.backend = backend_name(sku.backend);
  r.sku = sku.to_string();
}

// A family's Family::start: measures the copy bandwidth, prints the table header
// and returns the JSON header (`tool` names the results' schema and case set).
inline std::function<JsonObject(Env&)> bandwidth_start(std::string tool) {
  return [tool](Env& env) {
    env.copy_gbps = copy_bandwidth_gbps(env.cs);
    const DeviceMeta& m = env.meta;
    std::printf("device: %s (sm_%d%d, %d SMs, L2 %.0f MB), CUDA runtime %s, driver %s\n", m.device.c_str(), m.cc_major,
                m.cc_minor, m.sms, m.l2 / 1e6, m.runtime.c_str(), m.driver.c_str());
    std::printf("copy bandwidth (D2D memcpy, read+write): %.1f GB/s; %d iters, median\n\n", env.copy_gbps, env.iters);
    std::printf("%-42s %10s %8s %7s  %s\n", "case", "time_us", "GB/s", "%copy", "variant");
    JsonObject h;
    h.str("tool", tool)
        .str("date", utc_now())
        .str("device", m.device)
        .str("compute_capability", std::to_string(m.cc_major) + "." + std::to_string(m.cc_minor))
        .integer("sm_count", m.sms)
        .integer("l2_bytes", static_cast<int64_t>(m.l2))
        .integer("memory_bytes", static_cast<int64_t>(m.mem))
        .str("cuda_runtime", m.runtime)
        .str("cuda_driver", m.driver)
        .num("copy_bandwidth_gbps", env.copy_gbps)
        .integer("iters", env.iters)
        .integer("warmup", env.warmup)
        .str("filter", env.filter);
    return h;
  };
}

// The case: run(env, c, r) fills r.us, bytes, sets and the SKU fields (throwing
// on failure); GB/s and the fraction of the copy bandwidth follow from them.
template <class Run>
Case bandwidth_case(const std::string& family, BandwidthCase c, Run run) {
  return Case{family, c.name, [c, run](Env& env) {
                BandwidthResult r = run_guarded<BandwidthResult>(env, [&](Env& e, BandwidthResult& res) {
                  run(e, res);
                  res.gbps = res.bytes / (res.us * 1e-6) / 1e9;
                  res.frac = e.copy_gbps > 0 ? res.gbps / e.copy_gbps : 0;
                });
                Outcome o;
                o.ok = r.error.empty();
                char line[256];
                if (o.ok)
                  std::snprintf(line, sizeof line, "%-42s %10.1f %8.1f %6.1f%%  ", c.name.c_str(), r.us, r.gbps, 100 * r.frac);
                else
                  std::snprintf(line, sizeof line, "%-42s  ERROR ", c.name.c_str());
                o.row = line + (o.ok ? r.variant : r.error);
                o.json.str("name", c.name)
                    .str("op", c.op)
                    .str("dir", c.bwd ? "bwd" : "fwd")
                    .str("dtype", std::string(dtype_name(c.dtype)))
                    .dims("shape", c.shape)
                    .dims("axes", c.axes)
                    .boolean("ok", o.ok);
                if (o.ok)
                  o.json.num("time_us", r.us).num("gbps", r.gbps).num("frac_copy", r.frac).num("bytes", r.bytes).integer(
                      "sets", r.sets);
                else
                  o.json.str("error", r.error);
                o.json.str("variant", r.variant).str("backend", r.backend).str("sku", r.sku);
                return o;
              }};
}

}  // namespace baracuda::bench
