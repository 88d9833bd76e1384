/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whether a block device or file is someone else's, and whether a file
 * that will hold a copy of memory is private; see in-use.h.
 *
 * A writer that writes to a device directly opens it with O_EXCL (the
 * kernel then refuses a device that is mounted, held by device-mapper or
 * md, or an active swap area, with EBUSY) and looks itself as well, so
 * that the refusal says why: /proc/self/mountinfo, the holders/ directory
 * in sysfs, /proc/swaps, for the device and, for a whole disk, each of
 * its partitions.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "in-use.h"
#include "text.h"

#define MAX_PARTS 64

static const struct bd_sys_paths real_paths = {
	.sys = "/sys",
	.mountinfo = "/proc/self/mountinfo",
	.swaps = "/proc/swaps",
};

/* A device and its partitions, with their kernel names. */
struct dev_set {
	dev_t dev[MAX_PARTS + 1];
	char name[MAX_PARTS + 1][256];
	size_t n;
};

/* The partitions of the disk in sysfs directory dir: its subdirectories
 * that have a "partition" file. */
static void
add_partitions(const char *dir, struct dev_set *s)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) && s->n <= MAX_PARTS) {
		char p[PATH_MAX], text[64];
		unsigned ma, mi;

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s/partition", dir,
				     de->d_name) >= sizeof(p) ||
		    access(p, F_OK) < 0)
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s/dev", dir,
				     de->d_name) >= sizeof(p) ||
		    text_read_small(p, text, sizeof(text)) < 0 ||
		    sscanf(text, "%u:%u", &ma, &mi) != 2)
			continue;
		s->dev[s->n] = makedev(ma, mi);
		snprintf(s->name[s->n], sizeof(s->name[0]), "%s", de->d_name);
		s->n++;
	}
	closedir(d);
}

static void
sys_dir(const struct bd_sys_paths *p, dev_t dev, char *buf, size_t size)
{
	snprintf(buf, size, "%s/dev/block/%u:%u", p->sys, major(dev), minor(dev));
}

static void
collect(const struct bd_sys_paths *p, dev_t dev, struct dev_set *s)
{
	char dir[PATH_MAX];

	s->n = 1;
	s->dev[0] = dev;
	s->name[0][0] = '\0';
	sys_dir(p, dev, dir, sizeof(dir));
	add_partitions(dir, s);
}

/* "" for the device itself, "partition NAME " for one of its partitions. */
static const char *
who(const struct dev_set *s, size_t i, char *buf, size_t size)
{
	if (i == 0)
		return "";
	snprintf(buf, size, "partition %s ", s->name[i]);
	return buf;
}

/* mountinfo escapes blanks as \040. */
static void
unescape_octal(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

static int
check_mounted(const struct bd_sys_paths *p, const struct dev_set *s,
	      char *why, size_t size)
{
	FILE *f = fopen(p->mountinfo, "re");
	char line[PATH_MAX + 512], point[PATH_MAX], part[300];
	unsigned ma, mi;
	int r = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &ma, &mi, point) != 3)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			if (s->dev[i] != makedev(ma, mi))
				continue;
			unescape_octal(point);
			snprintf(why, size, "%sis mounted on %s",
				 who(s, i, part, sizeof(part)), point);
			r = 1;
			break;
		}
	}
	fclose(f);
	return r;
}

static int
check_holders(const struct bd_sys_paths *p, const struct dev_set *s,
	      char *why, size_t size)
{
	char dir[PATH_MAX], part[300];

	for (size_t i = 0; i < s->n; i++) {
		struct dirent *de;
		DIR *d;

		sys_dir(p, s->dev[i], dir, sizeof(dir));
		strncat(dir, "/holders", sizeof(dir) - strlen(dir) - 1);
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(why, size, "%sis held by %s (a device stacked on it: device-mapper, md, ...)",
				 who(s, i, part, sizeof(part)), de->d_name);
			closedir(d);
			return 1;
		}
		closedir(d);
	}
	return 0;
}

/* /proc/swaps escapes blanks as \040. */
static int
check_swaps(const struct bd_sys_paths *p, const struct stat *st,
	    const struct dev_set *s, char *why, size_t size)
{
	FILE *f = fopen(p->swaps, "re");
	char line[PATH_MAX + 128], name[PATH_MAX], part[300];
	int r = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		struct stat sw;

		if (sscanf(line, "%4095s", name) != 1 || name[0] != '/')
			continue;
		unescape_octal(name);
		if (stat(name, &sw) < 0)
			continue;
		if (S_ISREG(st->st_mode)) {
			if (S_ISREG(sw.st_mode) && sw.st_dev == st->st_dev &&
			    sw.st_ino == st->st_ino) {
				snprintf(why, size, "is an active swap file");
				r = 1;
			}
			continue;
		}
		for (size_t i = 0; S_ISBLK(sw.st_mode) && i < s->n; i++) {
			if (sw.st_rdev != s->dev[i])
				continue;
			snprintf(why, size, "%sis an active swap area",
				 who(s, i, part, sizeof(part)));
			r = 1;
			break;
		}
	}
	fclose(f);
	return r;
}

int
bd_in_use_at(const struct bd_sys_paths *p, const struct stat *st, char *why,
	     size_t why_size)
{
	struct dev_set s = { .n = 0 };
	int r;

	if (S_ISREG(st->st_mode))
		return check_swaps(p, st, &s, why, why_size);
	if (!S_ISBLK(st->st_mode))
		return 0;
	collect(p, st->st_rdev, &s);
	r = check_mounted(p, &s, why, why_size);
	if (r == 0)
		r = check_holders(p, &s, why, why_size);
	if (r == 0)
		r = check_swaps(p, st, &s, why, why_size);
	return r;
}

int
bd_in_use(const struct stat *st, char *why, size_t why_size)
{
	return bd_in_use_at(&real_paths, st, why, why_size);
}

int
bd_open_excl(const char *path, int flags, char *why, size_t why_size)
{
	struct stat st;
	int fd, r;

	fd = open(path, flags | O_EXCL | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -EBUSY && (stat(path, &st) < 0 ||
				    bd_in_use(&st, why, why_size) <= 0))
			snprintf(why, why_size, "is in use (another program has it open exclusively)");
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	/* O_EXCL covers what claims a device; look anyway, for what
	 * does not and for an active swap file. */
	r = bd_in_use(&st, why, why_size);
	if (r != 0) {
		close(fd);
		return r > 0 ? -EBUSY : r;
	}
	return fd;
}

int
bd_check_private(const struct stat *st, char *why, size_t why_size)
{
	uid_t me = geteuid();

	if (!S_ISREG(st->st_mode)) {
		snprintf(why, why_size, "is not a regular file");
		return -EINVAL;
	}
	if (st->st_uid != me) {
		snprintf(why, why_size, "is owned by uid %u, not by %s (uid %u): its owner could read the memory image",
			 (unsigned)st->st_uid, me == 0 ? "root" : "the user torpor runs as",
			 (unsigned)me);
		return -EPERM;
	}
	if (st->st_mode & 077) {
		snprintf(why, why_size, "has mode %04o: other users could read the memory image (it must be 0600)",
			 (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}
