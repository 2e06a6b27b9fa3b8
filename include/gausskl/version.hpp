#pragma once

#include "gausskl/export.hpp"

#define GAUSSKL_VERSION_MAJOR 0
#define GAUSSKL_VERSION_MINOR 1
#define GAUSSKL_VERSION_PATCH 0

namespace gausskl {
// "MAJOR.MINOR.PATCH" of the library actually linked.
GAUSSKL_API const char* version();
}  // namespace gausskl
