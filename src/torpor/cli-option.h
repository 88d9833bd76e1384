/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The commands' wrong options, said the one way: with the program's
 * prefix ("torpor: bench: unknown option '--x' (torpor bench --help)"),
 * never getopt's own message, which starts with argv[0].
 */
#ifndef TORPOR_CLI_OPTION_H
#define TORPOR_CLI_OPTION_H

/* Before each getopt_long() loop: its optstring must begin with ':'. */
void cli_option_begin(void);

/*
 * getopt_long() returned c, '?' (unknown option) or ':' (an option
 * without its argument): logs it for command (NULL: the program's own
 * options) and returns -EINVAL.
 */
int cli_option_error(const char *command, int c, char *const *argv);

#endif
