// Default sanitizer options of the test binaries (only read when they are
// built with -fsanitize=...): UBSan stops at its first report, so undefined
// behaviour fails the test that hit it instead of scrolling by, and stops with
// abort() so the contract fuzz can print the case it was running
// (tests/contract/fuzz.hpp). UBSAN_OPTIONS in the environment still wins.
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:abort_on_error=1:print_stacktrace=1"; }
