/* SPDX-License-Identifier: Apache-2.0 */
#include "interpose/guard.h"

CS_TLS int cs_guard_depth;

bool cs_guard_in_call(void) { return cs_guard_depth > 0; }
