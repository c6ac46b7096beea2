// BARACUDA_HOST_DEVICE lives in the public headers (the device-side
// elementwise template uses it); this forwarding header keeps the internal
// include path.
#pragma once
#include "baracuda/core/host_device.hpp"
