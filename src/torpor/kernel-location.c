/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image's location for the running kernel's /sys/power/resume (see
 * kernel-location.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device-names.h"
#include "kernel-location.h"
#include "log.h"
#include "sysroot.h"
#include "text.h"

static int
write_sys(const char *root, const char *file, const char *value)
{
	char path[PATH_MAX];
	int fd, r = 0;
	size_t len = strlen(value);

	snprintf(path, sizeof(path), "%s/sys/power/%s", root, file);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return log_error_errno(-errno, "cannot open %s: %m", path);
	if (write(fd, value, len) != (ssize_t)len)
		r = log_error_errno(-errno, "cannot write '%s' to %s: %m", value, path);
	close(fd);
	return r;
}

int
kernel_location_apply(const char *words)
{
	const char *root = sysroot();
	char spec[PATH_MAX], node[PATH_MAX], offset[32], devno[32];
	dev_t dev;
	char *end;
	int r;

	r = text_word_value(words, "resume=", spec, sizeof(spec));
	if (r == 0)
		r = text_word_value(words, "resume_offset=", offset, sizeof(offset));
	if (r < 0 || !spec[0])
		return log_error_errno(-EINVAL, "no resume= word in '%s'", words);
	if (offset[0]) {
		errno = 0;
		(void)strtoull(offset, &end, 10);
		if (errno || *end)
			return log_error_errno(-EINVAL, "resume_offset=%s is not a page number", offset);
	}
	r = bd_resolve_dev(spec, node, sizeof(node), &dev);
	if (r == -ENOTBLK)
		return log_error_errno(r, "%s is not a block device", node);
	if (r < 0)
		return log_error_errno(r, "cannot find resume=%s: %m", spec);
	snprintf(devno, sizeof(devno), "%u:%u", major(dev), minor(dev));
	/* The offset first: writing resume makes the kernel look at once,
	 * at the offset it has then. */
	r = write_sys(root, "resume_offset", offset[0] ? offset : "0");
	if (r == 0)
		r = write_sys(root, "resume", devno);
	if (r < 0)
		return r;
	printf("resume-args: the kernel's resume device is now %s (%s), offset %s pages\n",
	       devno, node, offset[0] ? offset : "0");
	return 0;
}

bool
kernel_location_words_needed(const char *words)
{
	return strstr(words, "resume_offset=") != NULL;
}
