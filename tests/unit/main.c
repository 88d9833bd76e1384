/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs the one Check suite this test executable was built with. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"

Suite *SUITE_FN(void);

unsigned long long
unit_bytes_read(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/io", "re");

	if (!f)
		return 0;
	if (fscanf(f, "rchar: %llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

int
main(void)
{
	SRunner *sr = srunner_create(SUITE_FN());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
