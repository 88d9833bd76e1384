/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Finding the swap writer's area (swap-area.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <torpor/plugin-util.h>

#include "swap-area.h"

void
swap_area_clear(struct swap_area *a)
{
	bd_map_clear(&a->map);
	a->known = false;
	a->dev_path[0] = a->file_path[0] = a->spec[0] = a->uuid[0] = '\0';
	a->hdr_phys = 0;
	a->rdev = 0;
}

const char *
swap_area_path(const struct swap_area *a)
{
	return a->file_path[0] ? a->file_path : a->dev_path;
}

/* Is the block device or file at path the one in /proc/swaps line name? */
static bool
same_object(const char *name, const struct stat *want)
{
	struct stat st;

	if (stat(name, &st) < 0)
		return false;
	if (S_ISBLK(want->st_mode))
		return S_ISBLK(st.st_mode) && st.st_rdev == want->st_rdev;
	return S_ISREG(st.st_mode) && st.st_dev == want->st_dev &&
	       st.st_ino == want->st_ino;
}

/* /proc/swaps escapes blanks as \040. */
static void
unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/*
 * With want == NULL: pick the active non-zram swap with the most free
 * space into buf.  Otherwise: 1 when want is active (its free bytes in
 * *ret_free when that is not NULL), 0 when not.
 */
static int
scan_proc_swaps(const struct stat *want, char *buf, size_t size,
		uint64_t *ret_free)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[PATH_MAX + 128], name[PATH_MAX];
	unsigned long long sz, used, best = 0;
	int r = want ? 0 : -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%4095s %*s %llu %llu", name, &sz, &used) != 3)
			continue;
		unescape(name);
		if (want) {
			if (same_object(name, want)) {
				if (ret_free)	/* KiB in /proc/swaps */
					*ret_free = used < sz ? (sz - used) * 1024 : 0;
				r = 1;
				break;
			}
			continue;
		}
		if (strncmp(name, "/dev/zram", 9) == 0 || used > sz)
			continue;
		if (r < 0 || sz - used > best) {
			best = sz - used;
			snprintf(buf, size, "%s", name);
			r = 0;
		}
	}
	fclose(f);
	return r;
}

int
swap_area_active(const struct stat *st, uint64_t *ret_free)
{
	return scan_proc_swaps(st, NULL, 0, ret_free);
}

/* A swap file holds a copy of memory once an image is in it: root's,
 * mode 0600 (swapon itself warns about anything else), on a filesystem
 * whose block map stays put.  st: the file, from fd. */
static int
check_swap_file(int fd, struct stat *st, char *why, size_t size)
{
	char reason[384];
	int r;

	if (fstat(fd, st) < 0) {
		r = -errno;
		snprintf(why, size, "cannot be examined: %m");
		return r;
	}
	r = bd_check_private(st, reason, sizeof(reason));
	if (r < 0) {
		snprintf(why, size, "%s; as root: swapoff it if it is active, then chown root:root and chmod 0600 it (safer: a new swap file created 0600)",
			 reason);
		return r;
	}
	return bd_check_fs(fd, why, size);
}

int
swap_area_locate(struct swap_area *a, const struct torpor_host *host,
		 const char *s, uint32_t page)
{
	char path[PATH_MAX], why[1024];
	struct stat st;
	int fd, r;

	snprintf(a->spec, sizeof(a->spec), "%s", s);
	r = bd_resolve(s, path, sizeof(path));
	if (r == -ENODEV)
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR,
			   "cannot find swap area %s: no device has that name (blkid lists the swap areas; name one in [swap] device=)",
			   s);
	else if (r < 0)
		torpor_log_errno(host, SWAP_NAME, TORPOR_LOG_ERR, r,
				 "cannot find swap area %s: %m", s);
	if (r < 0)
		return r;
	if (stat(path, &st) < 0) {
		r = -errno;
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR, "swap area %s (%s) is gone: %m", s, path);
		return r;
	}
	if (S_ISBLK(st.st_mode)) {
		snprintf(a->dev_path, sizeof(a->dev_path), "%s", path);
		a->rdev = st.st_rdev;
		a->hdr_phys = 0;
		a->file_path[0] = '\0';
		/* The logical space is the device itself; its size is
		 * known once it is opened. */
		a->known = true;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR, "%s is neither a block device nor a swap file", path);
		return -EINVAL;
	}
	snprintf(a->file_path, sizeof(a->file_path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR, "cannot open swap file %s: %m", path);
		return r;
	}
	r = check_swap_file(fd, &st, why, sizeof(why));
	/* The device that holds the blocks: on btrfs not st_dev, which is
	 * the filesystem's own number (the kernel's swap area is on the
	 * device, and SET_SWAP_AREA names that). */
	if (r == 0)
		r = bd_file_place(fd, (uint64_t)st.st_size / page * page,
				  true, &a->map, a->dev_path,
				  sizeof(a->dev_path), &a->rdev, why,
				  sizeof(why));
	close(fd);
	if (r < 0) {
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR, "swap file %s %s", path, why);
		return r;
	}
	if (a->map.n == 0 || a->map.runs[0].phys % page) {
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR, "swap file %s does not start on a page boundary of %s",
		    path, a->dev_path);
		return -EINVAL;
	}
	a->hdr_phys = a->map.runs[0].phys;
	a->known = true;
	return 0;
}

int
swap_area_from_cmdline(struct swap_area *a, const struct torpor_host *host)
{
	int r = bd_resume_location(host, a->dev_path, sizeof(a->dev_path),
				   &a->rdev, &a->hdr_phys);

	if (r == -ENOTBLK)
		torpor_log(host, SWAP_NAME, TORPOR_LOG_ERR, "resume= names %s, which is not a block device",
			   a->dev_path);
	if (r == 1)
		snprintf(a->spec, sizeof(a->spec), "%s", a->dev_path);
	return r;
}

const char *
swap_area_configured(const struct torpor_host *host, char *picked,
		     size_t size)
{
	const char *s = host->config_get(SWAP_NAME, "device");

	if (s && *s)
		return s;
	if (scan_proc_swaps(NULL, picked, size, NULL) < 0)
		return NULL;
	return picked;
}
