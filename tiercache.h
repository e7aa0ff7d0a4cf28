// Umbrella header: #include <tiercache/tiercache.h>
#pragma once

#include "allocator/cache.h"         // IWYU pragma: export
#include "allocator/cache_config.h"  // IWYU pragma: export
#include "allocator/cache_stats.h"   // IWYU pragma: export
#include "allocator/handle.h"        // IWYU pragma: export
