/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel snapshot source: the ioctls of the snapshot device
 * (kernel/power/user.c, include/uapi/linux/suspend_ioctls.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/suspend_ioctls.h>

#include "log.h"
#include "snapshot-internal.h"
#include "snapshot.h"
#include "text.h"

struct kernel_snapshot {
	struct snapshot s;	/* first: the ops get a struct snapshot * */
	int fd;
	bool locked;		/* we called mlockall() */
	bool platform;		/* SNAPSHOT_PLATFORM_SUPPORT is on */
};

static struct kernel_snapshot *
to_kernel(struct snapshot *s)
{
	return (struct kernel_snapshot *)s;
}

static int
kernel_ioctl(struct snapshot *s, unsigned long req, unsigned long arg)
{
	if (ioctl(to_kernel(s)->fd, req, arg) < 0)
		return -errno;
	return 0;
}

static int
kernel_freeze(struct snapshot *s)
{
	return kernel_ioctl(s, SNAPSHOT_FREEZE, 0);
}

static int
kernel_unfreeze(struct snapshot *s)
{
	return kernel_ioctl(s, SNAPSHOT_UNFREEZE, 0);
}

/* The kernel takes the byte count as the argument itself. */
static int
kernel_pref_image_size(struct snapshot *s, uint64_t bytes)
{
	if (bytes > (unsigned long)-1)
		bytes = (unsigned long)-1;
	return kernel_ioctl(s, SNAPSHOT_PREF_IMAGE_SIZE, (unsigned long)bytes);
}

static int
kernel_create_image(struct snapshot *s, int *in_suspend)
{
	int v = 0;

	if (ioctl(to_kernel(s)->fd, SNAPSHOT_CREATE_IMAGE, &v) < 0)
		return -errno;
	*in_suspend = v;
	return 0;
}

static int
kernel_image_size(struct snapshot *s, uint64_t *ret)
{
	__kernel_loff_t size = 0;

	if (ioctl(to_kernel(s)->fd, SNAPSHOT_GET_IMAGE_SIZE, &size) < 0)
		return -errno;
	if (size < 0)
		return -EIO;
	*ret = (uint64_t)size;
	return 0;
}

/*
 * One page, or its rest from byte `off` on, read into rpage or written
 * from wpage.  The kernel hands out (takes) at most one page per read()
 * (write()) and never crosses a page boundary, so a short one leaves the
 * rest of the same page.  Returns the page's size, 0 when the first
 * call says the image is at its end (read) or complete (write), -errno.
 */
static ssize_t
kernel_page_io(int fd, uint8_t *rpage, const uint8_t *wpage, size_t off,
	       size_t size)
{
	while (off < size) {
		ssize_t k = rpage ? read(fd, rpage + off, size - off) :
				    write(fd, wpage + off, size - off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return off == 0 ? 0 : -EIO;
		off += (size_t)k;
	}
	return (ssize_t)size;
}

static ssize_t
kernel_read_page(struct snapshot *s, void *buf)
{
	return kernel_page_io(to_kernel(s)->fd, buf, NULL, 0, s->page_size);
}

/*
 * The kernel's log lines about a refused image, from text holding kmsg
 * records ("PRIO,SEQ,TIME,FLAGS;message", continuation lines beginning
 * with a space) one after another: those of the hibernation code
 * (kernel/power/snapshot.c's "Image mismatch: ...", x86's "Hibernate
 * inconsistent memory map detected!" and "Unrecognized hibernate image
 * header format!"), at most four, joined by "; " into said.
 */
void
snapshot_kmsg_pick(const char *text, size_t len, char *said, size_t size)
{
	static const char *const words[] = {
		"mismatch", "ibernat", "memory map", "image header",
	};
	const char *p = text, *end = text + len;
	unsigned picked = 0;
	size_t used = strnlen(said, size);

	while (p < end && picked < 4) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end, *msg = NULL, *q;
		char line[256];
		size_t n, i;

		if (*p != ' ')
			msg = memchr(p, ';', (size_t)(eol - p));
		p = nl ? nl + 1 : end;
		if (!msg)
			continue;
		msg++;
		n = (size_t)(eol - msg) < sizeof(line) - 1 ?
		    (size_t)(eol - msg) : sizeof(line) - 1;
		/* The kernel escapes what is not printable; be sure. */
		for (i = 0, q = msg; i < n; i++, q++)
			line[i] = *q >= 0x20 && *q < 0x7f ? *q : '?';
		line[n] = '\0';
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strstr(line, words[i]))
				break;
		if (i == sizeof(words) / sizeof(words[0]))
			continue;
		if (used + 1 < size)
			used += (size_t)snprintf(said + used, size - used, "%s\"%s\"",
						 picked ? "; " : "", line);
		if (used >= size)
			used = size - 1;
		picked++;
	}
}

/* /dev/kmsg read from its end on: opened before the write that makes
 * the kernel check the header, read after a refusal.  -1 when it cannot
 * be opened (no devtmpfs, no permission): the refusal is said without
 * the kernel's words. */
static int
kmsg_mark(void)
{
	int fd = open(KMSG_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The records since the mark, one per read(), until there is none left
 * (EAGAIN) or the bound: a busy log cannot hold the boot here. */
static void
kmsg_read_said(int fd, char *said, size_t size)
{
	char rec[2048];
	unsigned n;

	said[0] = '\0';
	for (n = 0; n < 256; n++) {
		ssize_t k = read(fd, rec, sizeof(rec));

		if (k < 0 && (errno == EPIPE || errno == EINTR))
			continue;	/* records overwritten: go on */
		if (k <= 0)
			break;
		snapshot_kmsg_pick(rec, (size_t)k, said, size);
	}
}

/*
 * write() returns 0 once the kernel has every page of the image.  The
 * kernel checks the header page (load_header(): the release, or on x86
 * its architecture header) when it is asked for the next page, before it
 * takes a byte of it: the write of page 1 is the one a refusal comes
 * from, with -EPERM, and the kernel's reason is in its log.
 */
static ssize_t
kernel_write_page(struct snapshot *s, const void *buf)
{
	struct kernel_snapshot *ks = to_kernel(s);
	int kmsg = s->pages_written == 1 ? kmsg_mark() : -1;
	ssize_t k = kernel_page_io(ks->fd, NULL, buf, 0, s->page_size);

	if (k > 0)
		s->pages_written++;
	if (k == -EPERM && kmsg >= 0)
		kmsg_read_said(kmsg, s->refusal_said, sizeof(s->refusal_said));
	if (kmsg >= 0)
		close(kmsg);
	return k;
}

/*
 * n pages in as few system calls as the kernel allows: the device has no
 * read_iter or write_iter, so readv() and writev() call its read() or
 * write() once per iovec and stop at the first that comes short (the
 * image's end, or an error they then keep to themselves).  A page split
 * by a short read() or write() is finished the one-page way.
 */
#define KERNEL_IOV_PAGES 64

static ssize_t
kernel_pages(struct snapshot *s, uint8_t *rbuf, const uint8_t *wbuf, size_t n)
{
	int fd = to_kernel(s)->fd;
	/* iovec's base is not const: writev() only reads through it */
	uint8_t *base = rbuf ? rbuf : (uint8_t *)wbuf, *split;
	struct iovec iov[KERNEL_IOV_PAGES];
	size_t done = 0, i, m, got, at;
	ssize_t k;

	while (done < n) {
		m = n - done < KERNEL_IOV_PAGES ? n - done : KERNEL_IOV_PAGES;
		for (i = 0; i < m; i++) {
			iov[i].iov_base = base + (done + i) * s->page_size;
			iov[i].iov_len = s->page_size;
		}
		k = rbuf ? readv(fd, iov, (int)m) : writev(fd, iov, (int)m);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			if (done)
				break;
			return -errno;
		}
		got = (size_t)k / s->page_size;
		at = (size_t)k % s->page_size;
		if (at) {
			split = base + (done + got) * s->page_size;
			k = kernel_page_io(fd, rbuf ? split : NULL, rbuf ? NULL : split,
					   at, s->page_size);
			if (k < 0)
				return k;
			got++;
		}
		done += got;
		if (got < m)
			break;
	}
	if (wbuf)
		s->pages_written += done;
	return (ssize_t)(done * s->page_size);
}

static ssize_t
kernel_read_pages(struct snapshot *s, void *buf, size_t n)
{
	return kernel_pages(s, buf, NULL, n);
}

static ssize_t
kernel_write_pages(struct snapshot *s, const void *buf, size_t n)
{
	return kernel_pages(s, NULL, buf, n);
}

static int
kernel_atomic_restore(struct snapshot *s)
{
	int r = kernel_ioctl(s, SNAPSHOT_ATOMIC_RESTORE, 0);

	if (r == -EPERM)
		log_error("the kernel refused to restore: the image it was given is incomplete, or tasks are not frozen");
	return r;
}

static int
kernel_free_image(struct snapshot *s)
{
	return kernel_ioctl(s, SNAPSHOT_FREE, 0);
}

static int
kernel_platform_support(struct snapshot *s, bool on)
{
	int r = kernel_ioctl(s, SNAPSHOT_PLATFORM_SUPPORT, on ? 1 : 0);

	if (r >= 0)
		to_kernel(s)->platform = on;
	return r;
}

/*
 * With platform support (SNAPSHOT_PLATFORM_SUPPORT, set before the image
 * was created) SNAPSHOT_POWER_OFF enters the platform's hibernation state
 * (ACPI S4).  Without it the ioctl does nothing at all, and it returns
 * when the platform has no such state: either way the machine is then
 * switched off the plain way.
 */
static int
kernel_power_off(struct snapshot *s)
{
	if (to_kernel(s)->platform) {
		int r = kernel_ioctl(s, SNAPSHOT_POWER_OFF, 0);

		if (r < 0)
			log_warning_errno(r, "platform power-off failed, powering off directly: %m");
		else
			log_warning("platform power-off returned; powering off directly");
	}
	/* No sync() here: the image is written, and the writer flushed its
	 * own device.  After the snapshot the freezable kernel threads
	 * (jbd2 among them) are frozen, so syncing a journalled filesystem
	 * would wait for them for ever and the machine would never switch
	 * off.  The kernel synced every filesystem at SNAPSHOT_FREEZE. */
	if (reboot(RB_POWER_OFF) < 0)
		return -errno;
	return 0;
}

static int
kernel_reboot(struct snapshot *s)
{
	/* As for the power-off: no sync() after the snapshot. */
	if (reboot(RB_AUTOBOOT) < 0)
		return -errno;
	return 0;
}

static int
kernel_suspend_to_ram(struct snapshot *s)
{
	return kernel_ioctl(s, SNAPSHOT_S2RAM, 0);
}

static int
kernel_set_swap_area(struct snapshot *s, uint32_t dev, uint64_t offset)
{
	struct resume_swap_area area;

	/* The kernel matches the offset against the first extent of its
	 * swap areas (swap_type_of()), which it counts in pages, as it
	 * counts resume_offset=; the host service takes bytes. */
	if (offset % s->page_size)
		return -EINVAL;
	memset(&area, 0, sizeof(area));
	area.offset = (__kernel_loff_t)(offset / s->page_size);
	area.dev = dev;
	if (ioctl(to_kernel(s)->fd, SNAPSHOT_SET_SWAP_AREA, &area) < 0)
		return -errno;
	return 0;
}

static int64_t
kernel_loff_ioctl(struct snapshot *s, unsigned long req)
{
	__kernel_loff_t v = 0;

	if (ioctl(to_kernel(s)->fd, req, &v) < 0)
		return -errno;
	if (v < 0)
		return -EIO;
	return v;
}

static int64_t
kernel_avail_swap(struct snapshot *s)
{
	return kernel_loff_ioctl(s, SNAPSHOT_AVAIL_SWAP_SIZE);
}

static int64_t
kernel_alloc_swap_page(struct snapshot *s)
{
	return kernel_loff_ioctl(s, SNAPSHOT_ALLOC_SWAP_PAGE);
}

static int
kernel_free_swap_pages(struct snapshot *s)
{
	return kernel_ioctl(s, SNAPSHOT_FREE_SWAP_PAGES, 0);
}

static void
kernel_close(struct snapshot *s)
{
	struct kernel_snapshot *k = to_kernel(s);

	if (k->fd >= 0)
		close(k->fd);
	/* torpord lives on after the cycle: do not keep its heap pinned. */
	if (k->locked)
		munlockall();
	free(k);
}

static const struct snapshot_ops kernel_ops = {
	.freeze = kernel_freeze,
	.unfreeze = kernel_unfreeze,
	.pref_image_size = kernel_pref_image_size,
	.create_image = kernel_create_image,
	.image_size = kernel_image_size,
	.read_page = kernel_read_page,
	.write_page = kernel_write_page,
	.read_pages = kernel_read_pages,
	.write_pages = kernel_write_pages,
	.atomic_restore = kernel_atomic_restore,
	.free_image = kernel_free_image,
	.platform_support = kernel_platform_support,
	.reboot = kernel_reboot,
	.suspend_to_ram = kernel_suspend_to_ram,
	.power_off = kernel_power_off,
	.set_swap_area = kernel_set_swap_area,
	.avail_swap = kernel_avail_swap,
	.alloc_swap_page = kernel_alloc_swap_page,
	.free_swap_pages = kernel_free_swap_pages,
	.close = kernel_close,
};

const char *
snapshot_kernel_disabled_by(const char *lockdown_path,
			    const char *cmdline_path, char *buf, size_t size)
{
	return snapshot_kernel_block(lockdown_path, cmdline_path, buf, size) ?
	       buf : NULL;
}

enum snapshot_block
snapshot_kernel_block(const char *lockdown_path, const char *cmdline_path,
		      char *buf, size_t size)
{
	char text[4096];

	if (text_read_small(lockdown_path, text, sizeof(text)) > 0) {
		const char *mode = NULL;

		if (strstr(text, "[integrity]"))
			mode = "integrity";
		else if (strstr(text, "[confidentiality]"))
			mode = "confidentiality";
		if (mode) {
			snprintf(buf, size, "hibernation is disabled by kernel lockdown (%s mode, usually because of Secure Boot)",
				 mode);
			return SNAPSHOT_BLOCK_LOCKDOWN;
		}
	}
	if (text_read_small(cmdline_path, text, sizeof(text)) > 0 &&
	    (text_has_word(text, "nohibernate") || text_has_word(text, "hibernate=no"))) {
		snprintf(buf, size, "hibernation is disabled by 'nohibernate' on the kernel command line");
		return SNAPSHOT_BLOCK_CMDLINE;
	}
	return SNAPSHOT_BLOCK_NONE;
}

const char *
snapshot_kernel_eperm_reason(const char *lockdown_path,
			     const char *cmdline_path, char *buf, size_t size)
{
	if (snapshot_kernel_disabled_by(lockdown_path, cmdline_path, buf, size))
		return buf;
	snprintf(buf, size, "hibernation is unavailable (secretmem in use, or not permitted)");
	return buf;
}

static int
explain_open_error(int r, const char *path)
{
	char why[256];

	switch (r) {
	case -EPERM:
		return log_error_errno(r, "cannot open %s: %s", path,
				       snapshot_kernel_eperm_reason("/sys/kernel/security/lockdown",
								    "/proc/cmdline",
								    why, sizeof(why)));
	case -EACCES:
		return log_error_errno(r, "cannot open %s: %m: hibernation needs root (sudo, or systemctl hibernate)", path);
	case -EBUSY:
		return log_error_errno(r, "cannot open %s: another program has the snapshot device open, as one hibernation or resume at a time may (fuser -v %s names it)", path, path);
	case -ENOENT:
		return log_error_errno(r, "cannot open %s: no snapshot device (a kernel without CONFIG_HIBERNATION_SNAPSHOT_DEV, or the wrong path)", path);
	case -ENODEV:
	case -ENXIO:
		return log_error_errno(r, "cannot open %s: no snapshot device behind it (kernel without CONFIG_HIBERNATION_SNAPSHOT_DEV?)", path);
	default:
		return log_error_errno(r, "cannot open %s: %m", path);
	}
}

/*
 * Open the snapshot device at path: O_RDONLY to hibernate, O_WRONLY to
 * resume (O_RDWR is refused by the kernel).  In hibernate mode all our
 * memory is locked once the device is open: the device is opened first
 * so that a missing or refused device is reported as such, not as a
 * failed mlockall(); the lock is in place long before SNAPSHOT_FREEZE.
 */
int
snapshot_kernel_open(const char *path, enum snapshot_mode mode,
		     struct snapshot **ret)
{
	struct kernel_snapshot *k;
	long page_size;
	int fd, r;

	page_size = sysconf(_SC_PAGESIZE);
	if (page_size <= 0)
		return -EINVAL;

	fd = open(path, (mode == SNAPSHOT_MODE_HIBERNATE ? O_RDONLY : O_WRONLY) |
		  O_CLOEXEC);
	if (fd < 0)
		return explain_open_error(-errno, path);

	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return -ENOMEM;
	}
	k->fd = fd;
	k->s.ops = &kernel_ops;
	k->s.kind = TORPOR_SNAPSHOT_KERNEL;
	k->s.mode = mode;
	k->s.page_size = (size_t)page_size;

	if (mode == SNAPSHOT_MODE_HIBERNATE) {
		if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
			r = log_error_errno(-errno, "cannot lock torpor's memory (mlockall): %m");
			kernel_close(&k->s);
			return r;
		}
		k->locked = true;
	}
	*ret = &k->s;
	return 0;
}
