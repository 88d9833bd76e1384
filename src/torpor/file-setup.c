/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor file-setup: create the image file of the file writer.
 *
 *   torpor file-setup [--config FILE] [--path PATH] [--size SIZE]
 *
 * The file writer writes through the block device under the file at the
 * offsets FIEMAP reports, so the file must be fully allocated and every
 * extent written once (an unwritten extent reads back as zeros through the
 * filesystem whatever is on the disk, and the filesystem would convert it
 * -- a metadata write -- the first time it is written through the file).
 * This command allocates the file, writes it through once, syncs it, and
 * checks the result with the same rules the writer applies.
 *
 * The file will hold a copy of memory: it is created with O_EXCL and
 * O_NOFOLLOW, mode 0600, and an existing one is used only when it is
 * root's and private (no group/other bits); a file another user created
 * or could read is refused untouched (they may hold it open).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-option.h"
#include "config.h"
#include "log.h"

/* The block-device library the file writer links: the checks here must be
 * exactly the ones the writer applies. */
#include "btrfs.h"
#include "device-io.h"
#include "file-map.h"
#include "in-use.h"
#include "run-list.h"
#include "writer-common.h"

int torpor_file_setup_main(int argc, char **argv);

#define FILE_SETUP_DEFAULT_PATH "/var/lib/torpor/image"

static void
file_setup_usage(FILE *f)
{
	fprintf(f,
		"Usage: torpor file-setup [--config FILE] [--path PATH] [--size SIZE]\n\n"
		"Create the image file of the file writer: allocate it, write it once\n"
		"in full so that no extent is left unwritten, sync it, and print the\n"
		"kernel command line words that locate it.  The file is created with\n"
		"mode 0600; an existing one must be root's and 0600.  PATH and SIZE default to\n"
		"[file] path= and size= of the configuration (path: %s).\n\n"
		"Options:\n"
		"  -c, --config FILE   configuration file (default %s)\n"
		"      --path PATH     the image file\n"
		"      --size SIZE     its size: bytes or with K, M, G, T\n"
		"  -h, --help          this help\n",
		FILE_SETUP_DEFAULT_PATH, TORPOR_DEFAULT_CONFIG);
}

/* Write zeros over [0, size) through the filesystem, so that every extent
 * is allocated and written. */
static int
write_through(int fd, uint64_t size)
{
	const size_t chunk = 1u << 20;
	uint8_t *zero = calloc(1, chunk);
	uint64_t off = 0;

	if (!zero)
		return -ENOMEM;
	while (off < size) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		ssize_t k = pwrite(fd, zero, n, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			free(zero);
			return -errno;
		}
		off += (uint64_t)k;
	}
	free(zero);
	return fsync(fd) < 0 ? -errno : 0;
}

static int
sync_parent(const char *path)
{
	char *copy = strdup(path);
	int fd, r = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return r;
}

static int
make_parent(const char *path)
{
	char *copy = strdup(path);
	const char *dir;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	/* One level only: /var/lib/torpor under an existing /var/lib. */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		r = -errno;
	free(copy);
	return r;
}

struct file_setup_args {
	const char *config, *path, *size;
};

/* 0 to go on, 1 after --help, -EINVAL after a wrong word (said). */
static int
parse_args(int argc, char **argv, struct file_setup_args *a)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "plugin-dir", required_argument, NULL, 'p' },
		{ "path", required_argument, NULL, 'P' },
		{ "size", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	cli_option_begin();
	while ((c = getopt_long(argc, argv, ":c:p:h", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'p':
			break;	/* accepted like every command; no plugin is used */
		case 'P':
			a->path = optarg;
			break;
		case 'S':
			a->size = optarg;
			break;
		case 'h':
			file_setup_usage(stdout);
			return 1;
		default:
			return cli_option_error("file-setup", c, argv);
		}
	}
	if (optind < argc) {
		log_error("file-setup: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* The file and its size: from the options, else the configuration, else
 * (the size) the file as it is.  Logs why not. */
static int
choose_file(const struct file_setup_args *a, const struct torpor_config *cfg,
	    const char **ret_path, uint64_t *ret_size)
{
	const char *path, *size_s;
	uint64_t size = 0;
	struct stat st;

	path = a->path ? a->path : config_get(cfg, "file", "path");
	if (!path || !*path)
		path = FILE_SETUP_DEFAULT_PATH;
	if (path[0] != '/') {
		log_error("file-setup: the image file must be an absolute path, not '%s'", path);
		return -EINVAL;
	}
	size_s = a->size ? a->size : config_get(cfg, "file", "size");
	if (size_s && (config_parse_size(size_s, &size) < 0 ||
		       size < BD_FILE_MIN_SIZE)) {
		log_error("file-setup: size '%s' is not a size of at least 1M", size_s);
		return -EINVAL;
	}
	if (!size_s) {
		if (stat(path, &st) < 0 || st.st_size <= 0) {
			log_error("file-setup: no size given: pass --size or set [file] size= in %s",
				  cfg->path ? cfg->path : TORPOR_DEFAULT_CONFIG);
			return -EINVAL;
		}
		size = (uint64_t)st.st_size;
	}
	*ret_path = path;
	*ret_size = bd_round_up(size, BD_BLOCK);
	return 0;
}

/* An image file that is already there: root's, mode 0600, not an
 * active swap file.  Anything else is refused untouched: a user who
 * created it, or could read it, may keep it open. */
static int
check_existing(int fd, const char *path)
{
	char why[512];
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return log_error_errno(-errno, "file-setup: cannot stat %s: %m", path);
	r = bd_check_private(&st, why, sizeof(why));
	if (r < 0) {
		log_error("file-setup: refusing %s: it %s; remove it (rm %s) and run 'torpor file-setup' again to create a new one",
			  path, why, path);
		return r;
	}
	if (bd_in_use(&st, why, sizeof(why)) > 0) {
		log_error("file-setup: refusing %s: it %s", path, why);
		return -EBUSY;
	}
	return 0;
}

/* The image file: created here (O_EXCL, mode 0600, never through a
 * symbolic link), or one that passes check_existing().  Its fd, or
 * -errno (logged). */
static int
open_image_file(const char *path)
{
	int fd, r;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 || errno != EEXIST) {
		if (fd < 0)
			return log_error_errno(-errno, "file-setup: cannot create %s: %m", path);
		return fd;
	}
	/* O_NONBLOCK: a FIFO put there must not hang us. */
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP) {
		log_error("file-setup: refusing %s: it is a symbolic link; name the file itself", path);
		return -ELOOP;
	}
	if (fd < 0)
		return log_error_errno(-errno, "file-setup: cannot open %s: %m", path);
	r = check_existing(fd, path);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Create, allocate and write through the file; its fd, or -errno
 * (logged). */
static int
allocate_file(const char *path, uint64_t size)
{
	char why[512];
	struct stat st;
	int fd, r;

	r = make_parent(path);
	if (r < 0)
		return log_error_errno(r, "file-setup: cannot create the directory of %s: %m", path);
	fd = open_image_file(path);
	if (fd < 0)
		return fd;
	if ((r = bd_btrfs_make_nocow(fd, why, sizeof(why))) < 0 ||
	    (r = bd_check_fs(fd, why, sizeof(why))) < 0)
		log_error("file-setup: %s %s", path, why);
	else if (fstat(fd, &st) < 0)
		r = log_error_errno(-errno, "file-setup: cannot stat %s: %m", path);
	else if ((uint64_t)st.st_size > size && ftruncate(fd, (off_t)size) < 0)
		r = log_error_errno(-errno, "file-setup: cannot shrink %s: %m", path);
	else if (posix_fallocate(fd, 0, (off_t)size) == ENOSPC) {
		log_error("file-setup: not enough space for %" PRIu64 " MiB on the filesystem of %s",
			  size >> 20, path);
		r = -ENOSPC;
	} else if ((r = write_through(fd, size)) < 0)
		log_error_errno(r, "file-setup: writing %s failed: %m", path);
	if (r < 0) {
		close(fd);
		return r;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	r = sync_parent(path);
	if (r < 0)
		log_warning_errno(r, "file-setup: could not sync the directory of %s: %m", path);
	return fd;
}

/* The writer's own checks, so that a file that passes here is one the
 * writer accepts; then what was done and the kernel command line. */
static int
check_and_report(int fd, const char *path, uint64_t size)
{
	char why[512], node[PATH_MAX], words[PATH_MAX + 64];
	struct bd_map map = { 0 };
	uint32_t page = bd_page_size();
	dev_t rdev;
	int r;

	r = bd_file_place(fd, size, false, &map, node, sizeof(node), &rdev, why,
			  sizeof(why));
	if (r < 0) {
		log_error("file-setup: %s %s", path, why);
		return r;
	}
	printf("file-setup: %s: %" PRIu64 " MiB allocated and written, %zu extent%s on %s\n",
	       path, size >> 20, map.n, map.n == 1 ? "" : "s", node);
	if (map.runs[0].phys % page == 0 &&
	    bd_resume_words(node, map.runs[0].phys, page, words, sizeof(words)) == 0)
		printf("file-setup: kernel command line: %s\n", words);
	else
		log_warning("file-setup: the file's first block is not page aligned; resume_offset cannot name it");
	bd_map_clear(&map);
	return 0;
}

int
torpor_file_setup_main(int argc, char **argv)
{
	struct file_setup_args a = { 0 };
	struct torpor_config *cfg = NULL;
	const char *path;
	uint64_t size;
	int fd, r;

	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	r = config_load(a.config, a.config == NULL, &cfg);
	if (r < 0)
		return EXIT_FAILURE;
	r = choose_file(&a, cfg, &path, &size);
	if (r == 0) {
		fd = allocate_file(path, size);
		r = fd < 0 ? fd : check_and_report(fd, path, size);
		if (fd >= 0)
			close(fd);
	}
	config_free(cfg);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
