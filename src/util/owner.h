/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_UTIL_OWNER_H
#define TORPOR_UTIL_OWNER_H

#include <stdbool.h>
#include <sys/stat.h>

/*
 * Whether what st describes may be changed by root alone: owned by root
 * and writable by neither group nor others.  A directory with the sticky
 * bit (/tmp) may be writable by all: nobody but root can rename or remove
 * what root owns in it.  For what torpor runs as root with: plugins and
 * their folders, the configuration and its folders.
 */
bool owner_root_only(const struct stat *st);

#endif
