// Compiled (never linked) by compile_check.cmake: dropping a Status or a
// Result must be diagnosed. Each BARACUDA_SNIPPET_* macro selects one misuse;
// without any of them the snippet ignores every value on purpose ((void)) and
// must compile cleanly, which proves a failure of the others is the
// diagnostic and not a broken snippet.
#include <baracuda/baracuda.hpp>

baracuda::Status make_status();
baracuda::Result<int> make_result();

void use(const baracuda::ReducePlan& plan, const baracuda::ReduceArgs& args) {
#if defined(BARACUDA_SNIPPET_DROP_STATUS)
  make_status();
#elif defined(BARACUDA_SNIPPET_DROP_RESULT)
  make_result();
#elif defined(BARACUDA_SNIPPET_DROP_RUN)
  plan.run(baracuda::Stream::cpu(), baracuda::Workspace::none(), args);  // a failing run() would go unnoticed
#elif defined(BARACUDA_SNIPPET_DROP_SELECT)
  baracuda::ReducePlan::select(baracuda::Stream::cpu(), baracuda::ReduceDescriptor{});
#else
  (void)make_status();
  (void)make_result();
  (void)plan.run(baracuda::Stream::cpu(), baracuda::Workspace::none(), args);
  (void)baracuda::ReducePlan::select(baracuda::Stream::cpu(), baracuda::ReduceDescriptor{});
#endif
}
