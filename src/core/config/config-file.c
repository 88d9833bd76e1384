/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading torpor.conf.  inih does the INI syntax; this file adds what
 * inih does not give us: line numbers (Debian's libinih is built without
 * INI_HANDLER_LINENO, so our own reader counts lines), one precise message
 * for the first error, the bounds of what is read, and, as root, the
 * refusal of a file another user could have written.  Each [torpor] key
 * goes to config-keys.c as it is read; plugin sections are stored for
 * config-check.c.
 *
 * A missing file with missing_ok gives the defaults and path NULL, as for
 * config_new_default(): path names a file only when one was read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "config-internal.h"
#include "log.h"
#include "owner.h"

struct parse_state {
	struct torpor_config *c;
	const char *path;
	FILE *f;
	char line[CONFIG_MAX_LINE + 1];
	size_t bytes_read;		/* of the file, at most the bound */
	unsigned lineno;
	char section[64];		/* last [section] seen, for messages */

	/* The first error, formatted; 0: none yet.  Later lines are not
	 * read once it is set, so the message is about the first problem
	 * in the file. */
	unsigned error_line;
	char error[512];
	int read_errno;
	bool nomem;
};

/* Record the first error as "FILE:LINE: [section] key 'K': reason". */
static void
fail(struct parse_state *st, const char *section, const char *key,
     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
fail(struct parse_state *st, const char *section, const char *key,
     const char *fmt, ...)
{
	va_list ap;
	int n;

	if (st->error_line)
		return;
	st->error_line = st->lineno ? st->lineno : 1;
	if (section && *section && key)
		n = snprintf(st->error, sizeof(st->error), "%s:%u: [%s] key '%s': ",
			     st->path, st->error_line, section, key);
	else if (key)
		n = snprintf(st->error, sizeof(st->error), "%s:%u: key '%s': ",
			     st->path, st->error_line, key);
	else if (section && *section)
		n = snprintf(st->error, sizeof(st->error), "%s:%u: [%s]: ",
			     st->path, st->error_line, section);
	else
		n = snprintf(st->error, sizeof(st->error), "%s:%u: ",
			     st->path, st->error_line);
	if (n < 0 || (size_t)n >= sizeof(st->error))
		return;
	va_start(ap, fmt);
	vsnprintf(st->error + n, sizeof(st->error) - (size_t)n, fmt, ap);
	va_end(ap);
}

static int
add_entry(struct torpor_config *c, const char *section, const char *key,
	  const char *value, unsigned line)
{
	struct config_entry *grown, *e;

	grown = realloc(c->entries, (c->n_entries + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	c->entries = grown;
	e = &c->entries[c->n_entries];
	e->section = strdup(section);
	e->key = strdup(key);
	e->value = strdup(value);
	e->line = line;
	if (!e->section || !e->key || !e->value) {
		free(e->section);
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	c->n_entries++;
	return 0;
}

static int
handle_entry(void *user, const char *section, const char *key,
	     const char *value)
{
	struct parse_state *st = user;
	const struct config_entry *prev;
	char reason[CONFIG_REASON_MAX];
	int r;

	if (st->error_line)
		return 0;
	if (!value)
		value = "";
	if (!*section) {
		fail(st, NULL, key, "not in any section (start the file with "
		     "a [%s] or [PLUGIN] header)", CONFIG_CORE_SECTION);
		return 0;
	}
	prev = config_find_entry(st->c, section, key);
	if (prev) {
		fail(st, section, key, "set twice (first on line %u)",
		     prev->line);
		return 0;
	}
	if (add_entry(st->c, section, key, value, st->lineno) < 0)
		goto nomem;
	if (strcmp(section, CONFIG_CORE_SECTION) != 0)
		return 1;	/* checked against its plugin later */
	r = config_core_apply(st->c, key, value, reason, sizeof(reason));
	if (r == -ENOMEM)
		goto nomem;
	if (r < 0) {
		fail(st, section, key, "%s", reason);
		return 0;
	}
	return 1;

nomem:
	st->nomem = true;
	fail(st, section, key, "out of memory");
	return 0;
}

/* Record a [section] header, so that an empty one is checked too. */
static bool
add_section(struct parse_state *st, const char *name, size_t len)
{
	struct torpor_config *c = st->c;
	struct config_section *grown;
	char *copy = strndup(name, len);

	grown = copy ? realloc(c->sections,
			       (c->n_sections + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(copy);
		st->nomem = true;
		fail(st, NULL, NULL, "out of memory");
		return false;
	}
	c->sections = grown;
	c->sections[c->n_sections].name = copy;
	c->sections[c->n_sections].line = st->lineno;
	c->n_sections++;
	return true;
}

/* Where an inline comment starts (" ;"), or the end of s. */
static const char *
end_of_content(const char *s)
{
	const char *p;

	for (p = s; *p; p++)
		if (*p == ';' && p > s && config_is_blank(p[-1]))
			return p;
	return p;
}

/*
 * The syntax inih accepts, checked here first so that the message can say
 * what is wrong.  line has no leading or trailing blanks.
 */
static bool
check_syntax(struct parse_state *st, const char *line)
{
	const char *end, *p;

	if (!*line || *line == '#' || *line == ';')
		return true;
	end = end_of_content(line);
	if (*line == '[') {
		const char *close = memchr(line, ']', (size_t)(end - line));
		size_t len;

		if (!close) {
			fail(st, NULL, NULL,
			     "syntax error: section header without ']'");
			return false;
		}
		for (p = close + 1; p < end; p++)
			if (!config_is_blank(*p)) {
				fail(st, NULL, NULL,
				     "syntax error: text after the section "
				     "header");
				return false;
			}
		len = (size_t)(close - line - 1);
		if (len == 0) {
			fail(st, NULL, NULL,
			     "syntax error: empty section name");
			return false;
		}
		if (!add_section(st, line + 1, len))
			return false;
		if (len >= sizeof(st->section))
			len = sizeof(st->section) - 1;
		memcpy(st->section, line + 1, len);
		st->section[len] = '\0';
		return true;
	}
	for (p = line; p < end && *p != '=' && *p != ':'; p++)
		;
	if (p == end) {
		fail(st, st->section, NULL,
		     "syntax error: expected 'key = value' or '[section]'");
		return false;
	}
	if (p == line) {
		fail(st, st->section, NULL,
		     "syntax error: no key before '%c'", *p);
		return false;
	}
	return true;
}

/*
 * One line of the file into st->line, without its newline; its length, or
 * -1 at the end of the file (or on an error, recorded).  Never more than
 * CONFIG_MAX_LINE bytes of a line, nor CONFIG_MAX_FILE_SIZE of the file
 * (which may have grown since it was measured), are read.
 */
static ssize_t
read_raw_line(struct parse_state *st)
{
	size_t len = 0;
	int ch;

	for (;;) {
		ch = getc(st->f);
		if (ch == EOF)
			break;
		if (++st->bytes_read > CONFIG_MAX_FILE_SIZE) {
			fail(st, NULL, NULL, "the file is larger than %d bytes",
			     CONFIG_MAX_FILE_SIZE);
			return -1;
		}
		if (ch == '\n')
			break;
		if (len == CONFIG_MAX_LINE) {
			fail(st, st->section, NULL,
			     "line too long (more than %d bytes)",
			     CONFIG_MAX_LINE);
			return -1;
		}
		if (ch == '\0') {
			fail(st, NULL, NULL, "the line holds a NUL byte");
			return -1;
		}
		st->line[len++] = (char)ch;
	}
	if (ch == EOF && ferror(st->f)) {
		st->read_errno = errno ? errno : EIO;
		return -1;
	}
	if (ch == EOF && len == 0)
		return -1;
	st->line[len] = '\0';
	return (ssize_t)len;
}

/*
 * inih's line reader.  Counting lines here gives the handler its line
 * number.  Leading blanks are removed so that an indented line is an
 * ordinary line and never one of inih's continuation lines, which would
 * silently glue "  key = value" onto the previous value.
 */
static char *
ini_read_line(char *buf, int size, void *stream)
{
	struct parse_state *st = stream;
	size_t len;
	char *p;

	if (st->error_line || st->read_errno || size < 3)
		return NULL;
	errno = 0;
	st->lineno++;
	if (read_raw_line(st) < 0)
		return NULL;
	p = st->line;
	if (st->lineno == 1 && strncmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	while (config_is_blank(*p))
		p++;
	len = strlen(p);
	while (len > 0 && config_is_blank(p[len - 1]))
		len--;
	p[len] = '\0';
	/* inih needs room for the line, a newline and the NUL. */
	if (len + 2 >= (size_t)size) {
		fail(st, st->section, NULL,
		     "line too long (at most %d characters)", size - 3);
		return NULL;
	}
	if (!check_syntax(st, p))
		return NULL;
	memcpy(buf, p, len + 1);
	return buf;
}

/*
 * As root, the configuration chooses the devices torpor overwrites and the
 * directory it loads code from: refuse one that another user could have
 * written, the file (st, already open) or a folder above it.  Another user
 * runs torpor on their own files (the demo, the sim source) unchecked.
 */
static int
check_config_owner(const char *path, const struct stat *st)
{
	char *real, *slash;
	struct stat dst;
	int r = 0;

	if (geteuid() != 0)
		return 0;
	/* A memfd root made (torpord's last good configuration, setup's
	 * draft, the one read out of an initramfs): no name reaches it. */
	if (st->st_nlink == 0 && st->st_uid == 0)
		return 0;
	if (!owner_root_only(st)) {
		log_error("configuration %s: %s (mode %04o, uid %u): refusing to "
			  "run as root with it, as it names the devices torpor "
			  "overwrites (chown root:root %s; chmod 644 %s)", path,
			  st->st_uid != 0 ? "not owned by root" :
			  "others may change it",
			  (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid,
			  path, path);
		return -EPERM;
	}
	real = realpath(path, NULL);
	if (!real)
		return log_error_errno(-errno, "configuration %s: cannot resolve "
				       "its path: %m", path);
	while (r == 0 && (slash = strrchr(real, '/'))) {
		slash[slash == real ? 1 : 0] = '\0';
		if (stat(real, &dst) < 0)
			r = log_error_errno(-errno, "configuration %s: cannot "
					    "check the folder %s: %m", path, real);
		else if (!owner_root_only(&dst)) {
			log_error("configuration %s: the folder %s (mode %04o, "
				  "uid %u) lets another user replace it: refusing "
				  "to run as root with it (chown root:root %s; "
				  "chmod go-w %s)", path, real,
				  (unsigned)(dst.st_mode & 07777),
				  (unsigned)dst.st_uid, real, real);
			r = -EPERM;
		}
		if (strcmp(real, "/") == 0)
			break;
	}
	free(real);
	return r;
}

/*
 * Open path for config_load(): a regular file of at most
 * CONFIG_MAX_FILE_SIZE bytes, measured before anything is read (O_NONBLOCK
 * so that opening a FIFO does not wait for a writer).  *ret_f NULL and 0:
 * missing, with missing_ok.
 */
static int
open_config(const char *path, bool missing_ok, FILE **ret_f)
{
	struct stat st;
	int fd, r;

	*ret_f = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT && missing_ok)
			return 0;
		if (r == -ENOENT)
			return log_error_errno(r, "configuration %s does not "
					       "exist (torpor setup writes %s; "
					       "--config names another)", path,
					       TORPOR_DEFAULT_CONFIG);
		return log_error_errno(r, "cannot open the configuration %s: %m",
				       path);
	}
	if (fstat(fd, &st) < 0) {
		r = log_error_errno(-errno, "Failed to read %s: %m", path);
	} else if (!S_ISREG(st.st_mode)) {
		log_error("%s: not a regular file: refusing to read it as a "
			  "configuration", path);
		r = -EINVAL;
	} else if (st.st_size > CONFIG_MAX_FILE_SIZE) {
		log_error("%s: %jd bytes, larger than a configuration may be "
			  "(%d bytes): refusing to read it", path,
			  (intmax_t)st.st_size, CONFIG_MAX_FILE_SIZE);
		r = -EFBIG;
	} else if ((r = check_config_owner(path, &st)) < 0) {
		/* said */
	} else {
		*ret_f = fdopen(fd, "r");
		if (*ret_f)
			return 0;
		r = log_error_errno(-errno, "Failed to read %s: %m", path);
	}
	close(fd);
	return r;
}

int
config_load(const char *path, bool missing_ok, struct torpor_config **ret)
{
	struct parse_state st = { 0 };
	struct torpor_config *c;
	int r;

	if (!path)
		path = TORPOR_DEFAULT_CONFIG;
	r = open_config(path, missing_ok, &st.f);
	if (r < 0)
		return r;
	c = config_new_default();
	if (!st.f) {
		if (!c)
			return log_error_errno(-ENOMEM, "Failed to read %s: %m",
					       path);
		*ret = c;
		return 0;
	}
	if (!c || !(c->path = strdup(path))) {
		fclose(st.f);
		config_free(c);
		return log_error_errno(-ENOMEM, "Failed to read %s: %m", path);
	}
	st.c = c;
	st.path = path;
	r = ini_parse_stream(ini_read_line, &st, handle_entry, &st);
	fclose(st.f);

	if (st.nomem || r == -2) {
		r = log_error_errno(-ENOMEM, "Failed to read %s: %m", path);
	} else if (st.read_errno) {
		r = log_error_errno(-st.read_errno, "Failed to read %s: %m",
				    path);
	} else if (r > 0 && (!st.error_line || (unsigned)r < st.error_line)) {
		/* Something inih refused that check_syntax() let through. */
		log_error("%s:%d: syntax error", path, r);
		r = -EINVAL;
	} else if (st.error_line) {
		log_error("%s", st.error);
		r = -EINVAL;
	} else if (r != 0) {
		log_error("%s: cannot be parsed", path);
		r = -EINVAL;
	}
	if (r < 0) {
		config_free(c);
		return r;
	}
	*ret = c;
	return 0;
}
