// Umbrella header: #include <tiercache/tiercache.h>
//
// The public API is this header and what it includes (cmake/install.cmake
// installs exactly that set under include/tiercache/, sub-folders kept):
// the Cache facade, its config, stats and handles, and the small headers
// those name (compressed refs, item fates, config errors and schema, sizes,
// policy and bind-policy names, tier configs). The parts' own headers stay
// in the source tree. The includes below are relative to the source root
// (on the include path in the build tree) and to this folder once
// installed, where the sub-folders sit beside this file.
#pragma once

#include "allocator/cache.h"         // IWYU pragma: export
#include "allocator/cache_config.h"  // IWYU pragma: export
#include "allocator/cache_stats.h"   // IWYU pragma: export
#include "allocator/handle.h"        // IWYU pragma: export
