#include "gausskl/version.hpp"

#define GAUSSKL_STR2(x) #x
#define GAUSSKL_STR(x) GAUSSKL_STR2(x)

namespace gausskl {

const char* version() {
  return GAUSSKL_STR(GAUSSKL_VERSION_MAJOR) "." GAUSSKL_STR(GAUSSKL_VERSION_MINOR) "." GAUSSKL_STR(
      GAUSSKL_VERSION_PATCH);
}

}  // namespace gausskl
