/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who may change a file (see owner.h). */
#include "owner.h"

bool
owner_root_only(const struct stat *st)
{
	if (st->st_uid != 0)
		return false;
	if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
		return true;
	return !(st->st_mode & (S_IWGRP | S_IWOTH));
}
