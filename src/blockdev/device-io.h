/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Block devices opened for O_DIRECT I/O, and early flushes (device-io.c). */
#ifndef TORPOR_BD_DEVICE_IO_H
#define TORPOR_BD_DEVICE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every offset the writers use is a multiple of this, and so is the unit
 * of O_DIRECT I/O (it covers every logical block size up to 4 KiB). */
#define BD_BLOCK 4096u

/* Largest single transfer, and the size of each device's bounce buffer. */
#define BD_IO_MAX (1u << 20)

/* How a device is opened: read-only; writable beside others (the device
 * under a mounted filesystem that holds an image file or swap file, or an
 * active swap area the kernel allocates from, whose writes the kernel
 * itself guards); writable and exclusive (O_EXCL: refused while it is
 * mounted, held or an active swap area, see bd_open_excl). */
enum bd_mode { BD_RDONLY, BD_SHARED, BD_EXCL };

/*
 * Early flushes of a long stream of writes to one fd.  Once `every` bytes
 * (0: BD_FLUSH_EVERY) have been written since the last flush began, one
 * more begins without being waited for: an AIO fdatasync, which a kernel
 * worker carries out while the stream goes on, so that the device's write
 * cache drains behind the writes and the flush that makes the image valid
 * has little left to wait for.  Correctness never rests on them: that
 * last flush still covers everything.  Where AIO is refused (no
 * CONFIG_AIO, aio-max-nr reached, an fd without fsync) nothing is flushed
 * early.  All zero is a flusher with nothing under way.
 */
#define BD_FLUSH_EVERY (64u << 20)

struct bd_flusher {
	unsigned long ctx;	/* aio_context_t; 0: none yet */
	bool refused;		/* io_setup or a submission failed */
	bool busy;		/* a flush is under way */
	int err;		/* the first early flush that failed */
	uint64_t unflushed;	/* bytes written since the last one began */
	uint64_t every;
	unsigned begun;		/* early flushes begun */
};

/* n more bytes were written to fd: begin an early flush when it is due. */
void bd_flusher_wrote(struct bd_flusher *f, int fd, uint64_t n);

/* Wait for the early flush under way, if any: 0, or the error of the
 * first one that failed since the last call. */
int bd_flusher_wait(struct bd_flusher *f);

/* The flush that makes a stream durable: wait as above, then fdatasync(fd)
 * (not called when an early flush failed: its error is returned). */
int bd_flusher_sync(struct bd_flusher *f, int fd);

/* The early flushes begun since the last call (a cycle's, for its log). */
unsigned bd_flusher_take_begun(struct bd_flusher *f);

/* Wait as above, release the AIO context, and zero f. */
void bd_flusher_close(struct bd_flusher *f);

struct bd_dev {
	int fd;			/* O_DIRECT */
	bool writable;
	enum bd_mode mode;
	uint64_t size;		/* bytes */
	uint8_t *bounce;	/* BD_IO_MAX bytes, BD_BLOCK aligned */
	char path[256];
	struct bd_flusher flusher; /* bd_flush_behind() */
};

void bd_init(struct bd_dev *d);

/* Open a block device for O_DIRECT I/O in mode.  -ENOTBLK when path is
 * not a block device, -ENXIO when it has size 0 (a detached loop device),
 * -EBUSY (BD_EXCL) when someone else uses it, with the reason in why
 * (why may be NULL). */
int bd_open(struct bd_dev *d, const char *path, enum bd_mode mode,
	    char *why, size_t why_size);

void bd_close(struct bd_dev *d);

/* Keep d when it is open on path in mode or a stronger one, else
 * (re)open it. */
int bd_reopen(struct bd_dev *d, const char *path, enum bd_mode mode,
	      char *why, size_t why_size);

/* Read len bytes at any byte offset into any buffer. */
int bd_read(struct bd_dev *d, uint64_t off, void *buf, size_t len);

/* Write len bytes at off; off must be a multiple of 512.  A length that is
 * not a multiple of 512 is padded with zeros up to the next one. */
int bd_write(struct bd_dev *d, uint64_t off, const void *buf, size_t len);

/* Flush the device's write cache, after the early flush under way (whose
 * error it returns first). */
int bd_sync(struct bd_dev *d);

/* n more bytes of a long stream were written to d: flush early when it is
 * due (struct bd_flusher). */
void bd_flush_behind(struct bd_dev *d, uint64_t n);

/* pread / pwrite all of len bytes at off of any fd, across short
 * transfers and EINTR; -ENODATA when a read meets the end. */
int bd_pread_full(int fd, void *buf, size_t len, uint64_t off);
int bd_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

uint64_t bd_round_up(uint64_t v, uint64_t to);

#endif
