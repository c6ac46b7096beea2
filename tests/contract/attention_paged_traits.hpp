// Contract traits of the paged-KV family: PagedAttentionPlan, PagedKvAppendPlan.
// The index tensors get valid values (pages in [0, num_pages), seq_lens in
// range; the append's pages distinct, so no two sequences write one slot) and
// are values_checked (the CPU reference validates them: refusing a mutated
// one is fine).
#pragma once

#include <algorithm>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/attention_paged.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace paged_contract {

using baracuda::PagedAttentionDescriptor;
using baracuda::PagedKvAppendDescriptor;

inline constexpr DType kFp[] = {DType::F32, DType::F16, DType::BF16};

// Distinct pages when the pool has enough (a shuffled, evenly spread subset of
// 0..num_pages-1; repeating modulo the pool when it has too few). Nothing
// sized by num_pages is allocated (the fuzz makes it huge).
inline std::function<void(Rng&, std::vector<double>&)> table_values(int64_t num_pages) {
  return [num_pages](Rng& rng, std::vector<double>& v) {
    const int64_t n = static_cast<int64_t>(v.size()), pool = std::max<int64_t>(num_pages, 1);
    std::vector<int64_t> p(v.size());
    std::iota(p.begin(), p.end(), int64_t{0});
    std::shuffle(p.begin(), p.end(), rng);
    const int64_t step = pool >= n && n > 0 ? pool / n : 1;
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((p[i] * step) % pool);
  };
}
inline std::function<void(Rng&, std::vector<double>&)> len_values(int64_t lo, int64_t hi) {
  return [lo, hi](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = static_cast<double>(std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi))(rng));
  };
}

inline PagedAttentionDescriptor valid_attn(Rng& rng) {
  Fuzz f(rng);
  PagedAttentionDescriptor d;
  d.dtype = kFp[f.range(0, 2)];
  d.batch = f.range(1, 3);
  d.kv_heads = f.range(1, 2);
  d.heads = d.kv_heads * f.range(1, 3);
  d.q_len = f.range(1, 3);
  d.head_dim = 8 * f.range(1, 3);
  d.page_size = f.pick<int64_t>({1, 3, 4, 16});
  d.max_pages = f.range(1, 4);
  while (d.max_pages * d.page_size < d.q_len) ++d.max_pages;
  d.num_pages = d.batch * d.max_pages + f.range(0, 2);
  d.causal = f.chance(0.7);
  if (f.chance(0.3)) d.softcap = 2.0;
  if (f.chance(0.3)) d.scale = 0.25;
  d.save_lse = f.chance(0.5);
  return d;
}

inline PagedKvAppendDescriptor valid_append(Rng& rng) {
  Fuzz f(rng);
  PagedKvAppendDescriptor d;
  d.dtype = kFp[f.range(0, 2)];
  d.batch = f.range(1, 3);
  d.kv_heads = f.range(1, 2);
  d.new_len = f.range(1, 3);
  d.head_dim = 8 * f.range(1, 2);
  d.page_size = f.pick<int64_t>({1, 4, 16});
  d.max_pages = f.range(1, 3);
  while (d.max_pages * d.page_size < d.new_len) ++d.max_pages;
  d.num_pages = d.batch * d.max_pages + f.range(0, 2);
  return d;
}

}  // namespace paged_contract

struct PagedAttentionTraits {
  using Plan = baracuda::PagedAttentionPlan;
  using Desc = baracuda::PagedAttentionDescriptor;
  using Args = baracuda::PagedAttentionArgs;
  static constexpr const char* kName = "PagedAttentionPlan";

  static Desc valid_desc(Rng& rng) { return paged_contract::valid_attn(rng); }
  static std::vector<Desc> zero_size_descs() {
    Rng rng(1);
    Desc a = valid_desc(rng);
    a.batch = 0;
    Desc b = valid_desc(rng);
    b.q_len = 0;
    Desc c = valid_desc(rng);
    c.heads = 0;
    return {a, b, c};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Rng rng(2);
      Desc d = paged_contract::valid_attn(rng);
      fn(d);
      return d;
    };
    return {{"heads_not_multiple", with([](Desc& d) { d.kv_heads = 2, d.heads = 3; })},
            {"page_size_zero", with([](Desc& d) { d.page_size = 0; })},
            {"batch_negative", with([](Desc& d) { d.batch = -1; })},
            {"scale_inf", with([](Desc& d) { d.scale = 1.0 / 0.0; })},
            {"softcap_negative", with([](Desc& d) { d.softcap = -1; })},
            {"dtype_f64", with([](Desc& d) { d.dtype = DType::F64; })},
            {"cap_past_int32", with([](Desc& d) { d.max_pages = int64_t{1} << 30, d.page_size = 64; })}};
  }
  static std::vector<Desc> workspace_descs() {
    Rng rng(3);
    Desc d = valid_desc(rng);
    d.dtype = DType::BF16, d.head_dim = 64, d.max_pages = 64, d.page_size = 16, d.num_pages = d.batch * 64;
    return {d};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("q", d.dtype, p.q_shape(), [](Args& a, const TensorMut& t) { a.q = t; }));
    v.push_back(input<Args>("k_pages", d.dtype, p.pages_shape(), [](Args& a, const TensorMut& t) { a.k_pages = t; }));
    v.push_back(input<Args>("v_pages", d.dtype, p.pages_shape(), [](Args& a, const TensorMut& t) { a.v_pages = t; }));
    auto tab = input<Args>("block_table", DType::I32, p.block_table_shape(), [](Args& a, const TensorMut& t) { a.block_table = t; });
    tab.values = paged_contract::table_values(d.num_pages);
    tab.values_checked = true;
    v.push_back(tab);
    auto lens = input<Args>("seq_lens", DType::I32, p.seq_lens_shape(), [](Args& a, const TensorMut& t) { a.seq_lens = t; });
    lens.values = paged_contract::len_values(d.q_len, d.max_pages * d.page_size);
    lens.values_checked = true;
    v.push_back(lens);
    v.push_back(output<Args>("out", d.dtype, p.q_shape(), [](Args& a, const TensorMut& t) { a.out = t; }));
    auto lse = output<Args>("lse", DType::F32, p.lse_shape(), [](Args& a, const TensorMut& t) { a.lse = t; });
    if (!d.save_lse) lse.role = Role::Unused;
    lse.optional = true;
    v.push_back(lse);
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto v = extent_mutators<Desc>({&Desc::batch, &Desc::heads, &Desc::kv_heads, &Desc::q_len, &Desc::head_dim,
                                    &Desc::num_pages, &Desc::page_size, &Desc::max_pages});
    v.push_back({"desc.scale_any", [](Desc& d, Fuzz& f) { d.scale = f.any_double(); }});
    v.push_back({"desc.softcap_any", [](Desc& d, Fuzz& f) { d.softcap = f.any_double(); }});
    v.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    return v;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "PagedAttentionDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", B " << d.batch << ", Hq " << d.heads
       << ", Hkv " << d.kv_heads << ", Lq " << d.q_len << ", D " << d.head_dim << ", num_pages " << d.num_pages
       << ", page_size " << d.page_size << ", max_pages " << d.max_pages << ", scale "
       << (d.scale ? std::to_string(*d.scale) : "default") << ", causal " << d.causal << ", softcap " << d.softcap
       << ", save_lse " << d.save_lse << "}";
    return os.str();
  }
};

struct PagedKvAppendTraits {
  using Plan = baracuda::PagedKvAppendPlan;
  using Desc = baracuda::PagedKvAppendDescriptor;
  using Args = baracuda::PagedKvAppendArgs;
  static constexpr const char* kName = "PagedKvAppendPlan";

  static Desc valid_desc(Rng& rng) { return paged_contract::valid_append(rng); }
  static std::vector<Desc> zero_size_descs() {
    Rng rng(4);
    Desc a = valid_desc(rng);
    a.batch = 0, a.num_pages = 0;
    Desc b = valid_desc(rng);
    b.head_dim = 0;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Rng rng(5);
      Desc d = paged_contract::valid_append(rng);
      fn(d);
      return d;
    };
    return {{"page_size_zero", with([](Desc& d) { d.page_size = 0; })},
            {"new_len_negative", with([](Desc& d) { d.new_len = -1; })},
            {"dtype_i32", with([](Desc& d) { d.dtype = DType::I32; })},
            {"pool_too_large", with([](Desc& d) { d.num_pages = int64_t{1} << 62, d.page_size = 16; })}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("k_new", d.dtype, p.new_shape(), [](Args& a, const TensorMut& t) { a.k_new = t; }));
    v.push_back(input<Args>("v_new", d.dtype, p.new_shape(), [](Args& a, const TensorMut& t) { a.v_new = t; }));
    auto tab = input<Args>("block_table", DType::I32, p.block_table_shape(), [](Args& a, const TensorMut& t) { a.block_table = t; });
    tab.values = paged_contract::table_values(d.num_pages);
    tab.values_checked = true;
    v.push_back(tab);
    auto lens = input<Args>("seq_lens", DType::I32, p.seq_lens_shape(), [](Args& a, const TensorMut& t) { a.seq_lens = t; });
    lens.values = paged_contract::len_values(0, d.max_pages * d.page_size - d.new_len);
    lens.values_checked = true;
    v.push_back(lens);
    v.push_back(inout<Args>("k_pages", d.dtype, p.pages_shape(), [](Args& a, const TensorMut& t) { a.k_pages = t; }));
    v.push_back(inout<Args>("v_pages", d.dtype, p.pages_shape(), [](Args& a, const TensorMut& t) { a.v_pages = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto v = extent_mutators<Desc>({&Desc::batch, &Desc::kv_heads, &Desc::new_len, &Desc::head_dim, &Desc::num_pages,
                                    &Desc::page_size, &Desc::max_pages});
    v.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    return v;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "PagedKvAppendDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", B " << d.batch << ", Hkv "
       << d.kv_heads << ", Lnew " << d.new_len << ", D " << d.head_dim << ", num_pages " << d.num_pages
       << ", page_size " << d.page_size << ", max_pages " << d.max_pages << "}";
    return os.str();
  }
};

}  // namespace contract
