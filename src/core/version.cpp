#include "baracuda/version.hpp"

namespace baracuda {

// The macro as the library saw it when it was compiled: a program compiled
// against other headers still learns which library it loaded.
const char* version() { return BARACUDA_VERSION_STRING; }

}  // namespace baracuda
