/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration torpor setup writes: composed from the existing one
 * and the storage chosen, shown, and written atomically (a new file
 * renamed over the old one, which is kept as .bak).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "setup.h"
#include "write-all.h"

/* Append to the configuration text (bounded: SETUP_TEXT_MAX). */
static void __attribute__((format(printf, 2, 3)))
text_add(struct setup *st, const char *fmt, ...)
{
	size_t used = strlen(st->text);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->text + used, SETUP_TEXT_MAX - used, fmt, ap);
	va_end(ap);
}

static bool
is_writer_section(const char *s)
{
	return strcmp(s, "swap") == 0 || strcmp(s, "file") == 0 ||
	       strcmp(s, "raw") == 0;
}

/* Whether section i's name came before (its keys went with the first). */
static bool
section_repeats(const struct torpor_config *o, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (strcmp(o->sections[j].name, o->sections[i].name) == 0)
			return true;
	return false;
}

/* The existing configuration's keys, but its writer's, then the writer. */
int
setup_compose(struct setup *st)
{
	const struct torpor_config *o = st->old;
	size_t i, j;

	st->text = calloc(1, SETUP_TEXT_MAX);
	if (!st->text)
		return -ENOMEM;
	text_add(st, SETUP_WRITTEN_BY "%s.\n[torpor]\nfilters = %s\nwriter = %s\n",
		 o->path ? "; the previous file is kept beside it as .bak" : "",
		 st->filters, st->use_file ? "file" : "swap");
	for (i = 0; i < o->n_entries; i++)
		if (strcmp(o->entries[i].section, CONFIG_CORE_SECTION) == 0 &&
		    strcmp(o->entries[i].key, "filters") != 0 &&
		    strcmp(o->entries[i].key, "writer") != 0)
			text_add(st, "%s = %s\n", o->entries[i].key,
				 o->entries[i].value);
	if (st->use_file)
		text_add(st, "\n[file]\npath = %s\nsize = %" PRIu64 "M\n",
			 st->file_path, st->file_size >> 20);
	else
		text_add(st, "\n[swap]\ndevice = %s\n", st->device);
	for (i = 0; i < o->n_sections; i++) {
		const char *name = o->sections[i].name;

		if (strcmp(name, CONFIG_CORE_SECTION) == 0 ||
		    is_writer_section(name) || section_repeats(o, i))
			continue;
		text_add(st, "\n[%s]\n", name);
		for (j = 0; j < o->n_entries; j++)
			if (strcmp(o->entries[j].section, name) == 0)
				text_add(st, "%s = %s\n", o->entries[j].key,
					 o->entries[j].value);
	}
	if (strlen(st->text) >= SETUP_TEXT_MAX - 1)
		return log_error_errno(-E2BIG, "setup: the configuration would be longer than %u bytes",
				       SETUP_TEXT_MAX);
	return 0;
}

void
setup_print_config(const struct setup *st)
{
	const char *p = st->text;

	printf("setup: the configuration for %s:\n", st->conf_path);
	while (*p) {
		size_t n = strcspn(p, "\n");

		printf("  | %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* The directory of the configuration (made, one level, when missing),
 * never through a symbolic link at its last step; its fd, the file's name
 * in *ret_base. */
static int
open_conf_dir(const struct setup *st, const char **ret_base)
{
	static char dir[PATH_MAX];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", st->conf_path);
	slash = strrchr(dir, '/');
	if (!slash || !slash[1]) {
		log_error("setup: '%s' does not name a file", st->conf_path);
		return -EINVAL;
	}
	*slash = '\0';
	*ret_base = st->conf_path + (slash - dir) + 1;
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "setup: cannot create %s: %m", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "setup: cannot open the directory %s (a symbolic link is refused): %m",
				       dir);
	return fd;
}

/* The existing file kept as NAME.bak (a hard link: nothing is copied). */
static int
keep_backup(int dfd, const char *base, const char *shown)
{
	char bak[NAME_MAX + 1];
	struct stat sb;

	if (fstatat(dfd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(sb.st_mode)) {
		log_error("setup: refusing to replace %s: it is not a regular file (a symbolic link?); remove it (rm) and run setup again",
			  base);
		return -EPERM;
	}
	snprintf(bak, sizeof(bak), "%s.bak", base);
	if (unlinkat(dfd, bak, 0) < 0 && errno != ENOENT)
		return log_error_errno(-errno, "setup: cannot replace the backup %s: %m", bak);
	if (linkat(dfd, base, dfd, bak, 0) < 0)
		return log_error_errno(-errno, "setup: cannot keep %s as %s: %m", base, bak);
	printf("setup: the previous configuration is kept as %s.bak\n", shown);
	return 0;
}

int
replace_file_at(int dfd, const char *base, const char *text, const char *shown)
{
	char tmp[NAME_MAX + 1];
	uint32_t rnd = 0;
	int fd, r = 0;

	if (getrandom(&rnd, sizeof(rnd), 0) < 0)
		rnd = (uint32_t)getpid();
	snprintf(tmp, sizeof(tmp), ".%.200s.%08x", base, rnd);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return log_error_errno(-errno, "setup: cannot create a file beside %s: %m", shown);
	if ((geteuid() == 0 && fchown(fd, 0, 0) < 0) || fchmod(fd, 0644) < 0)
		r = log_error_errno(-errno, "setup: cannot make %s root's: %m", tmp);
	if (r >= 0) {
		r = write_all(fd, text, strlen(text));
		if (r >= 0 && fsync(fd) < 0)
			r = -errno;
		if (r < 0)
			log_error_errno(r, "setup: cannot write %s: %m", tmp);
	}
	close(fd);
	if (r >= 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = log_error_errno(-errno, "setup: cannot rename %s to %s: %m", tmp, base);
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	else
		fsync(dfd);
	return r;
}

/* The configuration, atomically, the old one kept as .bak. */
int
setup_write_config(const struct setup *st)
{
	const char *base;
	int dfd, r;

	dfd = open_conf_dir(st, &base);
	if (dfd < 0)
		return dfd;
	r = keep_backup(dfd, base, st->conf_path);
	if (r >= 0)
		r = replace_file_at(dfd, base, st->text, st->conf_path);
	if (r >= 0)
		printf("setup: wrote %s\n", st->conf_path);
	close(dfd);
	return r;
}
