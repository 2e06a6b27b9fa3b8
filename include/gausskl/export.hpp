#pragma once

// Symbols of the public API. Everything else is hidden in shared builds.
#if defined(GAUSSKL_SHARED) && defined(GAUSSKL_BUILDING)
#define GAUSSKL_API __attribute__((visibility("default")))
#else
#define GAUSSKL_API
#endif
