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
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "btrfs.h"
#include "chain.h"
#include "cli-option.h"
#include "config.h"
#include "device-io.h"
#include "device-names.h"
#include "dm-stack.h"
#include "file-map.h"
#include "hibernation-available.h"
#include "host.h"
#include "initramfs-check.h"
#include "kernel-location.h"
#include "loader.h"
#include "log.h"
#include "logind-view.h"
#include "next-boot.h"
#include "session.h"
#include "setup.h"
#include "snapshot.h"
#include "sysroot.h"
#include "write-all.h"
#include "writer-common.h"

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
check_kernel(void)
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

/* update-initramfs (initramfs-tools) first, else dracut; for the running
 * kernel (the image resumes with no other), where update-initramfs -u
 * alone would rebuild the newest one's. */
int
find_generator(struct setup *st, bool required)
{
	static const struct { const char *path, *arg, *kernel; } gens[] = {
		{ "/usr/sbin/update-initramfs", "-u", "-k" },
		{ "/usr/bin/dracut", "-f", "--kver" },
		{ "/usr/sbin/dracut", "-f", "--kver" },
	};
	size_t i;

	if (uname(&st->uts) < 0)
		return log_error_errno(-errno, "setup: uname: %m");
	for (i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
		sysroot_path(gens[i].path, st->generator_path,
			 sizeof(st->generator_path));
		if (access(st->generator_path, X_OK) == 0) {
			st->generator[0] = st->generator_path;
			st->generator[1] = gens[i].arg;
			st->generator[2] = gens[i].kernel;
			st->generator[3] = st->uts.release;
			st->generator[4] = NULL;
			return 0;
		}
	}
	if (required)
		log_error("setup: no initramfs generator (update-initramfs or dracut) is installed: the next boot must run torpor-resume from its initramfs");
	return -ENOENT;
}

/* MemTotal from meminfo, in bytes. */
static uint64_t
mem_total(const struct setup *st)
{
	char text[8192], *p;
	uint64_t kib = 0;

	if (sysroot_read("/proc/meminfo", text, sizeof(text)) < 0)
		return 0;
	p = strstr(text, "MemTotal:");
	if (p && sscanf(p, "MemTotal: %" SCNu64, &kib) != 1)
		kib = 0;
	return kib * 1024;
}

/* The filters: the existing configuration's, else the checksum and a fast
 * compressor when they are installed, in the order torpor.conf(5) gives
 * (checksum first: its digests then cover the plaintext pages). */
static void
choose_filters(struct setup *st, const char *dir)
{
	static const char *const wanted[] = { "checksum", "lz4" };
	char p[PATH_MAX];
	size_t i, used = 0;

	st->filters[0] = '\0';
	if (st->old->path) {
		for (i = 0; i < st->old->n_filters && used < sizeof(st->filters); i++)
			used += (size_t)snprintf(st->filters + used,
				sizeof(st->filters) - used, "%s%s",
				i ? " " : "", st->old->filters[i]);
		return;
	}
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s.so", dir, wanted[i]);
		if (access(p, R_OK) == 0)
			used += (size_t)snprintf(st->filters + used,
				sizeof(st->filters) - used, "%s%s",
				used ? " " : "", wanted[i]);
	}
}

/* The stored image to plan for: the kernel's image is at most about half
 * of memory; through the chain's expected ratios, plus a sixteenth. */
static int
estimate_need(struct setup *st)
{
	struct torpor_session s;
	struct chain c = { .page_size = bd_page_size(),
			   .chunk_pages = st->old->chunk_pages };
	const char *dir = st->plugin_dir ? st->plugin_dir :
			  st->old->plugin_dir ? st->old->plugin_dir :
			  loader_default_dir();
	uint64_t stored;
	char *save;
	int r = 0;

	choose_filters(st, dir);
	/* The plugins read the existing configuration's sections. */
	memset(&s, 0, sizeof(s));
	registry_init(&s.reg);
	host_set_config(st->old);
	host_set_registry(&s.reg);
	host_set_snapshot_kind(host_kind_of_spec(st->old->snapshot));
	loader_set_config(st->old);
	r = host_init_crypto();
	if (r >= 0)
		r = loader_load_all(&s.reg, dir, NULL, 0, host_get());
	s.plugins_loaded = true;
	save = strdup(st->filters);
	for (char *tok = save ? strtok(save, " ") : NULL; tok && r >= 0;
	     tok = strtok(NULL, " ")) {
		c.filters[c.n_filters] = registry_find(&s.reg, tok);
		if (!c.filters[c.n_filters] || c.n_filters + 1 >= IMAGE_MAX_CHAIN)
			r = log_error_errno(-ENOENT, "setup: filter '%s' is not installed in %s",
					    tok, dir);
		else
			c.n_filters++;
	}
	if (r >= 0 && !save)
		r = -ENOMEM;
	if (r >= 0) {
		stored = chain_expected_stream(&c, st->mem_total / 2);
		st->need = stored + stored / 16;
	}
	free(save);
	session_close(&s);	/* s.config is NULL: st->old stays */
	return r;
}

/* An active swap area with room for the image: the one with the most free
 * space (zram holds nothing across a power-off). */
static int
find_swap(struct setup *st)
{
	char text[16384], *line, *save = NULL;
	uint64_t best = 0;

	if (sysroot_read("/proc/swaps", text, sizeof(text)) < 0)
		return -ENOENT;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[PATH_MAX], type[32], entry[640];
		uint64_t size, used;
		struct stat sb;

		if (sscanf(line, "%4095s %31s %" SCNu64 " %" SCNu64, name, type,
			   &size, &used) != 4 || used > size)
			continue;
		if (strncmp(name, "/dev/zram", 9) == 0) {
			printf("setup: active swap %s is zram, compressed RAM that a power-off empties: never a place for the image\n",
			       name);
			continue;
		}
		if (bd_random_key_swap(sysroot(), name, entry,
				       sizeof(entry)) == 1) {
			printf("setup: active swap %s is encrypted with a new random key at each boot (/etc/crypttab: %s): an image there could not be read after the power-off: never a place for the image\n",
			       name, entry);
			continue;
		}
		printf("setup: active swap %s (%s): %" PRIu64 " MiB free\n", name,
		       type, (size - used) >> 10);
		if ((size - used) * 1024 < st->need || (size - used) * 1024 <= best)
			continue;
		best = (size - used) * 1024;
		st->room = best;
		/* A swap file: the device of its filesystem. */
		st->device_rdev = 0;
		st->device_in_fs = false;
		if (stat(name, &sb) < 0) {
			/* unknown: nothing said of its stack */
		} else if (S_ISBLK(sb.st_mode)) {
			st->device_rdev = sb.st_rdev;
		} else if (S_ISREG(sb.st_mode)) {
			st->device_rdev = sb.st_dev;
			st->device_in_fs = true;
		}
		/* A partition by its UUID: device names change. */
		if (strcmp(type, "partition") != 0 ||
		    bd_uuid_of(name, st->device + 5, sizeof(st->device) - 5) < 0)
			snprintf(st->device, sizeof(st->device), "%s", name);
		else
			memcpy(st->device, "UUID=", 5);
	}
	return best ? 0 : -ENOSPC;
}

/* The nearest directory of path that exists. */
static void
existing_parent(const char *path, char *buf, size_t size)
{
	struct stat sb;
	char *slash;

	snprintf(buf, size, "%s", path);
	while ((slash = strrchr(buf, '/')) && slash != buf) {
		*slash = '\0';
		if (stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode))
			return;
	}
	snprintf(buf, size, "/");
}

/* On btrfs the file can hold an image when the filesystem has one device
 * (file-setup makes it NOCOW; the writer refuses dup or RAID data when it
 * maps it): say so, or why not. */
static int
check_btrfs(const struct statfs *sf, const char *dir, char *why, size_t size)
{
	char node[PATH_MAX];
	uint64_t devid;
	int fd, r;

	if ((unsigned long)sf->f_type != BTRFS_SUPER_MAGIC)
		return 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(why, size, "cannot be opened: %s", strerror(-r));
		return r;
	}
	r = bd_btrfs_device(fd, &devid, node, sizeof(node), why, size);
	close(fd);
	if (r == 0)
		printf("setup: %s is on btrfs on %s: the image file will be NOCOW (written in place), mapped through btrfs's chunk tree\n",
		       dir, node);
	return r;
}

/* No swap with room: a file for the file writer, on a filesystem whose
 * blocks stay put and with room for it. */
static int
plan_file(struct setup *st)
{
	char dir[PATH_MAX], why[512];
	struct statfs sf;
	struct statvfs sv;
	struct stat sb;
	uint64_t free_bytes;

	st->use_file = true;
	sysroot_path(SETUP_FILE_PATH, st->file_path, sizeof(st->file_path));
	st->file_size = bd_round_up(st->need, 1u << 20);
	if (st->size && (config_parse_size(st->size, &st->file_size) < 0 ||
			 st->file_size < BD_FILE_MIN_SIZE)) {
		log_error("setup: --size '%s' is not a size of at least 1M", st->size);
		return -EINVAL;
	}
	existing_parent(st->file_path, dir, sizeof(dir));
	if (statfs(dir, &sf) < 0 || statvfs(dir, &sv) < 0)
		return log_error_errno(-errno, "setup: cannot inspect %s: %m", dir);
	if (bd_check_fs_type((unsigned long)sf.f_type, why, sizeof(why)) < 0 ||
	    check_btrfs(&sf, dir, why, sizeof(why)) < 0) {
		log_error("setup: no active swap area has room for the image, and no usable image file can be made: %s %s",
			  dir, why);
		return -EXDEV;
	}
	free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	/* Run again: the file made last time is reused. */
	if (stat(st->file_path, &sb) == 0 && S_ISREG(sb.st_mode))
		free_bytes += (uint64_t)sb.st_blocks * 512;
	if (free_bytes < st->file_size) {
		log_error("setup: not enough room: the image needs %" PRIu64 " MiB; no active swap area has that much free, and the filesystem of %s has %" PRIu64 " MiB free",
			  st->file_size >> 20, dir, free_bytes >> 20);
		return -ENOSPC;
	}
	if (st->file_size < st->need)
		log_warning("setup: --size %s is less than the %" PRIu64 " MiB expected: a large image will not fit",
			    st->size, st->need >> 20);
	return 0;
}

/* Debian's encrypted layouts: what must unlock and activate the swap area
 * before torpor-resume runs (the initramfs check after the rebuild looks
 * for it). */
static void
say_stack(const struct setup *st)
{
	struct bd_dm_stack dm;

	if (!st->device_rdev)
		return;
	bd_dm_stack(sysroot(), st->device_rdev, &dm);
	if (dm.n_lvm)
		printf("setup: %s the LVM volume %s: the initramfs must activate it (lvm2)\n",
		       st->device_in_fs ? "its filesystem is on" : "it is", dm.lvm[0]);
	for (unsigned i = 0; i < dm.n_crypt; i++)
		printf("setup: it lies in the dm-crypt mapping %s: the initramfs must unlock it (cryptsetup), asking for its passphrase\n",
		       dm.crypt[i]);
}

static int
choose_storage(struct setup *st)
{
	printf("setup: memory %" PRIu64 " MiB; filters '%s': plan for a stored image of %" PRIu64 " MiB\n",
	       st->mem_total >> 20, st->filters, st->need >> 20);
	if (!st->size && find_swap(st) == 0) {
		printf("setup: storage: swap writer on %s (%" PRIu64 " MiB free)\n",
		       st->device, st->room >> 20);
		say_stack(st);
		return 0;
	}
	if (!st->size)
		printf("setup: no active swap area has %" PRIu64 " MiB free: the image goes to a file (the file writer)\n",
		       st->need >> 20);
	return plan_file(st);
}

/* Append to the configuration text (bounded: SETUP_TEXT_MAX). */
static void __attribute__((format(printf, 2, 3)))
text_add(struct setup *st, const char *fmt, ...)
{
	size_t used = strlen(st->text);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->text + used, SETUP_TEXT_MAX - used, fmt, ap);
	va_end(ap);
}

static bool
is_writer_section(const char *s)
{
	return strcmp(s, "swap") == 0 || strcmp(s, "file") == 0 ||
	       strcmp(s, "raw") == 0;
}

/* Whether section i's name came before (its keys went with the first). */
static bool
section_repeats(const struct torpor_config *o, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (strcmp(o->sections[j].name, o->sections[i].name) == 0)
			return true;
	return false;
}

/* The existing configuration's keys, but its writer's, then the writer. */
static int
compose(struct setup *st)
{
	const struct torpor_config *o = st->old;
	size_t i, j;

	st->text = calloc(1, SETUP_TEXT_MAX);
	if (!st->text)
		return -ENOMEM;
	text_add(st, SETUP_WRITTEN_BY "%s.\n[torpor]\nfilters = %s\nwriter = %s\n",
		 o->path ? "; the previous file is kept beside it as .bak" : "",
		 st->filters, st->use_file ? "file" : "swap");
	for (i = 0; i < o->n_entries; i++)
		if (strcmp(o->entries[i].section, CONFIG_CORE_SECTION) == 0 &&
		    strcmp(o->entries[i].key, "filters") != 0 &&
		    strcmp(o->entries[i].key, "writer") != 0)
			text_add(st, "%s = %s\n", o->entries[i].key,
				 o->entries[i].value);
	if (st->use_file)
		text_add(st, "\n[file]\npath = %s\nsize = %" PRIu64 "M\n",
			 st->file_path, st->file_size >> 20);
	else
		text_add(st, "\n[swap]\ndevice = %s\n", st->device);
	for (i = 0; i < o->n_sections; i++) {
		const char *name = o->sections[i].name;

		if (strcmp(name, CONFIG_CORE_SECTION) == 0 ||
		    is_writer_section(name) || section_repeats(o, i))
			continue;
		text_add(st, "\n[%s]\n", name);
		for (j = 0; j < o->n_entries; j++)
			if (strcmp(o->entries[j].section, name) == 0)
				text_add(st, "%s = %s\n", o->entries[j].key,
					 o->entries[j].value);
	}
	if (strlen(st->text) >= SETUP_TEXT_MAX - 1)
		return log_error_errno(-E2BIG, "setup: the configuration would be longer than %u bytes",
				       SETUP_TEXT_MAX);
	return 0;
}

size_t
read_bounded(int fd, char *buf, size_t size)
{
	size_t used = 0;

	while (used + 1 < size) {
		ssize_t k = read(fd, buf + used, size - 1 - used);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		used += (size_t)k;
	}
	buf[used] = '\0';
	return used;
}

/* Run argv (argv[0] a path) and wait; with out, its standard output is
 * kept there (bounded, NUL-terminated).  Its exit status, or -errno. */
int
run_program(const char *const *argv, char *out, size_t out_size)
{
	int p[2] = { -1, -1 }, status;
	pid_t pid;

	fflush(stdout);
	if (out && pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		if (out && dup2(p[1], 1) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (out) {
		close(p[1]);
		if (pid > 0)
			read_bounded(p[0], out, out_size);
		else
			out[0] = '\0';
		close(p[0]);
	}
	if (pid < 0)
		return -errno;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* This program with the configuration conf: `torpor --config conf WORDS`. */
static int
run_self(const struct setup *st, const char *conf, const char *const *words,
	 char *out, size_t out_size)
{
	const char *argv[16] = { "/proc/self/exe", "--config", conf };
	size_t n = 3;

	if (st->plugin_dir) {
		argv[n++] = "--plugin-dir";
		argv[n++] = st->plugin_dir;
	}
	while (*words && n < 15)
		argv[n++] = *words++;
	argv[n] = NULL;
	return run_program(argv, out, out_size);
}

int
location_of(struct setup *st, const char *conf)
{
	static const char *const words[] = { "resume-args", "--location", NULL };
	int r = run_self(st, conf, words, st->words, sizeof(st->words));

	st->words[strcspn(st->words, "\n")] = '\0';
	if (r != 0 || !st->words[0]) {
		st->words[0] = '\0';
		return -EINVAL;
	}
	return 0;
}

/* The location's words for the configuration conf, said with whether the
 * command line needs them. */
static int
resume_words(struct setup *st, const char *conf)
{
	if (location_of(st, conf) < 0) {
		log_warning("setup: 'torpor resume-args' could not name the resume location");
		return -EINVAL;
	}
	printf("setup: the image's location as kernel command line words (torpor resume-args): %s%s\n",
	       st->words, kernel_location_words_needed(st->words) ? "" :
	       "; not needed: torpor-resume reads it from the configuration in the initramfs");
	return 0;
}

/* The resume= and resume_offset= words of a command line, into buf. */
void
location_words(const char *cmdline, char *buf, size_t size)
{
	const char *p = cmdline;
	size_t used = 0;

	buf[0] = '\0';
	while (*p) {
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if ((strncmp(p, "resume=", 7) == 0 ||
		     strncmp(p, "resume_offset=", 14) == 0) && used + n + 2 < size)
			used += (size_t)snprintf(buf + used, size - used, "%s%.*s",
						 used ? " " : "", (int)n, p);
		p += n;
	}
}

/* What the location words of a command line mean (which ones are
 * needed: kernel_location_words_needed()). */
static void
judge_words(const struct setup *st, const char *where, const char *cmdline)
{
	bool needed = kernel_location_words_needed(st->words);
	char found[1024];

	location_words(cmdline, found, sizeof(found));
	if (needed && strcmp(found, st->words) == 0)
		printf("setup: %s has them\n", where);
	else if (needed)
		printf("setup: %s %s%s%s: it needs '%s'\n", where,
		       found[0] ? "has '" : "lacks them", found,
		       found[0] ? "' instead" : "", st->words);
	else if (!found[0])
		printf("setup: %s has no resume= word: good\n", where);
	else
		printf("setup: %s has '%s': remove it; %s\n", where, found,
		       strcmp(found, st->words) == 0 ?
		       "the generators' own resume step would wait for a swap signature torpor's image replaces" :
		       "torpor-resume would look for the image there");
}

/* GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub,
 * into buf; -ENOENT. */
int
grub_cmdline(char *buf, size_t size)
{
	char text[16384], *line, *save = NULL;
	size_t used = 0;

	if (sysroot_read("/etc/default/grub", text, sizeof(text)) < 0)
		return -ENOENT;
	buf[0] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " \t");
		if (strncmp(line, "GRUB_CMDLINE_LINUX=", 19) == 0)
			line += 19;
		else if (strncmp(line, "GRUB_CMDLINE_LINUX_DEFAULT=", 27) == 0)
			line += 27;
		else
			continue;
		line += strspn(line, "\"'");
		line[strcspn(line, "\"'")] = '\0';
		if (used + 1 < size)
			used += (size_t)snprintf(buf + used, size - used, " %s", line);
	}
	return 0;
}

/* The running kernel's words and the next boot's (grub); nothing is
 * edited. */
static void
check_boot_loader(const struct setup *st)
{
	char text[4096];

	if (!st->words[0])
		return;
	if (sysroot_read("/proc/cmdline", text, sizeof(text)) >= 0)
		judge_words(st, "the running kernel's command line", text);
	if (grub_cmdline(text, sizeof(text)) == 0)
		judge_words(st, "GRUB_CMDLINE_LINUX in /etc/default/grub (the next boot; setup does not edit it, run update-grub after a change)",
			    text);
	else if (kernel_location_words_needed(st->words))
		printf("setup: no /etc/default/grub: add '%s' to the kernel command line of your boot loader\n",
		       st->words);
}

/* The directory of the configuration (made, one level, when missing),
 * never through a symbolic link at its last step; its fd, the file's name
 * in *ret_base. */
static int
open_conf_dir(const struct setup *st, const char **ret_base)
{
	static char dir[PATH_MAX];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", st->conf_path);
	slash = strrchr(dir, '/');
	if (!slash || !slash[1]) {
		log_error("setup: '%s' does not name a file", st->conf_path);
		return -EINVAL;
	}
	*slash = '\0';
	*ret_base = st->conf_path + (slash - dir) + 1;
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "setup: cannot create %s: %m", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "setup: cannot open the directory %s (a symbolic link is refused): %m",
				       dir);
	return fd;
}

/* The existing file kept as NAME.bak (a hard link: nothing is copied). */
static int
keep_backup(int dfd, const char *base, const char *shown)
{
	char bak[NAME_MAX + 1];
	struct stat sb;

	if (fstatat(dfd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(sb.st_mode)) {
		log_error("setup: refusing to replace %s: it is not a regular file (a symbolic link?); remove it (rm) and run setup again",
			  base);
		return -EPERM;
	}
	snprintf(bak, sizeof(bak), "%s.bak", base);
	if (unlinkat(dfd, bak, 0) < 0 && errno != ENOENT)
		return log_error_errno(-errno, "setup: cannot replace the backup %s: %m", bak);
	if (linkat(dfd, base, dfd, bak, 0) < 0)
		return log_error_errno(-errno, "setup: cannot keep %s as %s: %m", base, bak);
	printf("setup: the previous configuration is kept as %s.bak\n", shown);
	return 0;
}

int
replace_file_at(int dfd, const char *base, const char *text, const char *shown)
{
	char tmp[NAME_MAX + 1];
	uint32_t rnd = 0;
	int fd, r = 0;

	if (getrandom(&rnd, sizeof(rnd), 0) < 0)
		rnd = (uint32_t)getpid();
	snprintf(tmp, sizeof(tmp), ".%.200s.%08x", base, rnd);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return log_error_errno(-errno, "setup: cannot create a file beside %s: %m", shown);
	if ((geteuid() == 0 && fchown(fd, 0, 0) < 0) || fchmod(fd, 0644) < 0)
		r = log_error_errno(-errno, "setup: cannot make %s root's: %m", tmp);
	if (r >= 0) {
		r = write_all(fd, text, strlen(text));
		if (r >= 0 && fsync(fd) < 0)
			r = -errno;
		if (r < 0)
			log_error_errno(r, "setup: cannot write %s: %m", tmp);
	}
	close(fd);
	if (r >= 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = log_error_errno(-errno, "setup: cannot rename %s to %s: %m", tmp, base);
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	else
		fsync(dfd);
	return r;
}

/* The configuration, atomically, the old one kept as .bak. */
static int
write_config(const struct setup *st)
{
	const char *base;
	int dfd, r;

	dfd = open_conf_dir(st, &base);
	if (dfd < 0)
		return dfd;
	r = keep_backup(dfd, base, st->conf_path);
	if (r >= 0)
		r = replace_file_at(dfd, base, st->text, st->conf_path);
	if (r >= 0)
		printf("setup: wrote %s\n", st->conf_path);
	close(dfd);
	return r;
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

static void
print_plan(const struct setup *st)
{
	const char *p = st->text;

	printf("setup: the configuration for %s:\n", st->conf_path);
	while (*p) {
		size_t n = strcspn(p, "\n");

		printf("  | %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* --dry-run: what would be done; the command line words from the
 * configuration in memory (a swap area exists already). */
static int
dry_run(struct setup *st)
{
	char conf[64];
	int fd;

	if (st->use_file)
		printf("setup: would create the image file %s (%" PRIu64 " MiB) as 'torpor file-setup' does; the kernel command line words are known once it exists\n",
		       st->file_path, st->file_size >> 20);
	printf("setup: would write %s (root's, 0644)%s\n", st->conf_path,
	       access(st->conf_path, F_OK) == 0 ? ", keeping the current one as .bak" : "");
	if (!st->use_file) {
		/* Inherited by the child: not close-on-exec. */
		fd = memfd_create("torpor.conf-setup", 0);
		if (fd >= 0 && write_all(fd, st->text, strlen(st->text)) == 0) {
			snprintf(conf, sizeof(conf), "/proc/%d/fd/%d", (int)getpid(), fd);
			if (resume_words(st, conf) == 0)
				check_boot_loader(st);
		}
		if (fd >= 0)
			close(fd);
	}
	printf("setup: would run %s %s %s %s, check the new initramfs and run 'torpor hibernate --direct --test'\n",
	       st->generator[0], st->generator[1], st->generator[2],
	       st->generator[3]);
	printf("setup: dry run: nothing was changed\n");
	return 0;
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

/* The new initramfs against the configuration just written. */
static int
check_new_initramfs(const struct setup *st)
{
	char boot[PATH_MAX];
	struct torpor_session s;
	int r;

	r = session_open(&s, st->conf_path, st->plugin_dir, true);
	if (r >= 0)
		r = session_arrange_hibernate(&s);
	if (r >= 0 && strcmp(s.config->initramfs, CONFIG_INITRAMFS_NONE) == 0)
		printf("setup: [torpor] initramfs = none: the initramfs is not checked\n");
	else if (r >= 0) {
		r = initramfs_check(&s, &(struct initramfs_check_options){
			.boot_dir = sysroot_path("/boot", boot, sizeof(boot)),
			.required = true });
		if (r >= 0)
			printf("setup: the new initramfs holds what a resume needs\n");
	}
	session_close(&s);
	return r;
}

/* What logind answers now (desktops offer Hibernate only for "yes"). */
static void
print_logind(const struct setup *st)
{
	struct logind_view v;

	logind_view(&v, sysroot(), st->words);
	printf("setup: logind's CanHibernate: %s: %s\n", v.answer, v.why);
}

/* Which kernel the next boot starts, as torpor hibernate will judge it
 * (next-boot.h): whether it refuses is the next boot's, not the setup's.
 * The verdict, for apply(). */
static enum next_boot_verdict
print_next_boot(const struct setup *st)
{
	struct next_boot *nb = malloc(sizeof(*nb));
	enum next_boot_verdict v;

	if (!nb)
		return NEXT_BOOT_UNKNOWN;
	next_boot_plan(sysroot(), st->uts.release, nb);
	printf("setup: next boot: %s\n", nb->line);
	if (nb->verdict == NEXT_BOOT_REFUSE)
		printf("setup: until then torpor hibernate refuses: %s\n",
		       nb->fix);
	v = nb->verdict;
	free(nb);
	return v;
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
	r = write_config(st);
	if (r < 0)
		return r;
	if (resume_words(st, st->conf_path) == 0)
		check_boot_loader(st);
	printf("setup: rebuilding the initramfs: %s %s %s %s\n",
	       st->generator[0], st->generator[1], st->generator[2],
	       st->generator[3]);
	r = run_program(st->generator, NULL, 0);
	if (r != 0) {
		log_error("setup: %s failed (exit status %d)", st->generator[0], r);
		return -EIO;
	}
	r = check_new_initramfs(st);
	if (r < 0)
		return r;
	printf("setup: testing: torpor hibernate --direct --test%s\n",
	       next == NEXT_BOOT_REFUSE ? " --force (for the next boot's kernel, above)" : "");
	r = run_self(st, st->conf_path, next == NEXT_BOOT_REFUSE ? test_forced : test,
		     NULL, 0);
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
	print_logind(st);
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
	r = check_kernel();
	if (r >= 0)
		r = find_generator(st, true);
	if (r < 0)
		return r;
	st->mem_total = mem_total(st);
	if (st->mem_total == 0) {
		log_error("setup: cannot read MemTotal from /proc/meminfo");
		return -EIO;
	}
	r = config_load(st->conf_path, true, &st->old);
	if (r < 0) {
		log_error("setup: fix %s first (or move it away)", st->conf_path);
		return r;
	}
	r = estimate_need(st);
	if (r >= 0)
		r = choose_storage(st);
	if (r >= 0)
		r = compose(st);
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
		print_plan(&st);
		next = print_next_boot(&st);
		r = st.dry_run ? dry_run(&st) : confirm(&st);
	}
	if (r >= 0 && !st.dry_run)
		r = apply(&st, next);
	config_free(st.old);
	free(st.text);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
