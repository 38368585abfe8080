#pragma once
// libfuse 3.14's low-level API (Debian 12): FuseKit speaks it, and nothing else of libfuse.
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
