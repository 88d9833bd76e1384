/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the swap and file writers share beyond the on-disk layout: where
 * the command line says the image is, the words that say it, and the page
 * cache of the file above the blocks they write; see writer-common.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device-io.h"
#include "device-names.h"
#include "writer-common.h"

uint32_t
bd_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps >= (long)BD_BLOCK ? (uint32_t)ps : BD_BLOCK;
}

int
bd_resume_location(const struct torpor_host *host, char *dev, size_t size,
		   dev_t *ret_rdev, uint64_t *ret_offset)
{
	uint64_t offset = 0;
	struct stat st;
	int r;

	if (!TORPOR_HOST_HAS(host, resume_location))
		return 0;
	r = host->resume_location(dev, size, &offset);
	if (r <= 0)
		return r;
	if (stat(dev, &st) < 0 || !S_ISBLK(st.st_mode))
		return -ENOTBLK;
	*ret_rdev = st.st_rdev;
	*ret_offset = offset;
	return 1;
}

int
bd_resume_words(const char *dev_path, uint64_t offset, uint32_t page,
		char *buf, size_t size)
{
	char uuid[40];
	int n;

	if (bd_uuid_of(dev_path, uuid, sizeof(uuid)) == 0)
		n = snprintf(buf, size, "resume=UUID=%s", uuid);
	else
		n = snprintf(buf, size, "resume=%s", dev_path);
	if (n >= 0 && (size_t)n < size && offset)
		n += snprintf(buf + n, size - (size_t)n,
			      " resume_offset=%" PRIu64, offset / page);
	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

void
bd_drop_cache(int fd, const char *path)
{
	struct stat st;

	/* Only clean pages are there (the writers never write through
	 * the file): dropping them is no I/O. */
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		return;
	}
	if (!path || path[0] != '/' || stat(path, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}
