// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The next boot's kernel, from the boot loader's files: see bootloader.h.
 * The parsers follow the formats as GRUB and systemd-boot read them, not
 * their code: a grub.cfg is a shell-like script of which only menuentry,
 * submenu, their braces, "linux" and the top-level "set default=" matter
 * here; everything else is skipped over, but its quotes and braces are
 * followed so that a truncated file is seen as one.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bootloader.h"
#include "owner.h"
#include "text.h"

#define GRUB_DEPTH_MAX 8
#define GRUB_WORDS_MAX 32
#define GRUB_WORD_MAX 1024
#define SMALL_FILE_MAX (64 * 1024)
#define ENTRY_FILES_MAX 512	/* directory entries looked at, per folder */
#define EFIVAR_MAX (4 + 2 * BOOT_NAME_SIZE)
#define GRUBENV_HEADER "# GRUB Environment Block\n"
#ifndef BTRFS_SUPER_MAGIC
#define BTRFS_SUPER_MAGIC 0x9123683eUL
#endif

static int
copy_name(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

const char *
boot_loader_name(enum boot_loader l)
{
	switch (l) {
	case BOOT_LOADER_GRUB:
		return "grub";
	case BOOT_LOADER_SYSTEMD_BOOT:
		return "systemd-boot";
	default:
		return "unknown";
	}
}

/* A kernel release as uname gives one: nothing a path or a message could
 * be confused by. */
static bool
release_ok(const char *s, size_t len)
{
	if (len == 0 || len >= BOOT_RELEASE_SIZE)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._+~-", s[i]))
			return false;
	return true;
}

/* The release in a kernel's path: /boot/vmlinuz-RELEASE (GRUB, Debian's
 * loader entries) or /MACHINE-ID/RELEASE/linux (kernel-install). */
static void
release_of_kernel(const char *path, char *out)
{
	static const char *const prefixes[] = {
		"vmlinuz-", "vmlinux-", "kernel-", "linux-",
	};
	const char *base, *p = path;
	size_t len;

	out[0] = '\0';
	if (*p == '(') {	/* a GRUB device: (hd0,msdos1)/boot/... */
		p = strchr(p, ')');
		if (!p)
			return;
		p++;
	}
	base = strrchr(p, '/');
	base = base ? base + 1 : p;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++) {
		size_t n = strlen(prefixes[i]);

		if (!strncmp(base, prefixes[i], n) &&
		    release_ok(base + n, strlen(base + n))) {
			strcpy(out, base + n);
			return;
		}
	}
	if (!strcmp(base, "linux") && base - p >= 2) {
		const char *end = base - 1, *dir = end;

		while (dir > p && dir[-1] != '/')
			dir--;
		len = (size_t)(end - dir);
		if (release_ok(dir, len)) {
			memcpy(out, dir, len);
			out[len] = '\0';
		}
	}
}

/* ---- grub.cfg ---------------------------------------------------------- */

struct lexer {
	const char *s;
	size_t len, pos;
	size_t line;
};

struct command {
	size_t n;
	char w[GRUB_WORDS_MAX][GRUB_WORD_MAX];
	bool long_word[GRUB_WORDS_MAX];
	bool opens;		/* ended by "{" (not among the words) */
	bool closes;		/* a lone "}" */
	size_t line;
};

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* At a backslash that escapes the next character: step onto that
 * character.  True when it was a newline, a line continuation, now
 * skipped whole; false when *ch is the escaped character, to be taken. */
static bool
lex_escape(struct lexer *l, char *ch)
{
	l->pos++;
	*ch = l->s[l->pos];
	if (*ch != '\n')
		return false;
	l->line++;
	l->pos++;
	return true;
}

static bool
ends_word(const struct lexer *l, size_t at)
{
	char c;

	if (at >= l->len)
		return true;
	c = l->s[at];
	return is_blank(c) || c == '\n' || c == ';';
}

/* ch onto the word being read (w, NULL past GRUB_WORDS_MAX words); a
 * word past GRUB_WORD_MAX is cut and marked, for who needs it whole. */
static void
word_add(struct command *c, char *w, size_t *wl, char ch)
{
	if (!w)
		return;
	if (*wl + 1 < GRUB_WORD_MAX)
		w[(*wl)++] = ch;
	else
		c->long_word[c->n] = true;
}

/*
 * The next command: its words with quotes and escapes removed, variables
 * left as written.  1 a command, 0 the end, -EBADMSG an open quote or a
 * NUL byte.
 */
static int
next_command(struct lexer *l, struct command *c, char *why, size_t why_size)
{
	c->n = 0;
	c->opens = c->closes = false;
	for (;;) {
		char *w;
		size_t wl = 0;
		bool any = false;

		while (l->pos < l->len && is_blank(l->s[l->pos]))
			l->pos++;
		if (l->pos >= l->len)
			return c->n > 0;
		if (l->s[l->pos] == '\0')
			return text_fail(-EBADMSG, why, why_size,
				    "line %zu: a NUL byte", l->line);
		if (l->s[l->pos] == '\\' && l->pos + 1 < l->len &&
		    l->s[l->pos + 1] == '\n') {
			l->pos += 2;
			l->line++;
			continue;
		}
		if (l->s[l->pos] == '\n' || l->s[l->pos] == ';') {
			if (l->s[l->pos] == '\n')
				l->line++;
			l->pos++;
			if (c->n > 0)
				return 1;
			continue;
		}
		if (l->s[l->pos] == '#') {
			while (l->pos < l->len && l->s[l->pos] != '\n') {
				if (l->s[l->pos] == '\0')
					return text_fail(-EBADMSG, why, why_size,
						    "line %zu: a NUL byte",
						    l->line);
				l->pos++;
			}
			continue;
		}
		if ((l->s[l->pos] == '{' || l->s[l->pos] == '}') &&
		    ends_word(l, l->pos + 1)) {
			char b = l->s[l->pos++];

			if (b == '{') {
				c->opens = true;
				c->line = l->line;
				return 1;
			}
			if (c->n == 0) {
				c->closes = true;
				c->line = l->line;
				return 1;
			}
			/* "foo }": a word like any other */
			l->pos--;
		}
		if (c->n == 0)
			c->line = l->line;
		w = c->n < GRUB_WORDS_MAX ? c->w[c->n] : NULL;
		if (w)
			c->long_word[c->n] = false;
		while (l->pos < l->len && !ends_word(l, l->pos)) {
			char ch = l->s[l->pos], q;

			if (ch == '\0')
				return text_fail(-EBADMSG, why, why_size,
					    "line %zu: a NUL byte", l->line);
			if (ch == '\'' || ch == '"') {
				size_t start = l->line;

				q = ch;
				l->pos++;
				for (;;) {
					if (l->pos >= l->len)
						return text_fail(-EBADMSG, why,
							    why_size,
							    "line %zu: a quote that is never closed (truncated?)",
							    start);
					ch = l->s[l->pos];
					if (ch == '\0')
						return text_fail(-EBADMSG, why,
							    why_size,
							    "line %zu: a NUL byte",
							    l->line);
					if (ch == q) {
						l->pos++;
						break;
					}
					if (ch == '\n')
						l->line++;
					if (q == '"' && ch == '\\' &&
					    l->pos + 1 < l->len &&
					    strchr("\"\\$\n", l->s[l->pos + 1]) &&
					    lex_escape(l, &ch))
						continue;
					word_add(c, w, &wl, ch);
					l->pos++;
				}
				any = true;
				continue;
			}
			if (ch == '\\' && l->pos + 1 < l->len && lex_escape(l, &ch))
				continue;
			word_add(c, w, &wl, ch);
			any = true;
			l->pos++;
		}
		if (any || wl) {
			if (w)
				w[wl] = '\0';
			if (c->n < GRUB_WORDS_MAX)
				c->n++;
		}
	}
}

enum block { BLOCK_ENTRY, BLOCK_SUBMENU, BLOCK_OTHER };

static int
add_grub_entry(struct boot_menu *m, const struct command *c, int parent,
	       bool submenu, char *why, size_t why_size)
{
	struct boot_entry *e;
	const char *title = NULL, *id = "";
	size_t ti = 0, ii = 0;
	unsigned pos = 0;
	int r;

	for (size_t i = 1; i < c->n; i++) {
		const char *a = c->w[i];

		if (!strcmp(a, "$menuentry_id_option") ||
		    !strcmp(a, "${menuentry_id_option}") ||
		    !strcmp(a, "--id")) {
			if (++i >= c->n)
				break;
			id = c->w[i];
			ii = i;
		} else if (!strncmp(a, "--id=", 5)) {
			id = a + 5;
			ii = i;
		} else if (!strcmp(a, "--class") || !strcmp(a, "--users") ||
			   !strcmp(a, "--hotkey")) {
			i++;
		} else if (!strncmp(a, "--", 2)) {
			continue;
		} else if (!title) {
			title = a;
			ti = i;
		}
	}
	if (!title)
		return text_fail(-EBADMSG, why, why_size,
			    "line %zu: a %s without a title", c->line,
			    c->w[0]);
	if (m->n >= BOOT_ENTRIES_MAX)
		return text_fail(-E2BIG, why, why_size,
			    "more than %d menu entries", BOOT_ENTRIES_MAX);
	if (c->long_word[ti] || (ii && c->long_word[ii]))
		return text_fail(-ENAMETOOLONG, why, why_size,
			    "line %zu: a title or id too long", c->line);
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].parent == parent)
			pos++;
	e = &m->e[m->n];
	memset(e, 0, sizeof(*e));
	r = copy_name(e->title, sizeof(e->title), title, strlen(title));
	if (r == 0)
		r = copy_name(e->id, sizeof(e->id), id, strlen(id));
	if (r == 0) {
		char above[BOOT_NAME_SIZE] = "";

		if (parent >= 0)
			memcpy(above, m->e[parent].path, sizeof(above));
		r = snprintf(e->path, sizeof(e->path), "%s%s%u", above,
			     parent >= 0 ? ">" : "", pos);
		r = r < (int)sizeof(e->path) ? 0 : -ENAMETOOLONG;
	}
	if (r < 0)
		return text_fail(r, why, why_size,
			    "line %zu: a title or id too long", c->line);
	e->parent = parent;
	e->position = pos;
	e->submenu = submenu;
	e->recovery = strstr(e->id, "-recovery-") ||
		strstr(e->title, "(recovery mode)");
	m->n++;
	return 0;
}

int
grub_cfg_parse(const char *text, size_t len, struct boot_menu *m,
	       struct grub_cfg_default *d, char *why, size_t why_size)
{
	struct lexer l = { .s = text, .len = len, .line = 1 };
	struct command *c;
	enum block kind[GRUB_DEPTH_MAX];
	int index[GRUB_DEPTH_MAX];
	size_t depth = 0;
	int r;

	if (len > GRUB_CFG_MAX)
		return text_fail(-EFBIG, why, why_size,
			    "%zu bytes, more than %d", len, GRUB_CFG_MAX);
	c = malloc(sizeof(*c));
	if (!c)
		return text_fail(-ENOMEM, why, why_size, "out of memory");
	m->n = 0;
	memset(d, 0, sizeof(*d));
	while ((r = next_command(&l, c, why, why_size)) > 0) {
		bool menus_only = true;	/* only submenus around us */
		int parent = -1;

		for (size_t i = 0; i < depth; i++) {
			if (kind[i] != BLOCK_SUBMENU)
				menus_only = false;
			else
				parent = index[i];
		}
		if (c->closes) {
			if (depth == 0) {
				r = text_fail(-EBADMSG, why, why_size,
					 "line %zu: a \"}\" that closes nothing",
					 c->line);
				break;
			}
			depth--;
			continue;
		}
		if (c->opens) {
			enum block k = BLOCK_OTHER;
			int at = -1;

			if (depth >= GRUB_DEPTH_MAX) {
				r = text_fail(-EBADMSG, why, why_size,
					 "line %zu: blocks nested deeper than %d",
					 c->line, GRUB_DEPTH_MAX);
				break;
			}
			if (c->n > 0 && menus_only &&
			    (!strcmp(c->w[0], "menuentry") ||
			     !strcmp(c->w[0], "submenu"))) {
				bool sub = !strcmp(c->w[0], "submenu");

				r = add_grub_entry(m, c, parent, sub, why,
						   why_size);
				if (r < 0)
					break;
				k = sub ? BLOCK_SUBMENU : BLOCK_ENTRY;
				at = (int)m->n - 1;
			}
			kind[depth] = k;
			index[depth] = at;
			depth++;
			continue;
		}
		if (c->n == 0)
			continue;
		if (!strcmp(c->w[0], "menuentry") ||
		    !strcmp(c->w[0], "submenu")) {
			r = text_fail(-EBADMSG, why, why_size,
				 "line %zu: a %s without its \"{\"", c->line,
				 c->w[0]);
			break;
		}
		if (depth > 0 && kind[depth - 1] == BLOCK_ENTRY &&
		    index[depth - 1] >= 0 && c->n >= 2 &&
		    (!strcmp(c->w[0], "linux") ||
		     !strcmp(c->w[0], "linuxefi") ||
		     !strcmp(c->w[0], "linux16"))) {
			struct boot_entry *e = &m->e[index[depth - 1]];

			if (!e->release[0])
				release_of_kernel(c->w[1], e->release);
			continue;
		}
		if (depth == 0 && c->n >= 2 && !strcmp(c->w[0], "set") &&
		    !strncmp(c->w[1], "default=", 8)) {
			const char *v = c->w[1] + 8;

			if (!strcmp(v, "${next_entry}") ||
			    !strcmp(v, "$next_entry")) {
				d->reads_next_entry = true;
				continue;
			}
			if (c->long_word[1] ||
			    copy_name(d->value, sizeof(d->value), v,
				      strlen(v)) < 0) {
				r = text_fail(-ENAMETOOLONG, why, why_size,
					 "line %zu: a default too long",
					 c->line);
				break;
			}
			d->set = true;
		}
	}
	free(c);
	if (r < 0)
		return r;
	if (depth > 0)
		return text_fail(-EBADMSG, why, why_size,
			    "ends inside a block, %zu \"}\" short (truncated?)",
			    depth);
	return 0;
}

static bool
all_digits(const char *s, size_t len)
{
	if (len == 0 || len > 4)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int
grub_child(const struct boot_menu *m, int parent, const char *part,
	   size_t len)
{
	if (all_digits(part, len)) {
		unsigned pos = (unsigned)strtoul(part, NULL, 10);

		for (size_t i = 0; i < m->n; i++)
			if (m->e[i].parent == parent &&
			    m->e[i].position == pos)
				return (int)i;
		return -ENOENT;
	}
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].parent == parent &&
		    strlen(m->e[i].id) == len &&
		    !memcmp(m->e[i].id, part, len))
			return (int)i;
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].parent == parent &&
		    strlen(m->e[i].title) == len &&
		    !memcmp(m->e[i].title, part, len))
			return (int)i;
	return -ENOENT;
}

int
grub_menu_find(const struct boot_menu *m, const char *value)
{
	const char *p = value;
	int parent = -1, at = -ENOENT;

	if (strchr(value, '$'))
		return -EOPNOTSUPP;
	if (!*value)
		p = "0";	/* GRUB's default when there is none */
	for (unsigned depth = 0; depth < GRUB_DEPTH_MAX; depth++) {
		const char *end = strchr(p, '>');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		at = grub_child(m, parent, p, len);
		if (at < 0)
			return at;
		if (!end)
			return m->e[at].submenu ? -EISDIR : at;
		if (!m->e[at].submenu)
			return -ENOENT;
		parent = at;
		p = end + 1;
	}
	return -ENOENT;
}

/* ---- grubenv ----------------------------------------------------------- */

/* The end of the line starting at p (its '\n'), skipping escaped
 * characters; len if there is none. */
static size_t
grubenv_line_end(const char *b, size_t p, size_t len)
{
	while (p < len && b[p] != '\n') {
		if (b[p] == '\\' && p + 1 < len)
			p++;
		p++;
	}
	return p;
}

static int
grubenv_unescape(const char *v, size_t len, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = v[i];

		if (ch == '\\' && i + 1 < len)
			ch = v[++i];
		if (o + 1 >= size)
			return -ENAMETOOLONG;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

int
grubenv_parse(const char *block, size_t len, struct grubenv *env,
	      char *why, size_t why_size)
{
	size_t hl = strlen(GRUBENV_HEADER), p;

	memset(env, 0, sizeof(*env));
	if (len != GRUBENV_SIZE)
		return text_fail(-EBADMSG, why, why_size,
			    "%zu bytes, not %d", len, GRUBENV_SIZE);
	if (memchr(block, '\0', len))
		return text_fail(-EBADMSG, why, why_size, "a NUL byte");
	if (memcmp(block, GRUBENV_HEADER, hl))
		return text_fail(-EBADMSG, why, why_size,
			    "no \"# GRUB Environment Block\" header");
	for (p = hl; p < len;) {
		size_t end = grubenv_line_end(block, p, len);
		const char *eq, *line = block + p;
		char *dst = NULL;

		if (block[p] == '#') {	/* a comment, or the padding */
			p = end + 1;
			continue;
		}
		if (end >= len)
			return text_fail(-EBADMSG, why, why_size,
				    "a line without its newline at byte %zu (truncated?)",
				    p);
		eq = memchr(line, '=', end - p);
		if (!eq || eq == line)
			return text_fail(-EBADMSG, why, why_size,
				    "a line without \"key=\" at byte %zu", p);
		if ((size_t)(eq - line) == 11 &&
		    !memcmp(line, "saved_entry", 11))
			dst = env->saved_entry;
		else if ((size_t)(eq - line) == 10 &&
			 !memcmp(line, "next_entry", 10))
			dst = env->next_entry;
		if (dst && grubenv_unescape(eq + 1, (size_t)(block + end - eq - 1),
					    dst, BOOT_NAME_SIZE) < 0)
			return text_fail(-ENAMETOOLONG, why, why_size,
				    "the value at byte %zu is too long", p);
		p = end + 1;
	}
	return 0;
}

int
grubenv_with_next_entry(const char *block, size_t len, const char *id,
			char *out, char *why, size_t why_size)
{
	char tmp[GRUBENV_SIZE];
	struct grubenv env;
	size_t hl = strlen(GRUBENV_HEADER), o, p;
	int r;

	if (!*id)
		return text_fail(-EINVAL, why, why_size, "an empty entry id");
	for (const char *s = id; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return text_fail(-EINVAL, why, why_size,
				    "a control character in the entry id");
	r = grubenv_parse(block, len, &env, why, why_size);
	if (r < 0)
		return r;
	memcpy(tmp, GRUBENV_HEADER, hl);
	o = hl;
	for (p = hl; p < len;) {
		size_t end = grubenv_line_end(block, p, len);

		/* Comments and padding go: the padding is made anew. */
		if (block[p] != '#' &&
		    strncmp(block + p, "next_entry=", 11)) {
			memcpy(tmp + o, block + p, end + 1 - p);
			o += end + 1 - p;
		}
		p = end + 1;
	}
	if (o + strlen("next_entry=\n") > GRUBENV_SIZE)
		goto full;
	memcpy(tmp + o, "next_entry=", 11);
	o += 11;
	for (const char *s = id; *s; s++) {
		if (o + (*s == '\\' ? 2 : 1) + 1 > GRUBENV_SIZE)
			goto full;
		if (*s == '\\')
			tmp[o++] = '\\';
		tmp[o++] = *s;
	}
	tmp[o++] = '\n';
	memset(tmp + o, '#', GRUBENV_SIZE - o);
	memcpy(out, tmp, GRUBENV_SIZE);
	return 0;
full:
	return text_fail(-ENOSPC, why, why_size,
		    "next_entry=%s does not fit in the %d bytes", id,
		    GRUBENV_SIZE);
}

/* ---- /etc/default/grub ------------------------------------------------- */

int
grub_default_parse(const char *text, size_t len, char *value, size_t size)
{
	int found = 0;

	for (size_t p = 0; p < len;) {
		const char *nl = memchr(text + p, '\n', len - p);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t i = p, o = 0;
		char q = 0;
		char tmp[BOOT_NAME_SIZE];

		while (i < end && is_blank(text[i]))
			i++;
		if (end - i >= 13 && !memcmp(text + i, "GRUB_DEFAULT=", 13)) {
			for (i += 13; i < end; i++) {
				char ch = text[i];

				if (!q && (ch == '"' || ch == '\'')) {
					q = ch;
					continue;
				}
				if (q && ch == q) {
					q = 0;
					continue;
				}
				if (!q && (is_blank(ch) || ch == '#' ||
					   ch == ';'))
					break;
				if (ch == '\0')
					return -EBADMSG;
				if (o + 1 >= sizeof(tmp) || o + 1 >= size)
					return -ENAMETOOLONG;
				tmp[o++] = ch;
			}
			if (q)
				return -EBADMSG;
			tmp[o] = '\0';
			memcpy(value, tmp, o + 1);
			found = 1;
		}
		p = end + 1;
	}
	return found;
}

/* ---- systemd-boot ------------------------------------------------------ */

int
loader_entry_parse(const char *name, const char *text, size_t len,
		   struct boot_entry *e, char *why, size_t why_size)
{
	size_t nl = strlen(name);
	char linux_path[BOOT_NAME_SIZE] = "";

	memset(e, 0, sizeof(*e));
	e->parent = -1;
	if (nl < 6 || strcmp(name + nl - 5, ".conf") ||
	    copy_name(e->id, sizeof(e->id), name, nl) < 0)
		return text_fail(-EBADMSG, why, why_size,
			    "not an entry file name");
	strcpy(e->path, e->id);
	if (memchr(text, '\0', len))
		return text_fail(-EBADMSG, why, why_size, "%s: a NUL byte", name);
	for (size_t p = 0; p < len;) {
		const char *eol = memchr(text + p, '\n', len - p);
		size_t end = eol ? (size_t)(eol - text) : len;
		size_t k = p, ke, v, ve = end;
		char *dst = NULL;
		size_t dsize = BOOT_NAME_SIZE;

		while (k < end && is_blank(text[k]))
			k++;
		p = end + 1;
		if (k == end || text[k] == '#')
			continue;
		for (ke = k; ke < end && !is_blank(text[ke]); ke++)
			;
		for (v = ke; v < end && is_blank(text[v]); v++)
			;
		while (ve > v && is_blank(text[ve - 1]))
			ve--;
#define KEY(s) (ke - k == sizeof(s) - 1 && !memcmp(text + k, s, ke - k))
		if (KEY("title"))
			dst = e->title;
		else if (KEY("version"))
			dst = e->version;
		else if (KEY("sort-key"))
			dst = e->sort_key;
		else if (KEY("linux"))
			dst = linux_path;
#undef KEY
		if (dst && copy_name(dst, dsize, text + v, ve - v) < 0)
			return text_fail(-ENAMETOOLONG, why, why_size,
				    "%s: a value too long", name);
	}
	if (release_ok(e->version, strlen(e->version)))
		strcpy(e->release, e->version);
	else if (linux_path[0])
		release_of_kernel(linux_path, e->release);
	if (!e->title[0])
		snprintf(e->title, sizeof(e->title), "%s", e->id);
	return 0;
}

int
efivar_string_parse(const unsigned char *data, size_t len, char *out,
		    size_t size)
{
	size_t o = 0, i;

	if (len < 4 || (len - 4) % 2)
		return -EBADMSG;
	for (i = 4; i + 1 < len; i += 2) {
		unsigned u = data[i] | (unsigned)data[i + 1] << 8;

		if (u == 0)
			break;
		if (u < 0x20 || u > 0x7e)
			return -EBADMSG;
		if (o + 1 >= size)
			return -ENAMETOOLONG;
		out[o++] = (char)u;
	}
	for (i += 2; i + 1 < len; i += 2)	/* only NULs after the end */
		if (data[i] || data[i + 1])
			return -EBADMSG;
	out[o] = '\0';
	return 0;
}

/* ---- the files --------------------------------------------------------- */

/*
 * root/rel, a regular file of at most max bytes, not through a symbolic
 * link at its last component: *ret (NUL terminated, to free) and its
 * length; -ENOENT when it is not there.
 */
static int
read_under(const char *root, const char *rel, size_t max, char **ret,
	   size_t *ret_len, char *why, size_t why_size)
{
	char path[PATH_MAX];
	struct stat st;
	char *buf;
	size_t n = 0;
	int fd, r;

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >=
	    (int)sizeof(path))
		return text_fail(-ENAMETOOLONG, why, why_size, "%s: too long", rel);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			return text_fail(r, why, why_size,
				    "%s: a symbolic link, not followed", path);
		return text_fail(r, why, why_size, "%s: %s", path, strerror(-r));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return text_fail(-EBADMSG, why, why_size,
			    "%s: not a regular file", path);
	}
	if ((unsigned long long)st.st_size > max) {
		close(fd);
		return text_fail(-EFBIG, why, why_size,
			    "%s: %lld bytes, more than %zu", path,
			    (long long)st.st_size, max);
	}
	buf = malloc(max + 2);
	if (!buf) {
		close(fd);
		return text_fail(-ENOMEM, why, why_size, "out of memory");
	}
	/* The size may change under us: read one byte past the bound. */
	while (n <= max) {
		ssize_t k = read(fd, buf + n, max + 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			free(buf);
			close(fd);
			return text_fail(r, why, why_size, "%s: %s", path,
				    strerror(-r));
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (n > max) {
		free(buf);
		return text_fail(-EFBIG, why, why_size, "%s: more than %zu bytes",
			    path, max);
	}
	buf[n] = '\0';
	*ret = buf;
	*ret_len = n;
	return 0;
}

static bool
exists_under(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >=
	    (int)sizeof(path))
		return false;
	return lstat(path, &st) == 0;
}

/* One of systemd's loader variables: 1 and its value, 0 when unset. */
static int
read_loader_var(const char *root, const char *name, char *out, size_t size,
		char *why, size_t why_size)
{
	char rel[128];
	char *buf;
	size_t len;
	int r;

	snprintf(rel, sizeof(rel), "sys/firmware/efi/efivars/%s-%s", name,
		 BOOT_LOADER_GUID);
	r = read_under(root, rel, EFIVAR_MAX, &buf, &len, why, why_size);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = efivar_string_parse((unsigned char *)buf, len, out, size);
	free(buf);
	if (r < 0)
		return text_fail(r, why, why_size,
			    "EFI variable %s: not a short ASCII string", name);
	return 1;
}

/* Whether GRUB could write root's grubenv at boot (to clear next_entry)
 * and torpor now: else why not. */
/* The block device under st is a stacked one: sys/dev/block/M:N/KIND
 * exists (dm: device-mapper, md: RAID). */
static bool
on_stacked_dev(const char *root, const struct stat *st, const char *kind)
{
	char dev[64];

	snprintf(dev, sizeof(dev), "sys/dev/block/%u:%u/%s",
		 major(st->st_dev), minor(st->st_dev), kind);
	return exists_under(root, dev);
}

static bool
grubenv_writable(const char *root, char *why, size_t why_size)
{
	char path[PATH_MAX];
	struct stat st, dir;
	struct statfs sfs;
	struct statvfs svfs;
	bool ok = false;
	int fd;

	snprintf(path, sizeof(path), "%s/boot/grub", root);
	if (lstat(path, &dir) < 0 || !S_ISDIR(dir.st_mode)) {
		text_fail(0, why, why_size, "%s: not a folder", path);
		return false;
	}
	snprintf(path, sizeof(path), "%s/boot/grub/grubenv", root);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		text_fail(0, why, why_size, "%s: %s", path, strerror(errno));
		return false;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		text_fail(0, why, why_size, "%s: not a regular file", path);
	else if (st.st_size != GRUBENV_SIZE)
		text_fail(0, why, why_size, "%s: %lld bytes, not %d", path,
		     (long long)st.st_size, GRUBENV_SIZE);
	else if (!owner_root_only(&st) || !owner_root_only(&dir))
		text_fail(0, why, why_size,
		     "%s or its folder may be changed by others than root",
		     path);
	else if (fstatfs(fd, &sfs) < 0 || fstatvfs(fd, &svfs) < 0)
		text_fail(0, why, why_size, "%s: %s", path, strerror(errno));
	else if ((unsigned long)sfs.f_type == BTRFS_SUPER_MAGIC)
		text_fail(0, why, why_size,
		     "%s is on btrfs, where GRUB does not write it", path);
	else if (svfs.f_flag & ST_RDONLY)
		text_fail(0, why, why_size, "%s is on a read-only mount", path);
	/* LVM, LUKS and RAID: GRUB reads them, never writes. */
	else if (on_stacked_dev(root, &st, "dm"))
		text_fail(0, why, why_size,
			  "%s is on device-mapper (LVM, LUKS), where GRUB does not write it",
			  path);
	else if (on_stacked_dev(root, &st, "md"))
		text_fail(0, why, why_size,
			  "%s is on a RAID device, where GRUB does not write it",
			  path);
	else
		ok = true;
	close(fd);
	return ok;
}

static void
find_running(struct boot_next *b, const char *running)
{
	b->running = -1;
	if (!running)
		return;
	for (size_t i = 0; i < b->menu.n; i++) {
		const struct boot_entry *e = &b->menu.e[i];

		if (!e->submenu && !e->recovery &&
		    !strcmp(e->release, running)) {
			b->running = (int)i;
			return;
		}
	}
}

static int
inspect_grub(const char *root, struct boot_next *b, char *why,
	     size_t why_size)
{
	struct grub_cfg_default d;
	struct grubenv env = { "", "" };
	char *text = NULL, *envb = NULL, value[BOOT_NAME_SIZE];
	size_t len, envl;
	bool have_env = false;
	int r;

	r = read_under(root, "boot/grub/grub.cfg", GRUB_CFG_MAX, &text, &len,
		       why, why_size);
	if (r < 0)
		return r;
	r = grub_cfg_parse(text, len, &b->menu, &d, value, sizeof(value));
	free(text);
	if (r < 0)
		return text_fail(r, why, why_size, "%s/boot/grub/grub.cfg: %s",
			    root, value);

	r = read_under(root, "etc/default/grub", SMALL_FILE_MAX, &text, &len,
		       why, why_size);
	if (r == 0) {
		if (grub_default_parse(text, len, b->grub_default,
				       sizeof(b->grub_default)) <= 0)
			b->grub_default[0] = '\0';
		free(text);
	}

	r = read_under(root, "boot/grub/grubenv", GRUBENV_SIZE, &envb, &envl,
		       why, why_size);
	if (r == 0) {
		r = grubenv_parse(envb, envl, &env, value, sizeof(value));
		if (r >= 0)
			memcpy(b->grubenv, envb, GRUBENV_SIZE);
		free(envb);
		if (r < 0)
			return text_fail(r, why, why_size,
				    "%s/boot/grub/grubenv: %s", root, value);
		have_env = b->have_grubenv = true;
	} else if (r != -ENOENT) {
		return r;
	}

	/* The default without a one-shot. */
	if (!d.set) {
		snprintf(value, sizeof(value), "0");
		snprintf(b->next_by, sizeof(b->next_by),
			 "GRUB's first entry (grub.cfg sets no default)");
	} else if (!strcmp(d.value, "${saved_entry}") ||
		   !strcmp(d.value, "$saved_entry")) {
		snprintf(value, sizeof(value), "%s", env.saved_entry);
		snprintf(b->next_by, sizeof(b->next_by),
			 "GRUB default (grubenv saved_entry)");
	} else {
		snprintf(value, sizeof(value), "%s", d.value);
		snprintf(b->next_by, sizeof(b->next_by), "GRUB default");
	}
	r = grub_menu_find(&b->menu, value);
	if (r < 0)
		return text_fail(r, why, why_size,
			    "GRUB's default \"%s\" %s", value,
			    r == -EISDIR ? "is a submenu, not an entry" :
			    r == -EOPNOTSUPP ? "depends on a variable" :
			    "names no entry of grub.cfg");
	b->by_default = b->next = r;

	if (env.next_entry[0]) {
		b->one_shot = true;
		snprintf(b->one_shot_entry, sizeof(b->one_shot_entry), "%s",
			 env.next_entry);
		if (d.reads_next_entry) {
			r = grub_menu_find(&b->menu, env.next_entry);
			if (r < 0)
				return text_fail(r, why, why_size,
					    "grubenv's next_entry \"%s\" names no entry of grub.cfg",
					    env.next_entry);
			b->next = r;
			snprintf(b->next_by, sizeof(b->next_by),
				 "GRUB one-shot (grubenv next_entry)");
		}
	}

	if (!d.reads_next_entry)
		snprintf(b->cannot_redirect, sizeof(b->cannot_redirect),
			 "grub.cfg does not read grubenv's next_entry");
	else if (!have_env)
		snprintf(b->cannot_redirect, sizeof(b->cannot_redirect),
			 "no %s/boot/grub/grubenv", root);
	else
		b->can_redirect = grubenv_writable(root, b->cannot_redirect,
						   sizeof(b->cannot_redirect));
	return 0;
}

/* The order systemd-boot shows its entries in: those with a sort-key
 * first, by it; then the newest version first; then by id. */
static int
sd_entry_cmp(const void *a, const void *b)
{
	const struct boot_entry *x = a, *y = b;
	int r;

	if (!!x->sort_key[0] != !!y->sort_key[0])
		return x->sort_key[0] ? -1 : 1;
	r = strcmp(x->sort_key, y->sort_key);
	if (r)
		return r;
	r = strverscmp(y->version, x->version);
	if (r)
		return r;
	return strverscmp(y->id, x->id);
}

static int
sd_find(const struct boot_menu *m, const char *value)
{
	for (size_t i = 0; i < m->n; i++) {
		const char *id = m->e[i].id;
		size_t vl = strlen(value);

		if (!strcmp(id, value) ||
		    (strlen(id) == vl + 5 && !strncmp(id, value, vl) &&
		     !strcmp(id + vl, ".conf")))
			return (int)i;
	}
	for (size_t i = 0; i < m->n; i++)
		if (!fnmatch(value, m->e[i].id, FNM_CASEFOLD))
			return (int)i;
	return -ENOENT;
}

static const char *const esp_dirs[] = { "efi", "boot/efi", "boot" };

static int
read_entries(const char *root, struct boot_menu *m, char *why,
	     size_t why_size)
{
	dev_t seen_dev[3];
	ino_t seen_ino[3];
	size_t seen = 0;

	m->n = 0;
	for (size_t d = 0; d < 3; d++) {
		char path[PATH_MAX], rel[PATH_MAX + 64], msg[BOOT_NAME_SIZE];
		struct dirent *de;
		struct stat st;
		unsigned looked = 0;
		bool dup = false;
		DIR *dir;
		int fd;

		snprintf(path, sizeof(path), "%s/%s/loader/entries", root,
			 esp_dirs[d]);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
			  O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		for (size_t i = 0; i < seen; i++)
			dup |= seen_dev[i] == st.st_dev &&
				seen_ino[i] == st.st_ino;
		if (dup) {
			close(fd);
			continue;
		}
		seen_dev[seen] = st.st_dev;
		seen_ino[seen++] = st.st_ino;
		dir = fdopendir(fd);
		if (!dir) {
			close(fd);
			continue;
		}
		while ((de = readdir(dir))) {
			size_t nl = strlen(de->d_name);
			char *text;
			size_t len;
			int r;

			if (++looked > ENTRY_FILES_MAX) {
				closedir(dir);
				return text_fail(-E2BIG, why, why_size,
					    "%s: more than %d files", path,
					    ENTRY_FILES_MAX);
			}
			if (nl < 6 || strcmp(de->d_name + nl - 5, ".conf"))
				continue;
			if (m->n >= BOOT_ENTRIES_MAX) {
				closedir(dir);
				return text_fail(-E2BIG, why, why_size,
					    "more than %d loader entries",
					    BOOT_ENTRIES_MAX);
			}
			snprintf(rel, sizeof(rel), "%s/loader/entries/%s",
				 esp_dirs[d], de->d_name);
			r = read_under(root, rel, SMALL_FILE_MAX, &text, &len,
				       why, why_size);
			if (r < 0) {
				closedir(dir);
				return r;
			}
			r = loader_entry_parse(de->d_name, text, len,
					       &m->e[m->n], msg, sizeof(msg));
			free(text);
			if (r < 0) {
				closedir(dir);
				return text_fail(r, why, why_size, "%s: %s", path,
					    msg);
			}
			m->n++;
		}
		closedir(dir);
	}
	qsort(m->e, m->n, sizeof(*m->e), sd_entry_cmp);
	return 0;
}

/* loader.conf's default, "" when it has none. */
static int
read_loader_conf_default(const char *root, char *out, size_t size,
			 char *why, size_t why_size)
{
	out[0] = '\0';
	for (size_t d = 0; d < 3; d++) {
		char rel[64], *text;
		size_t len;
		int r;

		snprintf(rel, sizeof(rel), "%s/loader/loader.conf",
			 esp_dirs[d]);
		r = read_under(root, rel, SMALL_FILE_MAX, &text, &len, why,
			       why_size);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		for (char *line = text, *next; line; line = next) {
			char *v, *e;

			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			line += strspn(line, " \t");
			if (strncmp(line, "default", 7) ||
			    !is_blank(line[7]))
				continue;
			v = line + 7 + strspn(line + 7, " \t");
			e = v + strlen(v);
			while (e > v && is_blank(e[-1]))
				*--e = '\0';
			if (copy_name(out, size, v, strlen(v)) < 0) {
				free(text);
				return text_fail(-ENAMETOOLONG, why, why_size,
					    "%s: a default too long", rel);
			}
		}
		free(text);
		return 0;
	}
	return 0;
}

static int
inspect_systemd_boot(const char *root, struct boot_next *b, char *why,
		     size_t why_size)
{
	char value[BOOT_NAME_SIZE], path[PATH_MAX];
	struct statvfs svfs;
	int r;

	r = read_entries(root, &b->menu, why, why_size);
	if (r < 0)
		return r;
	if (b->menu.n == 0)
		return text_fail(-ENOENT, why, why_size,
			    "systemd-boot without loader entries (unified kernel images are not read yet)");

	r = read_loader_var(root, "LoaderEntryDefault", value, sizeof(value),
			    why, why_size);
	if (r < 0)
		return r;
	if (r > 0) {
		snprintf(b->next_by, sizeof(b->next_by),
			 "systemd-boot default (LoaderEntryDefault)");
	} else {
		r = read_loader_conf_default(root, value, sizeof(value), why,
					     why_size);
		if (r < 0)
			return r;
		snprintf(b->next_by, sizeof(b->next_by),
			 value[0] ? "systemd-boot default (loader.conf)" :
			 "systemd-boot's first entry");
	}
	if (value[0] == '@')
		return text_fail(-EOPNOTSUPP, why, why_size,
			    "systemd-boot's default \"%s\" is not followed yet",
			    value);
	r = value[0] ? sd_find(&b->menu, value) : 0;
	if (r < 0)
		return text_fail(r, why, why_size,
			    "systemd-boot's default \"%s\" names no entry",
			    value);
	b->by_default = b->next = r;

	r = read_loader_var(root, "LoaderEntryOneShot", value, sizeof(value),
			    why, why_size);
	if (r < 0)
		return r;
	if (r > 0) {
		b->one_shot = true;
		snprintf(b->one_shot_entry, sizeof(b->one_shot_entry), "%s",
			 value);
		r = sd_find(&b->menu, value);
		if (r < 0)
			return text_fail(r, why, why_size,
				    "LoaderEntryOneShot \"%s\" names no entry",
				    value);
		b->next = r;
		snprintf(b->next_by, sizeof(b->next_by),
			 "systemd-boot one-shot (LoaderEntryOneShot)");
	}

	snprintf(path, sizeof(path), "%s/sys/firmware/efi/efivars", root);
	if (statvfs(path, &svfs) < 0)
		text_fail(0, b->cannot_redirect, sizeof(b->cannot_redirect),
		     "no efivarfs at %s", path);
	else if (svfs.f_flag & ST_RDONLY)
		text_fail(0, b->cannot_redirect, sizeof(b->cannot_redirect),
		     "efivarfs is mounted read-only at %s", path);
	else
		b->can_redirect = true;
	return 0;
}

int
boot_next_inspect(const char *root, const char *running,
		  struct boot_next *ret, char *why, size_t why_size)
{
	char info[BOOT_NAME_SIZE];
	bool grub_cfg, entries = false;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->next = ret->by_default = ret->running = -1;
	r = read_loader_var(root, "LoaderInfo", info, sizeof(info), why,
			    why_size);
	if (r < 0)
		return r;
	grub_cfg = exists_under(root, "boot/grub/grub.cfg");
	for (size_t d = 0; d < 3; d++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "%s/loader/entries", esp_dirs[d]);
		entries |= exists_under(root, rel);
	}
	/* The boot loader that started this boot says who it is
	 * (systemd-boot, and GRUB with its bli module); else the files. */
	if (r > 0 && !strncmp(info, "systemd-boot", 12))
		ret->loader = BOOT_LOADER_SYSTEMD_BOOT;
	else if (r > 0 && !strncmp(info, "GRUB", 4))
		ret->loader = BOOT_LOADER_GRUB;
	else if (grub_cfg)
		ret->loader = BOOT_LOADER_GRUB;
	else if (entries)
		ret->loader = BOOT_LOADER_SYSTEMD_BOOT;
	else {
		snprintf(ret->cannot_redirect, sizeof(ret->cannot_redirect),
			 "no boot loader torpor knows (GRUB, systemd-boot)");
		return 0;
	}
	if (ret->loader == BOOT_LOADER_GRUB)
		r = inspect_grub(root, ret, why, why_size);
	else
		r = inspect_systemd_boot(root, ret, why, why_size);
	if (r < 0) {
		enum boot_loader l = ret->loader;

		memset(ret, 0, sizeof(*ret));
		ret->loader = l;
		ret->next = ret->by_default = ret->running = -1;
		return r;
	}
	find_running(ret, running);
	return 0;
}
