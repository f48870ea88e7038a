#include "interpose/guard.h"

CS_TLS int cs_guard_depth;
