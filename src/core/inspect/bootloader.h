/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which kernel the next boot starts, from the boot loader's own files and
 * variables (GRUB's grub.cfg, grubenv and /etc/default/grub; systemd-boot's
 * loader entries, loader.conf and EFI variables), and whether torpor could
 * make the next boot start another entry once.  An image written by one
 * kernel and offered to another is refused at resume (issue 42): this is
 * how the hibernate side will see that coming.  It reads, it never writes;
 * grubenv_with_next_entry() only builds a block in memory.
 *
 * Every file is read under a root given by the caller (tests give a fake
 * tree), without following a symbolic link at its last component, up to a
 * bound; what does not parse is refused with -errno and a reason, never
 * guessed at.
 */
#ifndef TORPOR_BOOTLOADER_H
#define TORPOR_BOOTLOADER_H

#include <stdbool.h>
#include <stddef.h>

#define BOOT_ENTRIES_MAX 128
#define BOOT_NAME_SIZE 256	/* ids, titles, menu paths */
#define BOOT_RELEASE_SIZE 65	/* struct utsname's release */
#define GRUB_CFG_MAX (1024 * 1024)
#define GRUBENV_SIZE 1024
/* The vendor GUID of systemd's loader variables (LoaderEntryOneShot...). */
#define BOOT_LOADER_GUID "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"

enum boot_loader {
	BOOT_LOADER_UNKNOWN,
	BOOT_LOADER_GRUB,
	BOOT_LOADER_SYSTEMD_BOOT,
};

/* One menu entry, or (GRUB) one submenu. */
struct boot_entry {
	char id[BOOT_NAME_SIZE];	/* GRUB: --id; systemd-boot: file name */
	char title[BOOT_NAME_SIZE];
	char path[BOOT_NAME_SIZE];	/* GRUB: "1>2"; systemd-boot: the id */
	char release[BOOT_RELEASE_SIZE]; /* "" when the kernel's is unknown */
	char sort_key[BOOT_NAME_SIZE];	/* systemd-boot */
	char version[BOOT_NAME_SIZE];	/* systemd-boot */
	int parent;			/* GRUB: index of its submenu, or -1 */
	unsigned position;		/* GRUB: among its parent's children */
	bool submenu;
	bool recovery;			/* GRUB: Debian's recovery mode entry */
};

struct boot_menu {
	size_t n;
	struct boot_entry e[BOOT_ENTRIES_MAX];
};

/* What grub.cfg says about its default, besides its entries. */
struct grub_cfg_default {
	char value[BOOT_NAME_SIZE];	/* the last "set default=" outside
					 * the next_entry branch, unexpanded */
	bool set;
	bool reads_next_entry;		/* default="${next_entry}" */
};

struct grubenv {
	char saved_entry[BOOT_NAME_SIZE];
	char next_entry[BOOT_NAME_SIZE];
};

/* What the next boot starts.  Large: allocate it. */
struct boot_next {
	enum boot_loader loader;
	struct boot_menu menu;
	int next;		/* entry the next boot starts, or -1 */
	int by_default;		/* entry it starts without a one-shot, or -1 */
	int running;		/* first entry (not recovery) of the running
				 * kernel's release, or -1 */
	char next_by[BOOT_NAME_SIZE];	/* where the answer comes from */
	bool one_shot;		/* a one-shot boot is already set */
	char one_shot_entry[BOOT_NAME_SIZE];
	char grub_default[BOOT_NAME_SIZE]; /* /etc/default/grub, "" none */
	bool can_redirect;	/* a one-shot could be written */
	char cannot_redirect[BOOT_NAME_SIZE]; /* why not */
	bool have_grubenv;	/* GRUB: grubenv was read, a valid block */
	char grubenv[GRUBENV_SIZE]; /* that block, as read: what a one-shot
				     * is built on and may only replace */
};

/*
 * Work out, under root ("/" on the machine), which boot loader starts the
 * next boot and which of its entries it starts; running is the running
 * kernel's release (uname -r).  Writes nothing.  0 with *ret filled (the
 * loader may be BOOT_LOADER_UNKNOWN, next -1), or -errno with a reason in
 * why when a file is hostile, truncated or beyond its bound, or when the
 * default cannot be resolved to an entry: -EBADMSG malformed, -EFBIG too
 * big, -E2BIG too many entries, -ENOENT the default names no entry,
 * -EOPNOTSUPP a default this does not follow (a variable, @saved).
 */
int boot_next_inspect(const char *root, const char *running,
		      struct boot_next *ret, char *why, size_t why_size);

/* The name of a loader, for messages: "grub", "systemd-boot", "unknown". */
const char *boot_loader_name(enum boot_loader l);

/*
 * Parse grub.cfg text (len bytes, at most GRUB_CFG_MAX): its menuentry and
 * submenu blocks at any depth GRUB shows them (not inside functions), and
 * its top-level default.  0, or -EBADMSG (unbalanced braces, an open
 * quote, a NUL byte, an entry without a title, nesting deeper than 8),
 * -E2BIG (more than BOOT_ENTRIES_MAX), -ENAMETOOLONG (a title or id of
 * BOOT_NAME_SIZE or more), with a reason in why.
 */
int grub_cfg_parse(const char *text, size_t len, struct boot_menu *m,
		   struct grub_cfg_default *d, char *why, size_t why_size);

/*
 * The entry GRUB boots for a default or next_entry value: a number, an id
 * or a title, or a ">" path of them through submenus.  Its index, or
 * -ENOENT (no such entry), -EISDIR (it names a submenu), -EOPNOTSUPP (a
 * variable).
 */
int grub_menu_find(const struct boot_menu *m, const char *value);

/*
 * Parse a grubenv block: exactly GRUBENV_SIZE bytes beginning with
 * "# GRUB Environment Block\n", "key=value\n" lines (a backslash escapes
 * a newline or a backslash in a value), "#" lines and padding.  0, or
 * -EBADMSG with a reason (another size, no header, a line without "=" or
 * without its newline, a NUL byte), -ENAMETOOLONG (a value too long for
 * struct grubenv).
 */
int grubenv_parse(const char *block, size_t len, struct grubenv *env,
		  char *why, size_t why_size);

/*
 * Build in out (GRUBENV_SIZE bytes) the block that block (a valid grubenv)
 * becomes with next_entry=id: every other line kept as it is, the old
 * next_entry lines dropped, "#" padding to the exact size.  0, -EINVAL (id
 * empty or holding a control character), -ENOSPC (it would not fit), or
 * grubenv_parse()'s errors; out is untouched on failure.
 */
int grubenv_with_next_entry(const char *block, size_t len, const char *id,
			    char *out, char *why, size_t why_size);

/*
 * GRUB_DEFAULT's value in the text of /etc/default/grub (the last
 * assignment at the start of a line, its quotes removed) into value: 1
 * found, 0 none, -EBADMSG (an open quote), -ENAMETOOLONG.
 */
int grub_default_parse(const char *text, size_t len, char *value,
		       size_t size);

/*
 * Parse a Boot Loader Specification type #1 entry (name: its file name,
 * ending in ".conf").  0, or -EBADMSG / -ENAMETOOLONG with a reason.
 */
int loader_entry_parse(const char *name, const char *text, size_t len,
		       struct boot_entry *e, char *why, size_t why_size);

/*
 * The string in an efivarfs file of systemd's loader variables (4 bytes
 * of attributes, then UTF-16LE, maybe NUL terminated) into out as ASCII.
 * 0, or -EBADMSG (too short, an odd length, a character outside printable
 * ASCII), -ENAMETOOLONG.
 */
int efivar_string_parse(const unsigned char *data, size_t len, char *out,
			size_t size);

#endif
