/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one-shot boot of the running kernel (boot-once.h): grubenv's
 * next_entry written in place, systemd-boot's LoaderEntryOneShot through
 * efivarfs, and both taken back.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "boot-once.h"
#include "owner.h"
#include "text.h"

#define LOADER_ONESHOT "LoaderEntryOneShot-" BOOT_LOADER_GUID
#define EFIVARFS_MAGIC 0xde5e81e4UL
/* EFI_VARIABLE_NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS, as
 * bootctl set-oneshot writes it. */
#define EFI_ATTRS 7u

/* ---- GRUB ------------------------------------------------------------- */

/*
 * root/boot/grub/grubenv opened for reading and writing and checked
 * through its descriptor, as if someone other than root had prepared it:
 * the folder and the file reached without a symbolic link, both root's
 * alone, the file regular, of one link and of GRUBENV_SIZE bytes.  Its
 * block into block.  The descriptor, or -errno with why.
 */
static int
grubenv_open(const char *root, char *block, char *why, size_t why_size)
{
	char path[PATH_MAX];
	struct stat dir, st;
	ssize_t n;
	int dfd, fd;

	snprintf(path, sizeof(path), "%s/boot/grub", root);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return text_fail(-errno, why, why_size, "%s: %s", path,
				 strerror(errno));
	fd = openat(dfd, "grubenv", O_RDWR | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int r = -errno;

		close(dfd);
		return text_fail(r, why, why_size, "%s/grubenv: %s", path,
				 r == -ELOOP ? "a symbolic link, not followed" :
				 strerror(-r));
	}
	if (fstat(dfd, &dir) < 0 || fstat(fd, &st) < 0) {
		n = -errno;
		goto fail;
	}
	close(dfd);
	dfd = -1;
	n = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		text_fail(0, why, why_size, "%s/grubenv: not a regular file", path);
		goto fail;
	}
	if (st.st_size != GRUBENV_SIZE) {
		text_fail(0, why, why_size, "%s/grubenv: %lld bytes, not %d",
			  path, (long long)st.st_size, GRUBENV_SIZE);
		goto fail;
	}
	if (!owner_root_only(&st) || !owner_root_only(&dir) || st.st_nlink != 1) {
		text_fail(0, why, why_size,
			  "%s/grubenv or its folder may be changed by others than root (or it has other links)",
			  path);
		goto fail;
	}
	/* What a boot wrote behind this kernel's cache (a resume): a clean
	 * page is read again from the disk. */
	posix_fadvise(fd, 0, GRUBENV_SIZE, POSIX_FADV_DONTNEED);
	n = pread(fd, block, GRUBENV_SIZE, 0);
	if (n != GRUBENV_SIZE) {
		n = n < 0 ? -errno : -EIO;
		text_fail(0, why, why_size, "%s/grubenv: cannot read it: %s",
			  path, strerror((int)-n));
		goto fail;
	}
	return fd;
fail:
	if (why && !why[0])
		text_fail(0, why, why_size, "%s: %s", path, strerror((int)-n));
	if (dfd >= 0)
		close(dfd);
	close(fd);
	return (int)n;
}

/* block into the open grubenv, on the disk before it returns. */
static int
grubenv_write(int fd, const char *block, char *why, size_t why_size)
{
	ssize_t n = pwrite(fd, block, GRUBENV_SIZE, 0);

	if (n != GRUBENV_SIZE)
		return text_fail(n < 0 ? -errno : -EIO, why, why_size,
				 "writing grubenv: %s",
				 n < 0 ? strerror(errno) : "a short write");
	if (fsync(fd) < 0)
		return text_fail(-errno, why, why_size, "syncing grubenv: %s",
				 strerror(errno));
	return 0;
}

static int
grub_set(const struct next_boot *p, struct boot_once *o, char *why,
	 size_t why_size)
{
	char now[GRUBENV_SIZE], msg[256];
	struct grubenv env;
	int fd, r;

	fd = grubenv_open(p->root, now, why, why_size);
	if (fd < 0)
		return fd;
	if (memcmp(now, p->b.grubenv, sizeof(now)) != 0)
		r = text_fail(-ESTALE, why, why_size,
			      "%s/boot/grub/grubenv changed since it was checked: not written",
			      p->root);
	else
		r = grubenv_parse(now, sizeof(now), &env, msg, sizeof(msg));
	if (r >= 0)
		r = grubenv_with_next_entry(now, sizeof(now), p->once_id,
					    o->written, msg, sizeof(msg));
	if (r < 0 && why && !why[0])
		text_fail(r, why, why_size, "grubenv: %s", msg);
	if (r >= 0) {
		memcpy(o->before, now, sizeof(now));
		snprintf(o->prev_next, sizeof(o->prev_next), "%s",
			 env.next_entry);
		r = grubenv_write(fd, o->written, why, why_size);
		if (r < 0)	/* a part of it may have gone */
			grubenv_write(fd, o->before, NULL, 0);
	}
	close(fd);
	return r;
}

static int
grub_restore(struct boot_once *o, char *why, size_t why_size)
{
	char now[GRUBENV_SIZE], out[GRUBENV_SIZE], msg[256];
	struct grubenv env;
	int fd, r;

	fd = grubenv_open(o->root, now, why, why_size);
	if (fd < 0)
		return fd;
	r = grubenv_parse(now, sizeof(now), &env, msg, sizeof(msg));
	if (r < 0) {
		text_fail(r, why, why_size, "grubenv: %s: left as it is", msg);
	} else if (!memcmp(now, o->written, sizeof(now))) {
		/* Still torpor's, untouched: the block as it was. */
		r = grubenv_write(fd, o->before, why, why_size);
	} else if (!strcmp(env.next_entry, o->id) || env.next_entry[0]) {
		r = text_fail(-EBUSY, why, why_size,
			      "grubenv changed since the one-shot was set (next_entry=%s): left as it is",
			      env.next_entry);
	} else if (o->prev_next[0]) {
		/* GRUB used torpor's one-shot: the user's comes back. */
		r = grubenv_with_next_entry(now, sizeof(now), o->prev_next,
					    out, msg, sizeof(msg));
		if (r < 0)
			text_fail(r, why, why_size, "grubenv: %s", msg);
		else
			r = grubenv_write(fd, out, why, why_size);
	}
	close(fd);
	return r;
}

/* ---- systemd-boot ----------------------------------------------------- */

/* efivarfs makes its files immutable: lift that before a change.  Not
 * efivarfs (a test's root), nothing to lift. */
static void
efivar_mutable(int fd)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0 || !(flags & FS_IMMUTABLE_FL))
		return;
	flags &= ~FS_IMMUTABLE_FL;
	ioctl(fd, FS_IOC_SETFLAGS, &flags);
}

static void
oneshot_path(const char *root, char *path, size_t size)
{
	snprintf(path, size, "%s/sys/firmware/efi/efivars/" LOADER_ONESHOT,
		 root);
}

/* The variable's file into buf: its length, 0 when there is none (or,
 * after a resume, when the firmware no longer has it), or -errno. */
static ssize_t
efivar_read(const char *root, unsigned char *buf, size_t size, char *why,
	    size_t why_size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	oneshot_path(root, path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return text_fail(-errno, why, why_size, "%s: %s", path,
				 errno == ELOOP ? "a symbolic link" :
				 strerror(errno));
	n = read(fd, buf, size);
	if (n < 0 && errno != ENOENT && errno != EIO)
		n = text_fail(-errno, why, why_size, "%s: %s", path,
			      strerror(errno));
	else if (n < 0)
		n = 0;
	else if ((size_t)n == size)
		n = text_fail(-EFBIG, why, why_size, "%s: too long", path);
	close(fd);
	return n;
}

/* data (attributes first) as the variable, in one write as efivarfs
 * wants; len 0 removes it. */
static int
efivar_write(const char *root, const unsigned char *data, size_t len,
	     char *why, size_t why_size)
{
	char path[PATH_MAX];
	struct statfs sfs;
	int fd, r = 0;

	oneshot_path(root, path, sizeof(path));
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		efivar_mutable(fd);
	if (len == 0) {
		if (fd >= 0)
			close(fd);
		if (unlink(path) < 0 && errno != ENOENT)
			return text_fail(-errno, why, why_size, "removing %s: %s",
					 path, strerror(errno));
		return 0;
	}
	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0644);
	if (fd < 0)
		return text_fail(-errno, why, why_size, "%s: %s", path,
				 errno == ELOOP ? "a symbolic link" :
				 strerror(errno));
	if (write(fd, data, len) != (ssize_t)len)
		r = text_fail(-errno ? -errno : -EIO, why, why_size,
			      "writing %s: %s", path, strerror(errno));
	/* efivarfs replaces the variable; a plain file keeps its tail. */
	else if (fstatfs(fd, &sfs) == 0 &&
		 (unsigned long)sfs.f_type != EFIVARFS_MAGIC &&
		 ftruncate(fd, (off_t)len) < 0)
		r = text_fail(-errno, why, why_size, "%s: %s", path,
			      strerror(errno));
	close(fd);
	return r;
}

static int
sd_set(const struct next_boot *p, struct boot_once *o, char *why,
	 size_t why_size)
{
	ssize_t n;
	size_t i;

	n = efivar_read(p->root, o->prev_var, sizeof(o->prev_var), why,
			why_size);
	if (n < 0)
		return (int)n;
	o->prev_len = (size_t)n;
	o->var[0] = EFI_ATTRS;
	o->var_len = 4;
	for (i = 0; i <= strlen(p->once_id); i++) {	/* with its NUL */
		o->var[o->var_len++] = (unsigned char)p->once_id[i];
		o->var[o->var_len++] = 0;
	}
	return efivar_write(p->root, o->var, o->var_len, why, why_size);
}

static int
sd_restore(struct boot_once *o, char *why, size_t why_size)
{
	unsigned char now[BOOT_ONCE_EFIVAR_MAX];
	ssize_t n = efivar_read(o->root, now, sizeof(now), why, why_size);

	if (n < 0)
		return (int)n;
	/* Still torpor's; or systemd-boot removed it at boot while the
	 * user's had been set before: the one before comes back. */
	if (((size_t)n == o->var_len && !memcmp(now, o->var, o->var_len)) ||
	    (n == 0 && o->prev_len))
		return efivar_write(o->root, o->prev_var, o->prev_len, why,
				    why_size);
	if (n == 0)
		return 0;
	return text_fail(-EBUSY, why, why_size,
			 "LoaderEntryOneShot changed since the one-shot was set: left as it is");
}

/* ---- both -------------------------------------------------------------- */

int
boot_once_restore(struct boot_once *o, char *why, size_t why_size)
{
	int r = 0;

	if (why && why_size)
		why[0] = '\0';
	if (o->loader == BOOT_LOADER_GRUB)
		r = grub_restore(o, why, why_size);
	else if (o->loader == BOOT_LOADER_SYSTEMD_BOOT)
		r = sd_restore(o, why, why_size);
	if (r >= 0)
		o->loader = BOOT_LOADER_UNKNOWN;
	return r;
}

int
boot_once_set(const struct next_boot *p, struct boot_once *ret, char *why,
	      size_t why_size)
{
	struct boot_next *check;
	char msg[512];
	int r;

	if (why && why_size)
		why[0] = '\0';
	memset(ret, 0, sizeof(*ret));
	if (p->verdict != NEXT_BOOT_REDIRECT)
		return text_fail(-EINVAL, why, why_size, "no one-shot planned");
	snprintf(ret->root, sizeof(ret->root), "%s", p->root);
	snprintf(ret->id, sizeof(ret->id), "%s", p->once_id);
	if (p->b.loader == BOOT_LOADER_GRUB)
		r = grub_set(p, ret, why, why_size);
	else
		r = sd_set(p, ret, why, why_size);
	if (r < 0)
		return r;
	ret->loader = p->b.loader;
	/* The boot loader's own reading of what was written. */
	check = malloc(sizeof(*check));
	if (!check)
		r = text_fail(-ENOMEM, why, why_size, "out of memory");
	else if (boot_next_inspect(p->root, p->running, check, msg,
				   sizeof(msg)) < 0)
		r = text_fail(-EBADMSG, why, why_size,
			      "the boot loader's files do not read back: %s",
			      msg);
	else if (check->next < 0 ||
		 strcmp(check->menu.e[check->next].release, p->running))
		r = text_fail(-EBADMSG, why, why_size,
			      "read back, the next boot would still not start %s",
			      p->running);
	free(check);
	if (r < 0)
		boot_once_restore(ret, NULL, 0);
	return r;
}
