/* SPDX-License-Identifier: GPL-2.0-or-later */
/* torpor keygen, for the program's command table and the unit tests. */
#ifndef TORPOR_KEYGEN_H
#define TORPOR_KEYGEN_H

/* Run `torpor keygen` with argv[0] = "keygen": EXIT_SUCCESS or
 * EXIT_FAILURE, having logged why. */
int torpor_keygen_main(int argc, char **argv);

#endif
