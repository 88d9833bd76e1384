/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs the one Check suite this test executable was built with. */
#include <check.h>
#include <stdlib.h>

Suite *SUITE_FN(void);

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
