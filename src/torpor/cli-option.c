/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "cli-option.h"
#include "log.h"

void
cli_option_begin(void)
{
	/* Reset getopt: the caller may have parsed its own options. */
	optind = 0;
	opterr = 0;
}

int
cli_option_error(const char *command, int c, char *const *argv)
{
	char word[64];

	/* An unknown letter inside "-vx" is optopt; the rest is the word
	 * getopt_long() just passed. */
	if (c == '?' && optopt > 0 && optopt < 0x100)
		snprintf(word, sizeof(word), "-%c", optopt);
	else
		snprintf(word, sizeof(word), "%s", argv[optind - 1]);
	log_error("%s%s%s '%s'%s (torpor %s%s--help)", command ? command : "",
		  command ? ": " : "", c == ':' ? "option" : "unknown option",
		  word, c == ':' ? " needs an argument" : "",
		  command ? command : "", command ? " " : "");
	return -EINVAL;
}
