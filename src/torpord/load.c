/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration and plugins torpord runs with.  A reload closes the
 * running session before it opens the new one, because a plugin module is
 * loaded once per process and its load()/unload() act on that one copy.
 * When the new configuration is refused, the last good one is opened
 * again from the bytes that were read when it was accepted (kept in
 * memory), so that a broken file on disk never replaces it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "snapshot.h"
#include "torpord.h"
#include "write-all.h"

/* The bytes of the configuration file (CONFIG_MAX_FILE_SIZE at most:
 * config_load() refuses a larger one anyway). */
static int
read_config_bytes(const char *path, char **ret, size_t *ret_len)
{
	char *buf = malloc(CONFIG_MAX_FILE_SIZE + 1);
	size_t n = 0;
	ssize_t k;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while (n <= CONFIG_MAX_FILE_SIZE &&
	       (k = read(fd, buf + n, CONFIG_MAX_FILE_SIZE + 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	*ret = buf;
	*ret_len = n;
	return 0;
}

/* What config_load() would not check: the writer and the filters are
 * usable, the group exists. */
static int
check_session(struct torpord *d, struct torpor_session *s)
{
	struct group *g;
	int r;

	r = session_arrange_hibernate(s);
	if (r < 0)
		return r;
	if (!registry_can_hibernate(&s->reg))
		return log_error_errno(-EPERM, "hibernation is disabled: %s",
				       s->reg.disabled_reason);
	d->has_group = false;
	if (s->config->group) {
		errno = 0;
		g = getgrnam(s->config->group);
		if (!g)
			return log_error_errno(errno ? -errno : -ENOENT,
					       "%s: [torpor] group: no group '%s'",
					       s->config->path, s->config->group);
		d->group = g->gr_gid;
		d->has_group = true;
	}
	return 0;
}

/* Open a session from path (or, with text, from those bytes, the path
 * named in messages and status still being path). */
static int
open_checked(struct torpord *d, const char *path, const char *text,
	     size_t len, struct torpor_session **ret)
{
	struct torpor_session *s = calloc(1, sizeof(*s));
	char fd_path[64];
	int fd = -1, r;

	if (!s)
		return -ENOMEM;
	if (text) {
		fd = memfd_create("torpord-last-good", MFD_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			goto fail;
		}
		r = write_all(fd, text, len);
		if (r < 0)
			goto fail;
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	}
	r = session_open(s, text ? fd_path : path, d->plugin_dir, true);
	if (r >= 0 && text) {
		free(s->config->path);
		s->config->path = strdup(path);
		r = s->config->path ? 0 : -ENOMEM;
	}
	if (r >= 0)
		r = check_session(d, s);
	/* Every plugin initialises, the memory is there, the buffers are
	 * allocated: the next cycle is prepared.  The last good
	 * configuration is kept even when that fails now: its next cycle
	 * tries again. */
	if (r >= 0) {
		r = cycle_prepare(s, snapshot_page_size(s->config->snapshot),
				  &d->pre);
		if (r < 0 && text) {
			log_warning("the next cycle could not be prepared: it will try again when asked");
			r = 0;
		}
	}
	if (r >= 0) {
		if (fd >= 0)
			close(fd);
		*ret = s;
		return 0;
	}
	session_close(s);
fail:
	if (fd >= 0)
		close(fd);
	free(s);
	return r;
}

void
torpord_unprepare(struct torpord *d)
{
	cycle_prepared_free(&d->pre);
}

int
torpord_prepare(struct torpord *d)
{
	int r;

	torpord_unprepare(d);
	if (!d->s)
		return -ENODEV;
	r = session_arrange_hibernate(d->s);
	if (r >= 0)
		r = cycle_prepare(d->s, snapshot_page_size(d->s->config->snapshot),
				  &d->pre);
	if (r < 0)
		log_warning("the next cycle could not be prepared: it will try again when asked");
	return r;
}

void
torpord_unload(struct torpord *d)
{
	torpord_unprepare(d);
	if (d->s) {
		session_close(d->s);
		free(d->s);
		d->s = NULL;
	}
}

int
torpord_load(struct torpord *d)
{
	const char *path = d->config_path ? d->config_path : TORPOR_DEFAULT_CONFIG;
	struct torpor_session *s = NULL;
	char *text = NULL;
	size_t len = 0;
	int r;

	r = read_config_bytes(path, &text, &len);
	if (r < 0) {
		log_error_errno(r, "could not read %s: %m", path);
	} else {
		torpord_unload(d);
		r = open_checked(d, path, NULL, 0, &s);
	}
	if (r >= 0) {
		free(d->good_text);
		d->good_text = text;
		d->good_len = len;
		d->s = s;
		d->loaded_at = time(NULL);
		log_notice("configuration %s loaded: writer %s, %zu filter(s)",
			   path, s->config->writer, s->config->n_filters);
		return 0;
	}
	free(text);
	if (!d->s && d->good_text) {
		char when[32];

		strftime(when, sizeof(when), "%F %T", localtime(&d->loaded_at));
		if (open_checked(d, path, d->good_text, d->good_len, &d->s) < 0)
			log_error("the last good configuration could not be loaded again");
		else
			log_notice("keeping the last good configuration (loaded %s)",
				   when);
	}
	return r;
}
