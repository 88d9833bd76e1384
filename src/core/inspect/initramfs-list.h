/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an initramfs holds: the names of its entries and the content of a
 * few files asked for, read the way the kernel unpacks it (newc cpio
 * archives, one after another, the first ones often uncompressed early
 * microcode, then a compressed one).  Compressed parts go through the
 * decompressor program installed for their format.
 */
#ifndef TORPOR_INITRAMFS_LIST_H
#define TORPOR_INITRAMFS_LIST_H

#include <stddef.h>
#include <stdint.h>

/* Bounds of what is read: an initramfs past them is refused (-EFBIG). */
#define INITRAMFS_MAX_FILE	(1ULL << 30)	/* bytes of the file itself */
#define INITRAMFS_MAX_BYTES	(4ULL << 30)	/* bytes unpacked, all archives */
#define INITRAMFS_MAX_ENTRIES	1000000u
#define INITRAMFS_MAX_NAME	4096u		/* bytes of one entry's name */
#define INITRAMFS_MAX_CAPTURE	(1024u * 1024u)	/* bytes kept of one file */

struct initramfs_entry {
	char *name;		/* without a leading "/" or "./" */
	uint32_t mode;		/* as in struct stat */
};

/* A file whose content is wanted: name as in initramfs_entry. */
struct initramfs_capture {
	const char *name;
	uint8_t *data;		/* NULL: not in the archive (or not a
				 * regular file, or larger than the bound) */
	size_t len;
};

struct initramfs_listing {
	struct initramfs_entry *entries;
	size_t n_entries;
	struct initramfs_capture *captures;	/* the caller's, filled */
	size_t n_captures;
};

/*
 * Read the initramfs at path into l (zeroed by the caller, with captures
 * set when file contents are wanted; a later archive's copy of a file
 * replaces an earlier one's, as when the kernel unpacks them).  Returns 0,
 * or -errno with a reason in why: -ENOENT no such file, -EBADMSG not a
 * cpio archive or a truncated one, -ENOEXEC compressed with a format whose
 * decompressor is not installed, -EFBIG past a bound.
 */
int initramfs_list(const char *path, struct initramfs_listing *l,
		   char *why, size_t why_size);

/* The entry of that name (without a leading "/"), or NULL. */
const struct initramfs_entry *initramfs_find(const struct initramfs_listing *l,
					     const char *name);

/* Frees the entries and the captured data (not the captures array). */
void initramfs_listing_clear(struct initramfs_listing *l);

#endif
