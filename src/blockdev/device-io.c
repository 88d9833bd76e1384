/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Aligned I/O on a block device opened O_DIRECT; see device-io.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "device-io.h"
#include "in-use.h"

uint64_t
bd_round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* pread or pwrite all of len bytes, across short transfers and EINTR. */
static int
full_io(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t k = write ? pwrite(fd, p, len, (off_t)off) :
				    pread(fd, p, len, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return write ? -EIO : -ENODATA;
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

int
bd_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	return full_io(fd, buf, len, off, false);
}

int
bd_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	return full_io(fd, (void *)buf, len, off, true);
}

void
bd_init(struct bd_dev *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

int
bd_open(struct bd_dev *d, const char *path, enum bd_mode mode, char *why,
	size_t why_size)
{
	int flags = (mode == BD_RDONLY ? O_RDONLY : O_RDWR) | O_DIRECT;
	char scratch[256];
	struct stat st;
	void *b = NULL;
	int fd, r;

	if (!why) {
		why = scratch;
		why_size = sizeof(scratch);
	}
	why[0] = '\0';
	if (mode == BD_EXCL)
		fd = bd_open_excl(path, flags, why, why_size);
	else
		fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return mode == BD_EXCL ? fd : -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISBLK(st.st_mode)) {
		r = -ENOTBLK;
		goto fail;
	}
	if (ioctl(fd, BLKGETSIZE64, &d->size) < 0) {
		r = -errno;
		goto fail;
	}
	if (d->size == 0) {
		r = -ENXIO;
		goto fail;
	}
	if (posix_memalign(&b, BD_BLOCK, BD_IO_MAX) != 0) {
		r = -ENOMEM;
		goto fail;
	}
	d->fd = fd;
	d->bounce = b;
	d->mode = mode;
	d->writable = mode != BD_RDONLY;
	snprintf(d->path, sizeof(d->path), "%s", path);
	return 0;
fail:
	close(fd);
	d->size = 0;
	return r;
}

void
bd_close(struct bd_dev *d)
{
	bd_flusher_close(&d->flusher);
	if (d->fd >= 0)
		close(d->fd);
	free(d->bounce);
	d->fd = -1;
	d->bounce = NULL;
	d->size = 0;
	d->writable = false;
	d->mode = BD_RDONLY;
}

int
bd_reopen(struct bd_dev *d, const char *path, enum bd_mode mode, char *why,
	  size_t why_size)
{
	if (d->fd >= 0 && strcmp(d->path, path) == 0 && d->mode >= mode)
		return 0;
	bd_close(d);
	return bd_open(d, path, mode, why, why_size);
}

static bool
aligned(uintptr_t v, uintptr_t to)
{
	return v % to == 0;
}

int
bd_read(struct bd_dev *d, uint64_t off, void *buf, size_t len)
{
	uint8_t *out = buf;
	int r;

	if (off > d->size || len > d->size - off)
		return -ENODATA;
	while (len > 0) {
		uint64_t start, end;
		size_t n;

		if (aligned((uintptr_t)out, BD_BLOCK) && aligned(off, BD_BLOCK) &&
		    len >= BD_BLOCK) {
			n = len > BD_IO_MAX ? BD_IO_MAX : len / BD_BLOCK * BD_BLOCK;
			r = bd_pread_full(d->fd, out, n, off);
			if (r < 0)
				return r;
		} else {
			/* Through the bounce buffer, widened to blocks. */
			start = off / BD_BLOCK * BD_BLOCK;
			end = bd_round_up(off + len, BD_BLOCK);
			if (end - start > BD_IO_MAX)
				end = start + BD_IO_MAX;
			if (end > d->size)
				end = bd_round_up(d->size, 512);
			r = bd_pread_full(d->fd, d->bounce, end - start, start);
			if (r < 0)
				return r;
			n = end - off < len ? end - off : len;
			memcpy(out, d->bounce + (off - start), n);
		}
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

int
bd_write(struct bd_dev *d, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *in = buf;
	int r;

	if (!d->writable)
		return -EBADF;
	if (!aligned(off, 512))
		return -EINVAL;
	if (off > d->size || bd_round_up(len, 512) > d->size - off)
		return -ENOSPC;
	if (aligned((uintptr_t)in, BD_BLOCK) && aligned(len, 512))
		return bd_pwrite_full(d->fd, in, len, off);
	while (len > 0) {
		size_t n = len > BD_IO_MAX ? BD_IO_MAX : len;
		size_t padded = bd_round_up(n, 512);

		memcpy(d->bounce, in, n);
		memset(d->bounce + n, 0, padded - n);
		r = bd_pwrite_full(d->fd, d->bounce, padded, off);
		if (r < 0)
			return r;
		in += n;
		off += n;
		len -= n;
	}
	return 0;
}

int
bd_sync(struct bd_dev *d)
{
	return bd_flusher_sync(&d->flusher, d->fd);
}

void
bd_flush_behind(struct bd_dev *d, uint64_t n)
{
	bd_flusher_wrote(&d->flusher, d->fd, n);
}

/* Take the early flush's completion: waiting for it, or only when it has
 * already come. */
static void
flusher_reap(struct bd_flusher *f, bool wait)
{
#ifdef SYS_io_getevents
	struct timespec zero = { 0 };
	struct io_event ev;
	long k;

	if (!f->busy)
		return;
	do
		k = syscall(SYS_io_getevents, f->ctx, 1L, 1L, &ev,
			    wait ? NULL : &zero);
	while (k < 0 && errno == EINTR);
	if (k == 0)
		return;
	if (k < 0) {
		/* Cannot happen with a valid context; io_destroy() waits for
		 * what is under way. */
		syscall(SYS_io_destroy, f->ctx);
		f->ctx = 0;
		f->refused = true;
	} else if ((long long)ev.res < 0 && f->err == 0) {
		f->err = (int)(long long)ev.res;
	}
	f->busy = false;
#else
	(void)f;
	(void)wait;
#endif
}

void
bd_flusher_wrote(struct bd_flusher *f, int fd, uint64_t n)
{
#if defined(SYS_io_setup) && defined(SYS_io_submit) && defined(SYS_io_getevents)
	struct iocb cb, *cbs[1] = { &cb };

	f->unflushed += n;
	if (f->refused || fd < 0 ||
	    f->unflushed < (f->every ? f->every : BD_FLUSH_EVERY))
		return;
	flusher_reap(f, false);
	if (f->busy)
		return;
	if (!f->ctx) {
		aio_context_t ctx = 0;

		if (syscall(SYS_io_setup, 1U, &ctx) < 0) {
			f->refused = true;
			return;
		}
		f->ctx = ctx;
	}
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
	if (syscall(SYS_io_submit, f->ctx, 1L, cbs) != 1) {
		f->refused = true;
		return;
	}
	f->busy = true;
	f->unflushed = 0;
	f->begun++;
#else
	(void)f;
	(void)fd;
	(void)n;
#endif
}

int
bd_flusher_wait(struct bd_flusher *f)
{
	int r;

	flusher_reap(f, true);
	r = f->err;
	f->err = 0;
	return r;
}

int
bd_flusher_sync(struct bd_flusher *f, int fd)
{
	int r = bd_flusher_wait(f);

	f->unflushed = 0;
	if (r < 0)
		return r;
	/* On a block device the same as fsync(): the device's cache. */
	return fdatasync(fd) < 0 ? -errno : 0;
}

unsigned
bd_flusher_take_begun(struct bd_flusher *f)
{
	unsigned n = f->begun;

	f->begun = 0;
	return n;
}

void
bd_flusher_close(struct bd_flusher *f)
{
	flusher_reap(f, true);
#ifdef SYS_io_destroy
	if (f->ctx)
		syscall(SYS_io_destroy, f->ctx);
#endif
	memset(f, 0, sizeof(*f));
}
