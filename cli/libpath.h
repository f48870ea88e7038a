/* SPDX-License-Identifier: Apache-2.0 */
/* Where libcudasnap.so is, relative to the tool's own executable (/proc/self/exe), so that the
 * tool and the library it preloads always come from the same build or installation:
 *   <dir>/../lib/libcudasnap.so        installed (cmake --install: bin/cudasnap, lib/...)
 *   <dir>/../interpose/libcudasnap.so  the build tree (cli/cudasnap, interpose/...) */
#ifndef CS_CLI_LIBPATH_H
#define CS_CLI_LIBPATH_H

#include <stddef.h>

/* 0 with the library's absolute path (symbolic links resolved) in buf; or -1 with the places
 * looked at, for the error message, in buf. */
int cs_libpath_find(char *buf, size_t len);

#endif
