/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor setup's state and what its files share.  setup.c is the command
 * that makes `systemctl hibernate` go through torpor: its plan, the
 * confirmation, the changes in order; setup-storage.c chooses where the
 * image goes, setup-config.c writes the configuration, setup-words.c
 * names the kernel command line words, setup-initramfs.c finds the
 * generator and checks its work, setup-run.c runs programs,
 * setup-report.c says the rest.  setup-undo.c (`torpor setup --undo`)
 * gives the machine back to the kernel's own hibernation.
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
#include "next-boot.h"

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

/* setup-storage.c */
/* MemTotal of sysroot()'s /proc/meminfo, in bytes; 0 when unknown. */
uint64_t setup_mem_total(void);
/* The filters (st->filters) and the stored image to plan for (st->need):
 * the kernel's image is at most about half of memory; through the
 * chain's expected ratios, plus a sixteenth.  -errno, said. */
int setup_estimate_need(struct setup *st);
/* The storage for st->need: an active swap area (st->device), else an
 * image file (st->use_file, st->file_path, st->file_size); said.
 * -errno, said, when neither can be had. */
int setup_choose_storage(struct setup *st);

/* setup-config.c */
/* The configuration to write into st->text: the existing one's keys but
 * its writer's, then the writer chosen.  -ENOMEM, -E2BIG (said). */
int setup_compose(struct setup *st);
/* st->text, quoted, for the plan. */
void setup_print_config(const struct setup *st);
/* st->text into st->conf_path, atomically, the old one kept as .bak. */
int setup_write_config(const struct setup *st);
/* text into dfd/base atomically: a new file (root's, 0644) renamed over
 * the old one; shown names it in messages. */
int replace_file_at(int dfd, const char *base, const char *text,
		    const char *shown);

/* setup-words.c */
/* The location's words for the configuration conf into st->words
 * (`torpor resume-args --location`), quietly; -EINVAL when none. */
int location_of(struct setup *st, const char *conf);
/* The same, said with whether the command line needs them. */
int setup_resume_words(struct setup *st, const char *conf);
/* The resume= and resume_offset= words of a command line, into buf. */
void location_words(const char *cmdline, char *buf, size_t size);
/* GRUB_CMDLINE_LINUX and _DEFAULT of /etc/default/grub; -ENOENT. */
int grub_cmdline(char *buf, size_t size);
/* What the running kernel's command line and GRUB's next boot have of
 * st->words; nothing is edited. */
void setup_check_boot_loader(const struct setup *st);

/* setup-initramfs.c */
/* The initramfs generator into st->generator; -ENOENT (said, as an error
 * when required). */
int find_generator(struct setup *st, bool required);
/* The new initramfs against the configuration just written: 0, or
 * -errno with what it lacks said. */
int setup_check_initramfs(const struct setup *st);

/* setup-run.c */
/* Up to size - 1 bytes of fd into buf, NUL-ended; how many. */
size_t read_bounded(int fd, char *buf, size_t size);
/* Run argv and wait; its exit status, or -errno. */
int run_program(const char *const *argv, char *out, size_t out_size);
/* This program with the configuration conf: `torpor --config conf
 * WORDS` (and st's --plugin-dir); as run_program(). */
int setup_run_self(const struct setup *st, const char *conf,
		   const char *const *words, char *out, size_t out_size);

/* setup-report.c */
/* --dry-run: what would be done, with the words of the configuration in
 * memory. */
int setup_dry_run(struct setup *st);
/* What logind answers now (desktops offer Hibernate only for "yes"). */
void setup_print_logind(const struct setup *st);
/* Which kernel the next boot starts, as torpor hibernate will judge it;
 * the verdict. */
enum next_boot_verdict setup_print_next_boot(const struct setup *st);

/* setup.c */
/* 0 with --yes or a yes on the terminal, else -ECANCELED (said). */
int confirm(const struct setup *st);

/* torpor setup --undo (setup-undo.c). */
int setup_undo(struct setup *st);

#endif
