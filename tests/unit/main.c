/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs the one Check suite this test executable was built with. */
#include <check.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Is program name on $PATH (or in /sbin, /usr/sbin)? */
static bool
have_program(const char *name)
{
	const char *path = getenv("PATH");
	char dirs[4096], file[4096], *save = NULL, *d;

	snprintf(dirs, sizeof(dirs), "%s:/sbin:/usr/sbin", path ? path : "/bin:/usr/bin");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(file, sizeof(file), "%s/%s", d, name);
		if (access(file, X_OK) == 0)
			return true;
	}
	return false;
}

/*
 * What meson says these tests need (TORPOR_UNIT_NEEDS_ROOT=1,
 * TORPOR_UNIT_NEEDS_TOOLS="prog ..."): without it, say why and exit 77,
 * which meson counts as skipped rather than passed.
 */
static bool
needs_unmet(void)
{
	const char *tools = getenv("TORPOR_UNIT_NEEDS_TOOLS");
	char list[1024], *save = NULL, *t;

	if (getenv("TORPOR_UNIT_NEEDS_ROOT") && geteuid() != 0) {
		printf("SKIP: these tests need root (loop devices, mount, swapon)\n");
		return true;
	}
	snprintf(list, sizeof(list), "%s", tools ? tools : "");
	for (t = strtok_r(list, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (!have_program(t)) {
			printf("SKIP: these tests need %s, which is not installed\n", t);
			return true;
		}
	}
	return false;
}

int
main(void)
{
	SRunner *sr;
	int failed, run;

	if (needs_unmet())
		return 77;
	sr = srunner_create(SUITE_FN());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	run = srunner_ntests_run(sr);
	srunner_free(sr);
	/* A selection (CK_INCLUDE_TAGS) that ran nothing proves nothing. */
	if (run == 0) {
		printf("FAIL: no test ran\n");
		return EXIT_FAILURE;
	}
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
