/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The values of torpor.conf, as text: numbers and sizes, and the check of
 * a value against the type a key declares (the core's keys and every
 * plugin's), with the reason when it does not fit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config-internal.h"

static bool
is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

bool
config_is_blank(char ch)
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
int
config_parse_u64(const char *s, uint64_t *ret)
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

	r = config_parse_u64(negative ? s + 1 : s, &v);
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

bool
config_is_absolute_path(const char *s)
{
	return s[0] == '/';
}

static const char *const path_prefixes[] = {
	"UUID=", "LABEL=", "PARTUUID=", "PARTLABEL=", NULL,
};

const char *
config_type_name(enum torpor_config_type t)
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
void
config_append_name(char *buf, size_t size, size_t *used, const char *sep,
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
		config_append_name(buf, size, &used, ", ", names[i]);
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
int
config_choice_index(const char *const *choices, const char *value)
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

	if (config_choice_index(k->choices, value) >= 0)
		return 0;
	join_names(choices, sizeof(choices), k->choices);
	snprintf(reason, reason_size, "'%s' is not one of: %s", value, choices);
	return -EINVAL;
}

static int
check_path(const char *value, char *reason, size_t reason_size)
{
	size_t i;

	if (config_is_absolute_path(value))
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

int
config_number_of(const struct torpor_config_key *k, const char *value,
		 int64_t *ret)
{
	static const char *const truths[] = { "yes", "true", "1", "on", NULL };
	char reason[CONFIG_REASON_MAX];
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
