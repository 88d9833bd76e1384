/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor.conf ($sysconfdir/torpor): INI.  [torpor] holds the core's keys; every other
 * section belongs to the plugin of that name and is checked against the keys
 * the plugin declares once plugins are loaded.
 */
#ifndef TORPOR_CONFIG_H
#define TORPOR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "torpor-build.h"
#include "registry.h"

/* TORPOR_DEFAULT_CONFIG (torpor-build.h): $sysconfdir/torpor/torpor.conf. */

/* The section of the core's own keys. */
#define CONFIG_CORE_SECTION "torpor"

/* The most pages a chunk may have (`chunk_pages =`): no more than the
 * image format's IMAGE_MAX_CHUNK_PAGES (the cycle checks that). */
#define CONFIG_MAX_CHUNK_PAGES 1024

/* The most worker threads `threads =` may ask for. */
#define CONFIG_MAX_THREADS 256
/* A year: the longest suspend-then-hibernate stay in RAM ([torpor]
 * hibernate_delay). */
#define CONFIG_MAX_HIBERNATE_DELAY (366u * 24 * 3600)

/*
 * What config_load() reads at most, checked before the memory is taken:
 * a larger file (or one that is not a regular file) is refused without
 * being read, a longer line is refused at its first byte past the bound.
 */
#define CONFIG_MAX_FILE_SIZE (1024 * 1024)
#define CONFIG_MAX_LINE 4096

/* [torpor] initramfs = auto: the running kernel's in /boot. */
#define CONFIG_INITRAMFS_AUTO "auto"
/* [torpor] initramfs = none: not checked. */
#define CONFIG_INITRAMFS_NONE "none"

enum config_after {
	CONFIG_AFTER_POWEROFF = 0,
	CONFIG_AFTER_REBOOT,
	CONFIG_AFTER_SUSPEND,
};

enum config_power_off {
	CONFIG_POWER_OFF_PLATFORM = 0,	/* SNAPSHOT_POWER_OFF, else shutdown */
	CONFIG_POWER_OFF_SHUTDOWN,	/* reboot(RB_POWER_OFF) */
};

/* [torpor] write_thread: where hibernation's writes run. */
enum config_write_thread {
	CONFIG_WRITE_THREAD_AUTO = 0,	/* YES with more than one CPU online */
	CONFIG_WRITE_THREAD_NO,		/* on the streaming thread, in turn */
	CONFIG_WRITE_THREAD_YES,	/* on a thread of their own */
};

/* The enum config_after of "poweroff", "reboot" or "suspend"; -EINVAL. */
int config_after_from_name(const char *name);

/* One [section] header as read: an empty section leaves no entry. */
struct config_section {
	char *name;
	unsigned line;
};

/* One key = value line as read, for plugin sections and messages. */
struct config_entry {
	char *section;
	char *key;
	char *value;
	unsigned line;
};

struct torpor_config {
	char *path;			/* file read, or NULL when none */

	/* [torpor] */
	char **filters;			/* hibernate order */
	size_t n_filters;
	char *writer;			/* NULL: none configured */
	unsigned threads;		/* 0: one per online CPU */
	enum config_after after;
	enum config_power_off power_off;
	enum config_write_thread write_thread;
	char *snapshot;			/* "/dev/snapshot" or "sim:SIZE[:SEED]" */
	char *plugin_dir;		/* NULL: built-in default */
	char *state_dir;		/* NULL: built-in (TORPOR_STATEDIR) */
	unsigned chunk_pages;		/* pages per chunk, default 32 */
	uint64_t image_size;		/* preferred image bytes, when */
	bool has_image_size;		/* ... image_size = is set */
	char *group;			/* torpord's privileged group, or NULL */
	char *initramfs;		/* "auto", "none" or an absolute path:
					 * the initramfs the next boot loads */
	unsigned hibernate_delay;	/* suspend-then-hibernate's seconds in
					 * RAM, when has_hibernate_delay */
	bool has_hibernate_delay;

	/* every key = value read, in file order */
	struct config_entry *entries;
	size_t n_entries;

	/* every [section] header read, in file order */
	struct config_section *sections;
	size_t n_sections;
};

/*
 * Read path (TORPOR_DEFAULT_CONFIG when NULL).  A missing file is not an
 * error when missing_ok (defaults are used).  A syntax error, an unknown key
 * of [torpor], or a bad value is logged as "FILE:LINE: key 'K': reason" and
 * returns -EINVAL.  Plugin sections are stored, not yet checked.  A path
 * that is not a regular file, or is larger than CONFIG_MAX_FILE_SIZE, is
 * refused (-EINVAL, -EFBIG) before it is read; a line longer than
 * CONFIG_MAX_LINE bytes is refused as "FILE:LINE: line too long".
 */
int config_load(const char *path, bool missing_ok, struct torpor_config **ret);

/* Defaults only (no file). */
struct torpor_config *config_new_default(void);

void config_free(struct torpor_config *c);

/* Value of [section] key as written in the file, or NULL. */
const char *config_get(const struct torpor_config *c, const char *section,
		       const char *key);

/*
 * Where [section] key is set, in the form every key error takes:
 * "FILE:LINE: [section] key 'KEY'" into buf (size bytes), or "FILE" alone
 * when the file does not set it (and "configuration" for FILE without
 * one).  Returns buf, for messages that go on with ": reason".
 */
const char *config_key_place(const struct torpor_config *c,
			     const char *section, const char *key, char *buf,
			     size_t size);

/* The [torpor] key that names plugin name: "writer", else "filters", or
 * NULL when neither does. */
const char *config_key_naming(const struct torpor_config *c, const char *name);

/* The key plugin p declares under that name, or NULL. */
const struct torpor_config_key *config_find_key(const struct torpor_plugin *p,
						const char *key);

/* Value, else the plugin's declared default, else NULL. */
const char *config_get_for(const struct torpor_config *c,
			   const struct torpor_plugin *p, const char *key);

/*
 * Check every plugin section against the registry: a section naming no
 * registered plugin, a key the plugin does not declare, or a value that does
 * not fit its declared type is logged as "FILE:LINE: ..." and gives -EINVAL.
 */
int config_check_plugins(const struct torpor_config *c,
			 const struct registry *r);

/*
 * The same checks for the section of plugin p alone (its keys as the core
 * copied them), for the loader to run before p's load() reads a value.
 * Every bad key is logged as "FILE:LINE: ..."; -EINVAL.
 */
int config_check_section(const struct torpor_config *c,
			 const struct torpor_plugin *p);

/* Check one value against a declared key; on failure write a reason. */
int config_check_value(const struct torpor_config_key *k, const char *value,
		       char *reason, size_t reason_size);

/* The typed value of value for key k (torpor_host.config_number): INT and
 * SIZE as numbers, BOOL as 0 / 1, ENUM as the index in choices.  -ENOENT
 * for a NULL value, -EINVAL when it does not fit k or k is not numeric. */
int config_number_of(const struct torpor_config_key *k, const char *value,
		     int64_t *ret);

/*
 * Parse "123", "64M", "2G" ... into bytes; -EINVAL / -ERANGE.  Suffixes
 * K, M, G, T, upper case only.
 */
int config_parse_size(const char *s, uint64_t *ret);

/* A decimal number, digits only (no sign, no blanks, no base prefix),
 * that fits 64 bits: 0, -EINVAL or -ERANGE; *ret is untouched on
 * failure. */
int config_parse_u64(const char *s, uint64_t *ret);

/*
 * The numbers at the start of s, for parsers of longer text: *ret_end is
 * set after the number (digits, and for a size one suffix, lower case
 * too when lower_case), also on -ERANGE; -EINVAL when s starts with no
 * digit.  *ret is untouched on failure.
 */
int config_parse_u64_prefix(const char *s, const char **ret_end,
			    uint64_t *ret);
int config_parse_size_prefix(const char *s, bool lower_case,
			     const char **ret_end, uint64_t *ret);

/* Print the effective configuration (with defaults of loaded plugins). */
void config_dump(const struct torpor_config *c, const struct registry *r,
		 FILE *f);

#endif
