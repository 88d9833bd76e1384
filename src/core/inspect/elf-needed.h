/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shared libraries an ELF file names (DT_NEEDED), read without loading
 * it: what a plugin needs beside it in an initramfs.
 */
#ifndef TORPOR_ELF_NEEDED_H
#define TORPOR_ELF_NEEDED_H

#include <stddef.h>

#define ELF_NEEDED_MAX		64	/* names kept at most */
#define ELF_NEEDED_NAME		256	/* bytes of a name, with its NUL */
#define ELF_NEEDED_MAX_FILE	(256u << 20)

struct elf_needed {
	char names[ELF_NEEDED_MAX][ELF_NEEDED_NAME];
	size_t n;
};

/*
 * Fill ret with the DT_NEEDED names of the ELF file at path (of this
 * machine's class and byte order).  -ENOEXEC when it is not such a file or
 * its dynamic section does not hold together, -EFBIG past a bound,
 * -errno when it cannot be read.
 */
int elf_needed(const char *path, struct elf_needed *ret);

#endif
