/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor setup's storage: the stored image to plan for (memory, the
 * filters' expected ratios), and where it goes: an active swap area with
 * room for it, else a preallocated file for the file writer on a
 * filesystem whose blocks stay put.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "btrfs.h"
#include "chain.h"
#include "device-names.h"
#include "dm-stack.h"
#include "file-map.h"
#include "host.h"
#include "loader.h"
#include "log.h"
#include "session.h"
#include "setup.h"
#include "sysroot.h"
#include "writer-common.h"

/* MemTotal from meminfo, in bytes. */
uint64_t
setup_mem_total(void)
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
int
setup_estimate_need(struct setup *st)
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

int
setup_choose_storage(struct setup *st)
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
