/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Paths a test build lets the tests move (see test-hook.h). */
#include <stdlib.h>

#include "torpor-build.h"

#include "test-hook.h"

const char *
test_hook_path(const char *variable, const char *path)
{
#if TORPOR_TEST_HOOKS
	const char *p = getenv(variable);

	if (p && p[0] == '/')
		return p;
#else
	(void)variable;
#endif
	return path;
}
