/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor setup's state and the helpers its two halves share: setup.c makes
 * `systemctl hibernate` go through torpor, setup-undo.c (`torpor setup
 * --undo`) gives the machine back to the kernel's own hibernation.
 */
#ifndef TORPOR_SETUP_H
#define TORPOR_SETUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/utsname.h>

#include "image-format.h"

#define SETUP_FILE_PATH	"/var/lib/torpor/image"
#define SETUP_TEXT_MAX	(64 * 1024)
/* The first words of every configuration setup writes. */
#define SETUP_WRITTEN_BY "# Written by 'torpor setup'"

struct torpor_config;

struct setup {
	/* options */
	const char *config, *plugin_dir, *root, *size;
	bool dry_run, yes;
	bool undo, keep_config;		/* --undo, --keep-config */
	char conf_path[PATH_MAX];	/* the file to write */

	/* what was found */
	const char *generator[5];	/* argv; [0] an absolute path */
	struct utsname uts;		/* the running kernel's release */
	char generator_path[PATH_MAX];
	uint64_t mem_total, need;
	struct torpor_config *old;	/* the existing file, or defaults */
	char filters[IMAGE_MAX_CHAIN * 40];

	/* the storage chosen */
	bool use_file;
	char device[PATH_MAX];		/* [swap] device */
	dev_t device_rdev;		/* its number, 0 unknown */
	bool device_in_fs;		/* device_rdev holds its filesystem */
	uint64_t room;
	char file_path[PATH_MAX];	/* [file] path */
	uint64_t file_size;

	char *text;			/* the configuration to write */
	char words[1024];		/* kernel command line words */
};

/* The initramfs generator into st->generator; -ENOENT (said, as an error
 * when required). */
int find_generator(struct setup *st, bool required);
/* Up to size - 1 bytes of fd into buf, NUL-ended; how many. */
size_t read_bounded(int fd, char *buf, size_t size);
/* Run argv and wait; its exit status, or -errno. */
int run_program(const char *const *argv, char *out, size_t out_size);
/* The location's words for the configuration conf into st->words
 * (`torpor resume-args --location`), quietly; -EINVAL when none. */
int location_of(struct setup *st, const char *conf);
/* The resume= and resume_offset= words of a command line, into buf. */
void location_words(const char *cmdline, char *buf, size_t size);
/* GRUB_CMDLINE_LINUX and _DEFAULT of /etc/default/grub; -ENOENT. */
int grub_cmdline(char *buf, size_t size);
/* text into dfd/base atomically: a new file (root's, 0644) renamed over
 * the old one; shown names it in messages. */
int replace_file_at(int dfd, const char *base, const char *text,
		    const char *shown);
/* 0 with --yes or a yes on the terminal, else -ECANCELED (said). */
int confirm(const struct setup *st);

/* torpor setup --undo (setup-undo.c). */
int setup_undo(struct setup *st);

#endif
