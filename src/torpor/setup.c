/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor setup: make `systemctl hibernate` work on this machine.
 *
 *   torpor setup [--dry-run] [--yes] [--size SIZE] [--root DIR]
 *   torpor setup --undo ...   (setup-undo.c)
 *
 * Checks that the kernel can hibernate, picks the storage (an active swap
 * area with room for the expected stored image, else a preallocated file
 * for the file writer, made by file-setup), writes the configuration
 * (atomically, the old one kept as .bak), says which kernel command line
 * words the boot loader needs, rebuilds the initramfs with the
 * distribution's generator, checks that it holds what a resume needs, and
 * runs `torpor hibernate --direct --test`.
 *
 * --root DIR reads the system's files (proc/, sys/, etc/, boot/, the
 * generator in usr/sbin) under DIR and writes the configuration there, for
 * tests; devices and files those files name are used as they are.  It is
 * sysroot_set(): what a test build's $TORPOR_TEST_SYSROOT is to every
 * command, which the tests use.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli-option.h"
#include "config.h"
#include "hibernation-available.h"
#include "kernel-location.h"
#include "log.h"
#include "setup.h"
#include "sysroot.h"

int torpor_setup_main(int argc, char **argv);
int torpor_file_setup_main(int argc, char **argv);

static void
setup_usage(FILE *f)
{
	fprintf(f,
		"Usage: torpor setup [--dry-run] [--yes] [--size SIZE] [--root DIR]\n"
		"       torpor setup --undo [--dry-run] [--yes] [--keep-config] [--root DIR]\n\n"
		"Make `systemctl hibernate` work on this machine: choose the storage\n"
		"(an active swap area with room for the image, else a preallocated file),\n"
		"write the configuration, say which kernel command line words the boot\n"
		"loader needs, rebuild the initramfs, check it, and run\n"
		"`torpor hibernate --direct --test`.\n"
		"With --undo: put back what setup changed (the configuration from its\n"
		".bak, or none), give initramfs-tools' RESUME= the swap area again,\n"
		"rebuild the initramfs and say what the boot loader needs.\n\n"
		"Options:\n"
		"  -c, --config FILE   the configuration to write (default %s)\n"
		"  -p, --plugin-dir DIR  plugin directory\n"
		"  -n, --dry-run       say what would be done, change nothing\n"
		"  -y, --yes           do it without asking\n"
		"      --size SIZE     size of the image file, when one is made\n"
		"      --undo          give the machine back to the kernel's hibernation\n"
		"      --keep-config   with --undo: leave the configuration and the\n"
		"                      initramfs (the package's removal does those)\n"
		"      --root DIR      read the system's files under DIR (for tests)\n"
		"  -h, --help          this help\n",
		TORPOR_DEFAULT_CONFIG);
}

/* 0 to go on, 1 after --help, -EINVAL after a wrong word (said). */
static int
parse_args(int argc, char **argv, struct setup *st)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "plugin-dir", required_argument, NULL, 'p' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "yes", no_argument, NULL, 'y' },
		{ "size", required_argument, NULL, 'S' },
		{ "root", required_argument, NULL, 'R' },
		{ "undo", no_argument, NULL, 'U' },
		{ "keep-config", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	cli_option_begin();
	while ((c = getopt_long(argc, argv, ":c:p:nyh", options, NULL)) != -1) {
		switch (c) {
		case 'c': st->config = optarg; break;
		case 'p': st->plugin_dir = optarg; break;
		case 'n': st->dry_run = true; break;
		case 'y': st->yes = true; break;
		case 'S': st->size = optarg; break;
		case 'R': st->root = optarg; break;
		case 'U': st->undo = true; break;
		case 'K': st->keep_config = true; break;
		case 'h':
			setup_usage(stdout);
			return 1;
		default:
			return cli_option_error("setup", c, argv);
		}
	}
	if (optind < argc) {
		log_error("setup: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (st->undo && st->size) {
		log_error("setup: --undo makes no image file: --size is for setup");
		return -EINVAL;
	}
	if (st->keep_config && !st->undo) {
		log_error("setup: --keep-config goes with --undo");
		return -EINVAL;
	}
	if (st->root && st->root[0] != '/') {
		log_error("setup: --root needs an absolute path, not '%s'", st->root);
		return -EINVAL;
	}
	if (st->root)
		sysroot_set(st->root);
	if (st->config)
		snprintf(st->conf_path, sizeof(st->conf_path), "%s", st->config);
	else
		sysroot_path(TORPOR_DEFAULT_CONFIG, st->conf_path,
			     sizeof(st->conf_path));
	return 0;
}

/* Where the kernel refuses hibernation (hibernation-available.h), with
 * what to do about it. */
static int
check_hibernation_available(void)
{
	char why[4096];

	switch (hibernation_available(why, sizeof(why))) {
	case HIBERNATION_AVAILABLE:
		return 0;
	case HIBERNATION_LOCKDOWN:
		log_error("setup: %s: the kernel refuses hibernation to a writable image.  Boot without lockdown to hibernate",
			  why);
		return -EPERM;
	case HIBERNATION_CMDLINE:
		log_error("setup: %s: remove it from the kernel command line first",
			  why);
		return -EPERM;
	case HIBERNATION_SECRETMEM:
		log_error("setup: %s: run setup again once it has ended", why);
		return -EOPNOTSUPP;
	case HIBERNATION_STATE_UNREAD:
	case HIBERNATION_NO_DISK:
		break;
	}
	log_error("setup: this kernel cannot hibernate ('disk' is not in /sys/power/state)");
	return -EOPNOTSUPP;
}

/* The image file, made and checked by file-setup's code. */
static int
make_file(const struct setup *st)
{
	char size[32];
	const char *argv[] = { "file-setup", "--path", st->file_path, "--size", size, NULL };

	snprintf(size, sizeof(size), "%" PRIu64, st->file_size);
	return torpor_file_setup_main(5, (char **)argv) == EXIT_SUCCESS ? 0 : -EIO;
}

/* Changes are made with --yes, or after a yes on the terminal. */
int
confirm(const struct setup *st)
{
	char answer[16];

	if (st->yes)
		return 0;
	if (!isatty(STDIN_FILENO)) {
		log_error("setup: pass --yes to make these changes (or --dry-run to only see them)");
		return -ECANCELED;
	}
	printf("Proceed? [y/N] ");
	fflush(stdout);
	if (!fgets(answer, sizeof(answer), stdin) ||
	    (answer[0] != 'y' && answer[0] != 'Y')) {
		log_error("setup: nothing was changed");
		return -ECANCELED;
	}
	return 0;
}

/* Everything after the confirmation, in order; stops at the first
 * failure (said). */
static int
apply(struct setup *st, enum next_boot_verdict next)
{
	static const char *const test[] = { "hibernate", "--direct", "--test", NULL };
	/* The test is of the chain and its storage: a next boot of another
	 * kernel is said above, and must not undo the setup. */
	static const char *const test_forced[] = {
		"hibernate", "--direct", "--test", "--force", NULL
	};
	int r;

	if (st->use_file && (r = make_file(st)) < 0)
		return r;
	r = setup_write_config(st);
	if (r < 0)
		return r;
	if (setup_resume_words(st, st->conf_path) == 0)
		setup_check_boot_loader(st);
	printf("setup: rebuilding the initramfs: %s %s %s %s\n",
	       st->generator[0], st->generator[1], st->generator[2],
	       st->generator[3]);
	r = run_program(st->generator, NULL, 0);
	if (r != 0) {
		log_error("setup: %s failed (exit status %d)", st->generator[0], r);
		return -EIO;
	}
	r = setup_check_initramfs(st);
	if (r < 0)
		return r;
	printf("setup: testing: torpor hibernate --direct --test%s\n",
	       next == NEXT_BOOT_REFUSE ? " --force (for the next boot's kernel, above)" : "");
	r = setup_run_self(st, st->conf_path,
			   next == NEXT_BOOT_REFUSE ? test_forced : test, NULL, 0);
	if (r != 0) {
		log_error("setup: 'torpor hibernate --direct --test' failed (exit status %d): see above",
			  r);
		return -EIO;
	}
	/* What torpor-resume-location.service does at each boot: it did
	 * not run at this one, which had no configuration yet. */
	if (st->words[0]) {
		printf("setup: handing the image's location to the running kernel, as torpor-resume-location.service does at each boot\n");
		if (kernel_location_apply(st->words) < 0)
			log_warning("setup: the running kernel has no resume device from torpor until the next boot: logind may not offer hibernation before it (see torpor status)");
	}
	printf("setup: done: 'systemctl hibernate' goes through torpor%s\n",
	       kernel_location_words_needed(st->words) ?
	       " once the kernel command line has the words above" : "");
	setup_print_logind(st);
	return 0;
}

/* Everything that can refuse before anything is changed. */
static int
plan(struct setup *st)
{
	int r;

	if (!st->dry_run && geteuid() != 0) {
		log_error("setup: it writes the configuration and rebuilds the initramfs, which needs root: sudo torpor setup (torpor setup --dry-run says what it would do)");
		return -EPERM;
	}
	r = check_hibernation_available();
	if (r >= 0)
		r = find_generator(st, true);
	if (r < 0)
		return r;
	st->mem_total = setup_mem_total();
	if (st->mem_total == 0) {
		log_error("setup: cannot read MemTotal from /proc/meminfo");
		return -EIO;
	}
	r = config_load(st->conf_path, true, &st->old);
	if (r < 0) {
		log_error("setup: fix %s first (or move it away)", st->conf_path);
		return r;
	}
	r = setup_estimate_need(st);
	if (r >= 0)
		r = setup_choose_storage(st);
	if (r >= 0)
		r = setup_compose(st);
	return r;
}

int
torpor_setup_main(int argc, char **argv)
{
	struct setup st = { 0 };
	enum next_boot_verdict next = NEXT_BOOT_UNKNOWN;
	int r;

	r = parse_args(argc, argv, &st);
	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	if (st.undo)
		return setup_undo(&st) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	r = plan(&st);
	if (r >= 0) {
		setup_print_config(&st);
		next = setup_print_next_boot(&st);
		r = st.dry_run ? setup_dry_run(&st) : confirm(&st);
	}
	if (r >= 0 && !st.dry_run)
		r = apply(&st, next);
	config_free(st.old);
	free(st.text);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
