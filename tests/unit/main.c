/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs one Check suite of the test executable it is built into: with no
 * argument SUITE_FN (the tests anyone can run), with "root" ROOT_SUITE_FN
 * (the tests that need root), with "bench" BENCH_SUITE_FN (measurements,
 * meson's bench suite).  meson defines the ones a test file has.
 *
 * A group that cannot run here exits 77, which meson reports as SKIP: a
 * test that did not run must not be counted as one that passed.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#ifdef SUITE_FN
Suite *SUITE_FN(void);
#endif
#ifdef ROOT_SUITE_FN
Suite *ROOT_SUITE_FN(void);
#endif
#ifdef BENCH_SUITE_FN
Suite *BENCH_SUITE_FN(void);
#endif

#define EXIT_SKIP 77

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

void
unit_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(EXIT_SKIP);
}

Suite *
unit_one_test_suite(const char *name, SFun setup, SFun teardown,
		    const TTest *test)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *
suite_of(const char *group)
{
	if (!group) {
#ifdef SUITE_FN
		return SUITE_FN();
#endif
	} else if (strcmp(group, "root") == 0) {
#ifdef ROOT_SUITE_FN
		if (geteuid() != 0)
			unit_skip("these tests need root (loop devices, mounts, "
				  "files of another user)");
		return ROOT_SUITE_FN();
#endif
	} else if (strcmp(group, "bench") == 0) {
#ifdef BENCH_SUITE_FN
		return BENCH_SUITE_FN();
#endif
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *group = argc > 1 ? argv[1] : NULL;
	Suite *s = suite_of(group);
	SRunner *sr;
	int failed;

	if (!s) {
		fprintf(stderr, "%s: no test group '%s' in this executable\n",
			argv[0], group ? group : "(default)");
		return EXIT_FAILURE;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
