/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration file.  inih does the INI syntax; this file adds what
 * inih does not give us: line numbers (Debian's libinih is built without
 * INI_HANDLER_LINENO, so our own reader counts lines), one precise message
 * for the first error, the [torpor] keys, and the checks of every plugin
 * section against the keys its plugin declares.
 *
 * A missing file with missing_ok gives the defaults and path NULL, as for
 * config_new_default(): path names a file only when one was read.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "image-format.h"
#include "log.h"
#include "names.h"
#include "owner.h"
#include "snapshot-spec.h"

#define REASON_MAX		256

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

static bool
is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool
is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	       ch == '\v' || ch == '\f';
}

/*
 * Every digit is read even past an overflow, so that *ret_end always
 * lands after the number and callers can name junk before overflow.
 */
int
config_parse_u64_prefix(const char *s, const char **ret_end, uint64_t *ret)
{
	uint64_t v = 0;
	bool overflow = false;

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	*ret_end = s;
	if (overflow)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* The shift of a size suffix, 0 for none. */
static unsigned
size_shift(char ch, bool lower_case)
{
	static const char suffixes[] = "KMGT";
	const char *hit;

	if (lower_case && ch >= 'a' && ch <= 'z')
		ch = (char)(ch - 'a' + 'A');
	hit = ch ? strchr(suffixes, ch) : NULL;
	return hit ? 10 * (unsigned)(hit - suffixes + 1) : 0;
}

int
config_parse_size_prefix(const char *s, bool lower_case, const char **ret_end,
			 uint64_t *ret)
{
	const char *end;
	unsigned shift;
	uint64_t v = 0;
	int r;

	r = config_parse_u64_prefix(s, &end, &v);
	if (r == -EINVAL)
		return r;
	shift = size_shift(*end, lower_case);
	if (shift)
		end++;
	*ret_end = end;
	if (r < 0 || v > UINT64_MAX >> shift)
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

/* Decimal digits only: no sign, no blanks, no base prefix. */
static int
parse_u64(const char *s, uint64_t *ret)
{
	const char *end;
	int r;

	r = config_parse_u64_prefix(s, &end, ret);
	if (r == -EINVAL || *end)
		return -EINVAL;
	return r;
}

static int
parse_i64(const char *s, int64_t *ret)
{
	bool negative = *s == '-';
	uint64_t v;
	int r;

	r = parse_u64(negative ? s + 1 : s, &v);
	if (r < 0)
		return r;
	if (negative) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*ret = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > (uint64_t)INT64_MAX)
			return -ERANGE;
		*ret = (int64_t)v;
	}
	return 0;
}

/*
 * Suffixes are upper case only: plugins parse their own values from the
 * raw text, and one spelling everywhere keeps them agreeing with us.
 */
int
config_parse_size(const char *s, uint64_t *ret)
{
	const char *end;
	uint64_t v;
	int r;

	r = config_parse_size_prefix(s, false, &end, &v);
	if (r == -EINVAL || *end)
		return -EINVAL;
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

static bool
is_absolute_path(const char *s)
{
	return s[0] == '/';
}

static const char *const path_prefixes[] = {
	"UUID=", "LABEL=", "PARTUUID=", "PARTLABEL=", NULL,
};

static const char *
type_name(enum torpor_config_type t)
{
	switch (t) {
	case TORPOR_CONFIG_STRING:
		return "string";
	case TORPOR_CONFIG_INT:
		return "integer";
	case TORPOR_CONFIG_SIZE:
		return "size";
	case TORPOR_CONFIG_BOOL:
		return "boolean";
	case TORPOR_CONFIG_ENUM:
		return "choice";
	case TORPOR_CONFIG_PATH:
		return "path";
	}
	return "unknown";
}

/*
 * Append name to the list in buf, after sep unless it is the first
 * (bounded; *used is the list's length, 0 for an empty buf).
 */
static void
append_name(char *buf, size_t size, size_t *used, const char *sep,
	    const char *name)
{
	int n;

	if (*used == 0 && size > 0)
		buf[0] = '\0';
	if (*used >= size)
		return;
	n = snprintf(buf + *used, size - *used, "%s%s", *used ? sep : "",
		     name);
	if (n > 0)
		*used += (size_t)n;
}

/* "a, b, c" of the NULL-terminated list into buf (bounded). */
static void
join_names(char *buf, size_t size, const char *const *names)
{
	size_t used = 0, i;

	buf[0] = '\0';
	for (i = 0; names && names[i]; i++)
		append_name(buf, size, &used, ", ", names[i]);
}

/*
 * A plugin that declares an INT or SIZE key and leaves min and max both 0
 * asks for no bounds: a range holding only 0 would make no sense as a key.
 */
static bool
has_bounds(const struct torpor_config_key *k)
{
	return k->min != 0 || k->max != 0;
}

/*
 * Why a number was refused: it did not parse (r), or it lies outside
 * k's bounds.  what names the kind of number, unit follows the range.
 */
static int
number_refused(const struct torpor_config_key *k, const char *value, int r,
	       const char *what, const char *unit, char *reason,
	       size_t reason_size)
{
	if (r == -EINVAL) {
		snprintf(reason, reason_size, "'%s' is not %s", value, what);
		return r;
	}
	if (r < 0 && !has_bounds(k)) {
		snprintf(reason, reason_size, "%s does not fit in 64 bits",
			 value);
		return r;
	}
	snprintf(reason, reason_size,
		 "%s is out of range %" PRId64 "..%" PRId64 "%s", value,
		 k->min, k->max, unit);
	return -ERANGE;
}

static int
check_int(const struct torpor_config_key *k, const char *value, char *reason,
	  size_t reason_size)
{
	int64_t v = 0;
	int r;

	r = parse_i64(value, &v);
	if (r == 0 && (!has_bounds(k) || (v >= k->min && v <= k->max)))
		return 0;
	return number_refused(k, value, r, "an integer", "", reason,
			      reason_size);
}

static int
check_size(const struct torpor_config_key *k, const char *value, char *reason,
	   size_t reason_size)
{
	uint64_t size = 0;
	int r;

	r = config_parse_size(value, &size);
	if (r == 0 && (!has_bounds(k) ||
		       ((k->min <= 0 || size >= (uint64_t)k->min) &&
			k->max >= 0 && size <= (uint64_t)k->max)))
		return 0;
	return number_refused(k, value, r,
			      "a size (bytes, with an optional K, M, G or T "
			      "suffix)", " bytes", reason, reason_size);
}

static int
check_bool(const char *value, char *reason, size_t reason_size)
{
	static const char *const bools[] = {
		"yes", "no", "true", "false", "1", "0", "on", "off", NULL,
	};
	size_t i;

	for (i = 0; bools[i]; i++)
		if (strcmp(value, bools[i]) == 0)
			return 0;
	snprintf(reason, reason_size,
		 "'%s' is not a boolean (yes, no, true, false, 1, 0, on, off)",
		 value);
	return -EINVAL;
}

/* Index of value in the NULL-terminated list, or -1. */
static int
choice_index(const char *const *choices, const char *value)
{
	int i;

	for (i = 0; choices && choices[i]; i++)
		if (strcmp(value, choices[i]) == 0)
			return i;
	return -1;
}

static int
check_enum(const struct torpor_config_key *k, const char *value,
	   char *reason, size_t reason_size)
{
	char choices[160];

	if (choice_index(k->choices, value) >= 0)
		return 0;
	join_names(choices, sizeof(choices), k->choices);
	snprintf(reason, reason_size, "'%s' is not one of: %s", value, choices);
	return -EINVAL;
}

static int
check_path(const char *value, char *reason, size_t reason_size)
{
	size_t i;

	if (is_absolute_path(value))
		return 0;
	for (i = 0; path_prefixes[i]; i++) {
		size_t n = strlen(path_prefixes[i]);

		if (strncmp(value, path_prefixes[i], n) == 0 &&
		    value[n] != '\0')
			return 0;
	}
	snprintf(reason, reason_size,
		 "'%s' is not an absolute path (nor UUID=, LABEL=, PARTUUID=, "
		 "PARTLABEL=)", value);
	return -EINVAL;
}

int
config_check_value(const struct torpor_config_key *k, const char *value,
		   char *reason, size_t reason_size)
{
	if (!k || !value) {
		snprintf(reason, reason_size, "no value");
		return -EINVAL;
	}
	switch (k->type) {
	case TORPOR_CONFIG_STRING:
		return 0;
	case TORPOR_CONFIG_INT:
		return check_int(k, value, reason, reason_size);
	case TORPOR_CONFIG_SIZE:
		return check_size(k, value, reason, reason_size);
	case TORPOR_CONFIG_BOOL:
		return check_bool(value, reason, reason_size);
	case TORPOR_CONFIG_ENUM:
		return check_enum(k, value, reason, reason_size);
	case TORPOR_CONFIG_PATH:
		return check_path(value, reason, reason_size);
	}
	snprintf(reason, reason_size, "the plugin declares an unknown type %d",
		 (int)k->type);
	return -EINVAL;
}

static void
free_filters(char **filters, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(filters[i]);
	free(filters);
}

void
config_free(struct torpor_config *c)
{
	size_t i;

	if (!c)
		return;
	free(c->path);
	free_filters(c->filters, c->n_filters);
	free(c->writer);
	free(c->snapshot);
	free(c->plugin_dir);
	free(c->group);
	free(c->state_dir);
	free(c->initramfs);
	for (i = 0; i < c->n_entries; i++) {
		free(c->entries[i].section);
		free(c->entries[i].key);
		free(c->entries[i].value);
	}
	free(c->entries);
	for (i = 0; i < c->n_sections; i++)
		free(c->sections[i].name);
	free(c->sections);
	free(c);
}

static const struct config_entry *
find_entry(const struct torpor_config *c, const char *section, const char *key)
{
	size_t i;

	if (!c)
		return NULL;
	for (i = 0; i < c->n_entries; i++)
		if (strcmp(c->entries[i].section, section) == 0 &&
		    strcmp(c->entries[i].key, key) == 0)
			return &c->entries[i];
	return NULL;
}

const char *
config_get(const struct torpor_config *c, const char *section,
	   const char *key)
{
	const struct config_entry *e;

	if (!section || !key)
		return NULL;
	e = find_entry(c, section, key);
	return e ? e->value : NULL;
}

const char *
config_key_place(const struct torpor_config *c, const char *section,
		 const char *key, char *buf, size_t size)
{
	const struct config_entry *e = find_entry(c, section, key);
	const char *path = c && c->path ? c->path : "configuration";

	if (e)
		snprintf(buf, size, "%s:%u: [%s] key '%s'", path, e->line,
			 section, key);
	else
		snprintf(buf, size, "%s", path);
	return buf;
}

const char *
config_key_naming(const struct torpor_config *c, const char *name)
{
	size_t i;

	if (!c || !name)
		return NULL;
	if (c->writer && strcmp(c->writer, name) == 0)
		return "writer";
	for (i = 0; i < c->n_filters; i++)
		if (strcmp(c->filters[i], name) == 0)
			return "filters";
	return NULL;
}

const struct torpor_config_key *
config_find_key(const struct torpor_plugin *p, const char *key)
{
	const struct torpor_config_key *k;

	for (k = p->config_keys; k && k->name; k++)
		if (strcmp(k->name, key) == 0)
			return k;
	return NULL;
}

const char *
config_get_for(const struct torpor_config *c, const struct torpor_plugin *p,
	       const char *key)
{
	const struct torpor_config_key *k;
	const char *v;

	if (!p || !p->name || !key)
		return NULL;
	v = config_get(c, p->name, key);
	if (v)
		return v;
	k = config_find_key(p, key);
	return k ? k->default_value : NULL;
}

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

/* s[0..len) as a plugin name; on failure a reason that quotes it. */
static int
check_plugin_name(const char *s, size_t len, char *reason, size_t reason_size)
{
	if (plugin_name_valid(s, len))
		return 0;
	snprintf(reason, reason_size,
		 "'%.*s' is not a plugin name ([a-z0-9-], 1 to %d characters)",
		 len > 64 ? 64 : (int)len, s, TORPOR_PLUGIN_NAME_MAX);
	return -EINVAL;
}

/*
 * Split a filters value: names separated by commas and/or blanks.  Each
 * must be a valid plugin name, and none may appear twice.
 */
static int
parse_filters(const char *value, char ***ret, size_t *ret_n, char *reason,
	      size_t reason_size)
{
	char **list = NULL;
	size_t n = 0, i;
	const char *p = value;

	for (;;) {
		const char *start;
		size_t len;
		char **grown;

		while (*p == ',' || is_blank(*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != ',' && !is_blank(*p))
			p++;
		len = (size_t)(p - start);
		if (check_plugin_name(start, len, reason, reason_size) < 0)
			goto invalid;
		for (i = 0; i < n; i++)
			if (strlen(list[i]) == len &&
			    memcmp(list[i], start, len) == 0) {
				snprintf(reason, reason_size,
					 "filter '%s' is listed twice", list[i]);
				goto invalid;
			}
		grown = realloc(list, (n + 1) * sizeof(*list));
		if (!grown)
			goto nomem;
		list = grown;
		list[n] = strndup(start, len);
		if (!list[n])
			goto nomem;
		n++;
	}
	*ret = list;
	*ret_n = n;
	return 0;

invalid:
	free_filters(list, n);
	return -EINVAL;
nomem:
	free_filters(list, n);
	return -ENOMEM;
}

/* ------------------------------------------------------------------ */
/* The [torpor] keys: one table, below, drives defaults, parsing,      */
/* checking, messages and the dump.                                    */

struct core_key {
	/* Name, type, bounds, choices, default and help.  A value is first
	 * checked by config_check_value(), as a plugin's would be. */
	struct torpor_config_key decl;
	/* An empty value means "not set": set() gets NULL. */
	bool optional;
	/* Where set() and show() find the field in struct torpor_config. */
	size_t offset;
	/* Store a value config_check_value() accepted, after the checks
	 * of its own; on a bad value write a reason.  -EINVAL, -ENOMEM. */
	int (*set)(struct torpor_config *c, const struct core_key *k,
		   const char *value, char *reason, size_t reason_size);
	/* The value as the file would spell it, in buf or static; NULL
	 * when not set. */
	const char *(*show)(const struct torpor_config *c,
			    const struct core_key *k, char *buf, size_t size);
};

static void *
field_of(const struct torpor_config *c, const struct core_key *k)
{
	return (char *)c + k->offset;
}

static int
replace_string(char **slot, const char *value)
{
	char *copy = NULL;

	if (value && !(copy = strdup(value)))
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

static int
set_filters(struct torpor_config *c, const struct core_key *k,
	    const char *value, char *reason, size_t reason_size)
{
	char **list;
	size_t n;
	int r;

	r = parse_filters(value, &list, &n, reason, reason_size);
	if (r < 0)
		return r;
	free_filters(c->filters, c->n_filters);
	c->filters = list;
	c->n_filters = n;
	return 0;
}

static const char *
show_filters(const struct torpor_config *c, const struct core_key *k,
	     char *buf, size_t size)
{
	size_t used = 0, i;

	buf[0] = '\0';
	for (i = 0; i < c->n_filters; i++)
		append_name(buf, size, &used, " ", c->filters[i]);
	return buf;
}

static int
set_plugin_name(struct torpor_config *c, const struct core_key *k,
		const char *value, char *reason, size_t reason_size)
{
	int r;

	if (value) {
		r = check_plugin_name(value, strlen(value), reason,
				      reason_size);
		if (r < 0)
			return r;
	}
	return replace_string(field_of(c, k), value);
}

static int
set_directory(struct torpor_config *c, const struct core_key *k,
	      const char *value, char *reason, size_t reason_size)
{
	if (value && !is_absolute_path(value)) {
		snprintf(reason, reason_size, "'%s' is not an absolute path",
			 value);
		return -EINVAL;
	}
	return replace_string(field_of(c, k), value);
}

/* A group's name as groupadd accepts it; whether it exists is torpord's
 * to check, where it is used. */
static int
set_group(struct torpor_config *c, const struct core_key *k,
	  const char *value, char *reason, size_t reason_size)
{
	size_t i;

	for (i = 0; value && value[i]; i++)
		if (!(isalnum((unsigned char)value[i]) || value[i] == '_' ||
		      value[i] == '.' || (value[i] == '-' && i > 0)) ||
		    i >= 32) {
			snprintf(reason, reason_size,
				 "'%s' is not a group name", value);
			return -EINVAL;
		}
	return replace_string(field_of(c, k), value);
}

/* An absolute path to a snapshot device, or a spec of the sim. */
static int
set_snapshot(struct torpor_config *c, const struct core_key *k,
	     const char *value, char *reason, size_t reason_size)
{
	uint64_t size, seed;
	bool named;
	int r;

	if (snapshot_spec_kind(value) == TORPOR_SNAPSHOT_SIM) {
		r = snapshot_spec_parse(value, &size, &seed, &named);
		if (r < 0) {
			snprintf(reason, reason_size, "'%s': %s", value,
				 snapshot_spec_strerror(r));
			return -EINVAL;
		}
	} else if (!is_absolute_path(value)) {
		snprintf(reason, reason_size,
			 "'%s' is neither an absolute path nor "
			 "sim[:SIZE[:SEED]]", value);
		return -EINVAL;
	}
	return replace_string(field_of(c, k), value);
}

/* auto, none, or the absolute path of an initramfs. */
static int
set_initramfs(struct torpor_config *c, const struct core_key *k,
	      const char *value, char *reason, size_t reason_size)
{
	if (strcmp(value, CONFIG_INITRAMFS_AUTO) != 0 &&
	    strcmp(value, CONFIG_INITRAMFS_NONE) != 0 &&
	    !is_absolute_path(value)) {
		snprintf(reason, reason_size,
			 "'%s' is neither auto, none nor an absolute path",
			 value);
		return -EINVAL;
	}
	return replace_string(field_of(c, k), value);
}

static const char *
show_string(const struct torpor_config *c, const struct core_key *k,
	    char *buf, size_t size)
{
	return *(char *const *)field_of(c, k);
}

/* An INT key whose bounds fit in unsigned (checked already). */
static int
set_unsigned(struct torpor_config *c, const struct core_key *k,
	     const char *value, char *reason, size_t reason_size)
{
	uint64_t v;

	/* Digits only: the core's numbers take no sign, not even "-0". */
	if (parse_u64(value, &v) < 0) {
		snprintf(reason, reason_size, "'%s' is not a number", value);
		return -EINVAL;
	}
	*(unsigned *)field_of(c, k) = (unsigned)v;
	return 0;
}

static const char *
show_unsigned(const struct torpor_config *c, const struct core_key *k,
	      char *buf, size_t size)
{
	snprintf(buf, size, "%u", *(const unsigned *)field_of(c, k));
	return buf;
}

static const char *const after_names[] = {
	[CONFIG_AFTER_POWEROFF] = "poweroff",
	[CONFIG_AFTER_REBOOT] = "reboot",
	[CONFIG_AFTER_SUSPEND] = "suspend",
	NULL,
};

int
config_after_from_name(const char *name)
{
	int i = name ? choice_index(after_names, name) : -1;

	return i < 0 ? -EINVAL : i;
}

static const char *const power_off_names[] = {
	[CONFIG_POWER_OFF_PLATFORM] = "platform",
	[CONFIG_POWER_OFF_SHUTDOWN] = "shutdown",
	NULL,
};

static const char *const write_thread_names[] = {
	[CONFIG_WRITE_THREAD_AUTO] = "auto",
	[CONFIG_WRITE_THREAD_NO] = "no",
	[CONFIG_WRITE_THREAD_YES] = "yes",
	NULL,
};

/* An ENUM key stored as an int (an enum of the config) at its offset: the
 * index of the value in the key's choices. */
_Static_assert(sizeof(enum config_after) == sizeof(int) &&
	       sizeof(enum config_power_off) == sizeof(int) &&
	       sizeof(enum config_write_thread) == sizeof(int),
	       "enum keys are stored as int");
static int
set_choice(struct torpor_config *c, const struct core_key *k,
	   const char *value, char *reason, size_t reason_size)
{
	*(int *)field_of(c, k) = (int)choice_index(k->decl.choices, value);
	return 0;
}

static const char *
show_choice(const struct torpor_config *c, const struct core_key *k,
	    char *buf, size_t size)
{
	return k->decl.choices[*(const int *)field_of(c, k)];
}

static int
set_image_size(struct torpor_config *c, const struct core_key *k,
	       const char *value, char *reason, size_t reason_size)
{
	c->has_image_size = value != NULL;
	c->image_size = 0;
	if (value && config_parse_size(value, &c->image_size) < 0)
		return -EINVAL;
	return 0;
}

static int
set_hibernate_delay(struct torpor_config *c, const struct core_key *k,
		    const char *value, char *reason, size_t reason_size)
{
	c->has_hibernate_delay = value != NULL;
	c->hibernate_delay = 0;
	return value ? set_unsigned(c, k, value, reason, reason_size) : 0;
}

static const char *
show_hibernate_delay(const struct torpor_config *c, const struct core_key *k,
		     char *buf, size_t size)
{
	return c->has_hibernate_delay ? show_unsigned(c, k, buf, size) : NULL;
}

/* Bytes with the largest suffix that keeps them exact. */
static const char *
show_image_size(const struct torpor_config *c, const struct core_key *k,
		char *buf, size_t size)
{
	static const char suffixes[] = "KMGT";
	uint64_t v = c->image_size;
	int i = 0;

	if (!c->has_image_size)
		return NULL;
	while (v && suffixes[i] && v % 1024 == 0) {
		v /= 1024;
		i++;
	}
	snprintf(buf, size, "%" PRIu64 "%.*s", v, i ? 1 : 0,
		 i ? &suffixes[i - 1] : "");
	return buf;
}

#define FIELD(f)	offsetof(struct torpor_config, f)

/* In the order `torpor config` prints them. */
static const struct core_key core_keys[] = {
	{ .decl = { .name = "filters", .type = TORPOR_CONFIG_STRING,
		    .default_value = "",
		    .help = "filter plugins, in hibernate order" },
	  .offset = FIELD(filters),
	  .set = set_filters, .show = show_filters },
	{ .decl = { .name = "writer", .type = TORPOR_CONFIG_STRING,
		    .help = "the writer plugin that stores the image" },
	  .optional = true, .offset = FIELD(writer),
	  .set = set_plugin_name, .show = show_string },
	{ .decl = { .name = "threads", .type = TORPOR_CONFIG_INT,
		    .min = 0, .max = CONFIG_MAX_THREADS,
		    .default_value = "0",
		    .help = "worker threads; 0: one per online CPU, none "
			    "with one CPU" },
	  .offset = FIELD(threads),
	  .set = set_unsigned, .show = show_unsigned },
	{ .decl = { .name = "after", .type = TORPOR_CONFIG_ENUM,
		    .choices = after_names, .default_value = "poweroff",
		    .help = "what the machine does once the image is "
			    "written" },
	  .offset = FIELD(after),
	  .set = set_choice, .show = show_choice },
	{ .decl = { .name = "power_off", .type = TORPOR_CONFIG_ENUM,
		    .choices = power_off_names, .default_value = "platform",
		    .help = "how to switch off: the platform's hibernation "
			    "state (ACPI S4), else a plain power-off; or "
			    "shutdown: always the plain one" },
	  .offset = FIELD(power_off),
	  .set = set_choice, .show = show_choice },
	{ .decl = { .name = "write_thread", .type = TORPOR_CONFIG_ENUM,
		    .choices = write_thread_names, .default_value = "auto",
		    .help = "hibernation writes the image on a thread of its "
			    "own while the next buffer is filled (yes), "
			    "in turn with the filling (no), or yes when more "
			    "than one CPU is online (auto)" },
	  .offset = FIELD(write_thread),
	  .set = set_choice, .show = show_choice },
	{ .decl = { .name = "snapshot", .type = TORPOR_CONFIG_STRING,
		    .default_value = SNAPSHOT_DEFAULT_SPEC,
		    .help = "the snapshot device, or sim[:SIZE[:SEED]]" },
	  .offset = FIELD(snapshot),
	  .set = set_snapshot, .show = show_string },
	{ .decl = { .name = "plugin_dir", .type = TORPOR_CONFIG_STRING,
		    .help = "where plugins are loaded from; not set: the "
			    "built-in directory" },
	  .optional = true, .offset = FIELD(plugin_dir),
	  .set = set_directory, .show = show_string },
	{ .decl = { .name = "state_dir", .type = TORPOR_CONFIG_STRING,
		    .help = "where the figures of the last cycle are kept; "
			    "not set: the built-in directory" },
	  .optional = true, .offset = FIELD(state_dir),
	  .set = set_directory, .show = show_string },
	{ .decl = { .name = "chunk_pages", .type = TORPOR_CONFIG_INT,
		    .min = 1, .max = IMAGE_MAX_CHUNK_PAGES,
		    .default_value = "32",
		    .help = "pages per chunk" },
	  .offset = FIELD(chunk_pages),
	  .set = set_unsigned, .show = show_unsigned },
	{ .decl = { .name = "image_size", .type = TORPOR_CONFIG_SIZE,
		    .help = "the image size to ask the kernel for; not set: "
			    "the kernel's choice" },
	  .optional = true, .offset = FIELD(image_size),
	  .set = set_image_size, .show = show_image_size },
	{ .decl = { .name = "group", .type = TORPOR_CONFIG_STRING,
		    .help = "a group whose members may ask torpord to "
			    "hibernate, reload, verify and invalidate; not "
			    "set: root only" },
	  .optional = true, .offset = FIELD(group),
	  .set = set_group, .show = show_string },
	{ .decl = { .name = "initramfs", .type = TORPOR_CONFIG_STRING,
		    .default_value = CONFIG_INITRAMFS_AUTO,
		    .help = "the initramfs the next boot loads, checked "
			    "before hibernating: auto (the running kernel's "
			    "in /boot), none (not checked) or a path" },
	  .offset = FIELD(initramfs),
	  .set = set_initramfs, .show = show_string },
	{ .decl = { .name = "hibernate_delay", .type = TORPOR_CONFIG_INT,
		    .min = 0, .max = CONFIG_MAX_HIBERNATE_DELAY,
		    .help = "seconds torpor suspend-then-hibernate stays in "
			    "RAM before it hibernates; not set: systemd's "
			    "HibernateDelaySec=, else 2 hours" },
	  .optional = true, .offset = FIELD(hibernate_delay),
	  .set = set_hibernate_delay, .show = show_hibernate_delay },
};

#define N_CORE_KEYS	(sizeof(core_keys) / sizeof(core_keys[0]))

static const struct core_key *
find_core_key(const char *name)
{
	size_t i;

	for (i = 0; i < N_CORE_KEYS; i++)
		if (strcmp(core_keys[i].decl.name, name) == 0)
			return &core_keys[i];
	return NULL;
}

/* Check and store one value of k; NULL (an optional key): not set. */
static int
set_core_key(struct torpor_config *c, const struct core_key *k,
	     const char *value, char *reason, size_t reason_size)
{
	int r;

	if (k->optional && value && !*value)
		value = NULL;
	if (value) {
		r = config_check_value(&k->decl, value, reason, reason_size);
		if (r < 0)
			return r;
	}
	return k->set(c, k, value, reason, reason_size);
}

/* Apply one [torpor] key; on a bad value write a reason. */
static int
apply_core_key(struct torpor_config *c, const char *key, const char *value,
	       char *reason, size_t reason_size)
{
	const struct core_key *k = find_core_key(key);
	size_t used, i;

	if (k)
		return set_core_key(c, k, value, reason, reason_size);
	used = (size_t)snprintf(reason, reason_size, "unknown key (known: ");
	for (i = 0; i < N_CORE_KEYS; i++)
		append_name(reason, reason_size, &used,
			    i ? ", " : "", core_keys[i].decl.name);
	append_name(reason, reason_size, &used, "", ")");
	return -EINVAL;
}

/* Every key at its declared default; a key without one is not set. */
struct torpor_config *
config_new_default(void)
{
	struct torpor_config *c = calloc(1, sizeof(*c));
	char reason[REASON_MAX];
	size_t i;

	if (!c)
		return NULL;
	for (i = 0; i < N_CORE_KEYS; i++) {
		const struct core_key *k = &core_keys[i];

		if (k->decl.default_value &&
		    set_core_key(c, k, k->decl.default_value, reason,
				 sizeof(reason)) < 0) {
			config_free(c);
			return NULL;
		}
	}
	return c;
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
	char reason[REASON_MAX];
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
	prev = find_entry(st->c, section, key);
	if (prev) {
		fail(st, section, key, "set twice (first on line %u)",
		     prev->line);
		return 0;
	}
	if (add_entry(st->c, section, key, value, st->lineno) < 0)
		goto nomem;
	if (strcmp(section, CONFIG_CORE_SECTION) != 0)
		return 1;	/* checked against its plugin later */
	r = apply_core_key(st->c, key, value, reason, sizeof(reason));
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
		if (*p == ';' && p > s && is_blank(p[-1]))
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
			if (!is_blank(*p)) {
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
read_line(char *buf, int size, void *stream)
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
	while (is_blank(*p))
		p++;
	len = strlen(p);
	while (len > 0 && is_blank(p[len - 1]))
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
	r = ini_parse_stream(read_line, &st, handle_entry, &st);
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

static void
append_key_names(char *buf, size_t size, const struct torpor_plugin *p)
{
	const struct torpor_config_key *k;
	size_t used = 0;

	buf[0] = '\0';
	for (k = p->config_keys; k && k->name; k++)
		append_name(buf, size, &used, ", ", k->name);
}

static bool
section_seen_before(const struct torpor_config *c, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (strcmp(c->entries[j].section, c->entries[i].section) == 0)
			return true;
	return false;
}

static const char *
config_path_of(const struct torpor_config *c)
{
	return c->path ? c->path : "configuration";
}

/* Check entry e against the keys of its plugin p; log a bad one. */
static int
check_plugin_entry(const struct torpor_config *c,
		   const struct config_entry *e, const struct torpor_plugin *p)
{
	const struct torpor_config_key *k = config_find_key(p, e->key);
	const char *path = config_path_of(c);
	char reason[REASON_MAX], names[160];

	if (!k) {
		append_key_names(names, sizeof(names), p);
		if (names[0])
			log_error("%s:%u: [%s] key '%s': not a key of plugin "
				  "'%s' (known: %s)", path, e->line,
				  e->section, e->key, e->section, names);
		else
			log_error("%s:%u: [%s] key '%s': plugin '%s' takes no "
				  "keys", path, e->line, e->section, e->key,
				  e->section);
		return -EINVAL;
	}
	if (config_check_value(k, e->value, reason, sizeof(reason)) < 0) {
		log_error("%s:%u: [%s] key '%s': %s (%s)", path, e->line,
			  e->section, e->key, reason, type_name(k->type));
		return -EINVAL;
	}
	return 0;
}

int
config_check_section(const struct torpor_config *c,
		     const struct torpor_plugin *p)
{
	size_t i;
	int ret = 0;

	if (!c || !p || !p->name)
		return 0;
	for (i = 0; i < c->n_entries; i++)
		if (strcmp(c->entries[i].section, p->name) == 0 &&
		    check_plugin_entry(c, &c->entries[i], p) < 0)
			ret = -EINVAL;
	return ret;
}

static bool
section_has_entries(const struct torpor_config *c, const char *section)
{
	size_t i;

	for (i = 0; i < c->n_entries; i++)
		if (strcmp(c->entries[i].section, section) == 0)
			return true;
	return false;
}

/* A section header naming no plugin, with no key under it (a section with
 * keys is told about at its first key). */
static int
check_empty_sections(const struct torpor_config *c, const struct registry *r)
{
	size_t i, j;
	int ret = 0;

	for (i = 0; i < c->n_sections; i++) {
		const struct config_section *s = &c->sections[i];
		bool seen = false;

		for (j = 0; j < i && !seen; j++)
			seen = strcmp(c->sections[j].name, s->name) == 0;
		if (seen || strcmp(s->name, CONFIG_CORE_SECTION) == 0 ||
		    (r && registry_find(r, s->name)) ||
		    section_has_entries(c, s->name))
			continue;
		log_error("%s:%u: [%s]: no plugin named '%s' is loaded",
			  config_path_of(c), s->line, s->name, s->name);
		ret = -EINVAL;
	}
	return ret;
}

int
config_check_plugins(const struct torpor_config *c, const struct registry *r)
{
	size_t i;
	int ret;

	if (!c)
		return 0;
	ret = check_empty_sections(c, r);
	for (i = 0; i < c->n_entries; i++) {
		const struct config_entry *e = &c->entries[i];
		const struct plugin_entry *p;

		if (strcmp(e->section, CONFIG_CORE_SECTION) == 0)
			continue;
		p = r ? registry_find(r, e->section) : NULL;
		if (!p) {
			/* One message per section, not per key. */
			if (!section_seen_before(c, i))
				log_error("%s:%u: [%s] key '%s': no plugin "
					  "named '%s' is loaded",
					  config_path_of(c), e->line,
					  e->section, e->key, e->section);
			ret = -EINVAL;
			continue;
		}
		if (check_plugin_entry(c, e, &p->ops) < 0)
			ret = -EINVAL;
	}
	return ret;
}

static bool
set_in_file(const struct torpor_config *c, const char *section,
	    const char *key)
{
	return find_entry(c, section, key) != NULL;
}

/*
 * One key of the dump.  Markers go on comment lines of their own so that
 * the output reads back as a configuration file.
 */
static void
dump_key(FILE *f, const char *key, const char *value, bool from_file,
	 const char *help)
{
	if (help)
		fprintf(f, "# %s\n", help);
	if (!value) {
		fprintf(f, "# not set\n#%s =\n", key);
		return;
	}
	if (!from_file)
		fprintf(f, "# default\n");
	fprintf(f, "%s =%s%s\n", key, *value ? " " : "", value);
}

static void
dump_core(const struct torpor_config *c, FILE *f)
{
	char buf[1024];
	size_t i;

	fprintf(f, "[%s]\n", CONFIG_CORE_SECTION);
	for (i = 0; i < N_CORE_KEYS; i++) {
		const struct core_key *k = &core_keys[i];

		dump_key(f, k->decl.name, k->show(c, k, buf, sizeof(buf)),
			 set_in_file(c, CONFIG_CORE_SECTION, k->decl.name),
			 k->decl.help);
	}
}

static void
dump_plugin(const struct torpor_config *c, const struct torpor_plugin *p,
	    FILE *f)
{
	const struct torpor_config_key *k;
	size_t i;

	fprintf(f, "\n[%s]\n", p->name);
	for (k = p->config_keys; k && k->name; k++) {
		const char *v = config_get(c, p->name, k->name);

		dump_key(f, k->name, v ? v : k->default_value, v != NULL,
			 k->help);
	}
	for (i = 0; i < c->n_entries; i++) {
		const struct config_entry *e = &c->entries[i];

		if (strcmp(e->section, p->name) == 0 && !config_find_key(p, e->key))
			fprintf(f, "# not a key of this plugin\n%s = %s\n",
				e->key, e->value);
	}
}

void
config_dump(const struct torpor_config *c, const struct registry *r, FILE *f)
{
	const struct plugin_entry *p;
	size_t i, j;

	if (!c || !f)
		return;
	fprintf(f, "# torpor configuration: %s\n",
		c->path ? c->path : "built-in defaults");
	dump_core(c, f);

	for (p = r ? r->plugins_head : NULL; p; p = p->next_plugin) {
		bool in_file = false;

		if (!p->ops.name)
			continue;
		for (i = 0; i < c->n_entries && !in_file; i++)
			in_file = strcmp(c->entries[i].section, p->ops.name) == 0;
		if (in_file || (p->ops.config_keys && p->ops.config_keys->name))
			dump_plugin(c, &p->ops, f);
	}

	/* Sections of the file that no registered plugin claims. */
	for (i = 0; i < c->n_entries; i++) {
		const struct config_entry *e = &c->entries[i];

		if (strcmp(e->section, CONFIG_CORE_SECTION) == 0 ||
		    section_seen_before(c, i) ||
		    (r && registry_find(r, e->section)))
			continue;
		fprintf(f, "\n[%s]\n", e->section);
		if (r)
			fprintf(f, "# no plugin of this name is loaded\n");
		for (j = i; j < c->n_entries; j++)
			if (strcmp(c->entries[j].section, e->section) == 0)
				fprintf(f, "%s = %s\n", c->entries[j].key,
					c->entries[j].value);
	}
}

int
config_number_of(const struct torpor_config_key *k, const char *value,
		 int64_t *ret)
{
	static const char *const truths[] = { "yes", "true", "1", "on", NULL };
	char reason[REASON_MAX];
	uint64_t size;
	size_t i;

	if (!value)
		return -ENOENT;
	/* Values were checked when the configuration was read; one that
	 * does not fit its declaration never reaches a plugin. */
	if (config_check_value(k, value, reason, sizeof(reason)) < 0)
		return -EINVAL;
	switch (k->type) {
	case TORPOR_CONFIG_INT:
		return parse_i64(value, ret);
	case TORPOR_CONFIG_SIZE:
		if (config_parse_size(value, &size) < 0 || size > INT64_MAX)
			return -ERANGE;
		*ret = (int64_t)size;
		return 0;
	case TORPOR_CONFIG_BOOL:
		*ret = 0;
		for (i = 0; truths[i]; i++)
			if (strcmp(value, truths[i]) == 0)
				*ret = 1;
		return 0;
	case TORPOR_CONFIG_ENUM:
		for (i = 0; k->choices[i]; i++)
			if (strcmp(value, k->choices[i]) == 0)
				break;
		*ret = (int64_t)i;
		return 0;
	default:
		return -EINVAL;
	}
}
