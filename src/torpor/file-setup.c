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

#include "config.h"
#include "log.h"

/* The writers' block-device helpers, compiled into this program too: the
 * checks here must be exactly the ones the file writer applies. */
#include "blockdev.h"

int torpor_file_setup_main(int argc, char **argv);

#define FILE_SETUP_DEFAULT_PATH "/var/lib/torpor/image"

static void
file_setup_usage(FILE *f)
{
	fprintf(f,
		"Usage: torpor file-setup [--config FILE] [--path PATH] [--size SIZE]\n\n"
		"Create the image file of the file writer: allocate it, write it once\n"
		"in full so that no extent is left unwritten, sync it, and print the\n"
		"kernel command line words that locate it.  PATH and SIZE default to\n"
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

int
torpor_file_setup_main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "plugin-dir", required_argument, NULL, 'p' },
		{ "path", required_argument, NULL, 'P' },
		{ "size", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *arg_config = NULL, *arg_path = NULL, *arg_size = NULL;
	struct torpor_config *cfg = NULL;
	const char *path, *size_s;
	char why[512], node[PATH_MAX], uuid[40];
	struct bd_map map = { 0 };
	uint64_t size = 0;
	struct stat st;
	long page = sysconf(_SC_PAGESIZE);
	int c, fd = -1, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "c:p:h", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case 'p':
			break;	/* accepted like every command; no plugin is used */
		case 'P':
			arg_path = optarg;
			break;
		case 'S':
			arg_size = optarg;
			break;
		case 'h':
			file_setup_usage(stdout);
			return EXIT_SUCCESS;
		default:
			fprintf(stderr, "Try 'torpor file-setup --help'.\n");
			return EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		log_error("file-setup: unexpected argument '%s'", argv[optind]);
		return EXIT_FAILURE;
	}
	r = config_load(arg_config, arg_config == NULL, &cfg);
	if (r < 0)
		return EXIT_FAILURE;
	path = arg_path ? arg_path : config_get(cfg, "file", "path");
	if (!path || !*path)
		path = FILE_SETUP_DEFAULT_PATH;
	if (path[0] != '/') {
		log_error("file-setup: the image file must be an absolute path, not '%s'", path);
		goto fail;
	}
	size_s = arg_size ? arg_size : config_get(cfg, "file", "size");
	if (size_s && (config_parse_size(size_s, &size) < 0 || size < (1u << 20))) {
		log_error("file-setup: size '%s' is not a size of at least 1M", size_s);
		goto fail;
	}
	if (!size_s) {
		if (stat(path, &st) == 0 && st.st_size > 0) {
			size = (uint64_t)st.st_size;
		} else {
			log_error("file-setup: no size given: pass --size or set [file] size= in %s",
				  cfg->path ? cfg->path : TORPOR_DEFAULT_CONFIG);
			goto fail;
		}
	}
	size = bd_round_up(size, BD_BLOCK);

	r = make_parent(path);
	if (r < 0) {
		log_error_errno(r, "file-setup: cannot create the directory of %s: %m", path);
		goto fail;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		log_error_errno(-errno, "file-setup: cannot open %s: %m", path);
		goto fail;
	}
	/* The file will hold a copy of memory. */
	if (fchmod(fd, 0600) < 0) {
		log_error_errno(-errno, "file-setup: cannot make %s private: %m", path);
		goto fail;
	}
	r = bd_check_fs(fd, why, sizeof(why));
	if (r < 0) {
		log_error("file-setup: %s %s", path, why);
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		log_error_errno(-errno, "file-setup: cannot stat %s: %m", path);
		goto fail;
	}
	if ((uint64_t)st.st_size > size && ftruncate(fd, (off_t)size) < 0) {
		log_error_errno(-errno, "file-setup: cannot shrink %s: %m", path);
		goto fail;
	}
	r = posix_fallocate(fd, 0, (off_t)size);
	if (r == ENOSPC) {
		log_error("file-setup: not enough space for %" PRIu64 " MiB on the filesystem of %s",
			  size >> 20, path);
		goto fail;
	}
	r = write_through(fd, size);
	if (r < 0) {
		log_error_errno(r, "file-setup: writing %s failed: %m", path);
		goto fail;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	r = sync_parent(path);
	if (r < 0)
		log_warning_errno(r, "file-setup: could not sync the directory of %s: %m", path);

	/* The writer's own checks, so that a file that passes here is one
	 * the writer accepts. */
	r = bd_file_map(fd, size, &map, why, sizeof(why));
	if (r < 0) {
		log_error("file-setup: %s %s", path, why);
		goto fail;
	}
	r = bd_devnode(st.st_dev, node, sizeof(node));
	if (r < 0) {
		log_error_errno(r, "file-setup: cannot find the block device under %s: %m", path);
		goto fail;
	}
	printf("file-setup: %s: %" PRIu64 " MiB allocated and written, %zu extent%s on %s\n",
	       path, size >> 20, map.n, map.n == 1 ? "" : "s", node);
	if (page > 0 && map.runs[0].phys % (uint64_t)page == 0) {
		if (bd_uuid_of(node, uuid, sizeof(uuid)) == 0)
			printf("file-setup: kernel command line: resume=UUID=%s resume_offset=%" PRIu64 "\n",
			       uuid, map.runs[0].phys / (uint64_t)page);
		else
			printf("file-setup: kernel command line: resume=%s resume_offset=%" PRIu64 "\n",
			       node, map.runs[0].phys / (uint64_t)page);
	} else {
		log_warning("file-setup: the file's first block is not page aligned; resume_offset cannot name it");
	}
	bd_map_clear(&map);
	close(fd);
	config_free(cfg);
	return EXIT_SUCCESS;
fail:
	bd_map_clear(&map);
	if (fd >= 0)
		close(fd);
	config_free(cfg);
	return EXIT_FAILURE;
}
