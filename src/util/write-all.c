/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Writing a whole buffer (see write-all.h). */
#include <errno.h>
#include <unistd.h>

#include "write-all.h"

int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t k = write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}
