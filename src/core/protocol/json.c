/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A strict reader of flat JSON objects (json.h).  It reads what the daemon
 * protocol needs and refuses everything else: the text comes from any
 * local user, so no input may make it read past its bounds, recurse, or
 * take more memory than the text's length.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct json_reader {
	const unsigned char *p, *end;
	char *out;		/* next free byte of the store */
	char *err;
	size_t err_size;
};

__attribute__((format(printf, 2, 3)))
static int
refuse(struct json_reader *rd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (rd->err_size)
		vsnprintf(rd->err, rd->err_size, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static void
skip_space(struct json_reader *rd)
{
	while (rd->p < rd->end && (*rd->p == ' ' || *rd->p == '\t' ||
				   *rd->p == '\n' || *rd->p == '\r'))
		rd->p++;
}

static int
expect(struct json_reader *rd, char c)
{
	skip_space(rd);
	if (rd->p >= rd->end || *rd->p != (unsigned char)c)
		return refuse(rd, "expected '%c'", c);
	rd->p++;
	return 0;
}

static int
hex4(struct json_reader *rd, unsigned *ret)
{
	unsigned v = 0;
	int i;

	if (rd->end - rd->p < 4)
		return refuse(rd, "truncated \\u escape");
	for (i = 0; i < 4; i++) {
		unsigned char c = *rd->p++;

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return refuse(rd, "bad \\u escape");
	}
	*ret = v;
	return 0;
}

static void
put_utf8(struct json_reader *rd, unsigned cp)
{
	if (cp < 0x80) {
		*rd->out++ = (char)cp;
	} else if (cp < 0x800) {
		*rd->out++ = (char)(0xc0 | cp >> 6);
		*rd->out++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*rd->out++ = (char)(0xe0 | cp >> 12);
		*rd->out++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*rd->out++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*rd->out++ = (char)(0xf0 | cp >> 18);
		*rd->out++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*rd->out++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*rd->out++ = (char)(0x80 | (cp & 0x3f));
	}
}

/* \uXXXX, with a surrogate pair as one code point; never NUL.  The UTF-8
 * written is never longer than the escape read (6 or 12 bytes). */
static int
unicode_escape(struct json_reader *rd)
{
	unsigned cp, lo;

	if (hex4(rd, &cp) < 0)
		return -EBADMSG;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return refuse(rd, "lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (rd->end - rd->p < 2 || rd->p[0] != '\\' || rd->p[1] != 'u')
			return refuse(rd, "lone high surrogate");
		rd->p += 2;
		if (hex4(rd, &lo) < 0)
			return -EBADMSG;
		if (lo < 0xdc00 || lo > 0xdfff)
			return refuse(rd, "bad surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return refuse(rd, "NUL in a string");
	put_utf8(rd, cp);
	return 0;
}

static int
escape(struct json_reader *rd)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *at;

	if (rd->p >= rd->end)
		return refuse(rd, "unterminated string");
	if (*rd->p == 'u') {
		rd->p++;
		return unicode_escape(rd);
	}
	at = *rd->p ? strchr(from, *rd->p) : NULL;
	if (!at)
		return refuse(rd, "bad escape '\\%c'", *rd->p);
	*rd->out++ = to[at - from];
	rd->p++;
	return 0;
}

/* The length of the valid UTF-8 sequence at p (raw, >= 0x80), or 0. */
static size_t
utf8_length(const unsigned char *p, const unsigned char *end)
{
	unsigned cp, min;
	size_t n, i;

	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2, cp = *p & 0x1f, min = 0x80;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3, cp = *p & 0x0f, min = 0x800;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4, cp = *p & 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A string, decoded into the store; *ret points at it. */
static int
string(struct json_reader *rd, const char **ret)
{
	int r;

	if (expect(rd, '"') < 0)
		return -EBADMSG;
	*ret = rd->out;
	while (rd->p < rd->end && *rd->p != '"') {
		unsigned char c = *rd->p;
		size_t n;

		if (c < 0x20)
			return refuse(rd, "control character in a string");
		if (c == '\\') {
			rd->p++;
			r = escape(rd);
			if (r < 0)
				return r;
			continue;
		}
		n = c < 0x80 ? 1 : utf8_length(rd->p, rd->end);
		if (n == 0)
			return refuse(rd, "invalid UTF-8 in a string");
		memcpy(rd->out, rd->p, n);
		rd->out += n;
		rd->p += n;
	}
	if (rd->p >= rd->end)
		return refuse(rd, "unterminated string");
	rd->p++;
	*rd->out++ = '\0';
	return 0;
}

/* An integer: -?(0|[1-9][0-9]*), within int64_t. */
static int
integer(struct json_reader *rd, int64_t *ret)
{
	bool neg = false;
	uint64_t v = 0, limit;

	if (rd->p < rd->end && *rd->p == '-') {
		neg = true;
		rd->p++;
	}
	if (rd->p >= rd->end || *rd->p < '0' || *rd->p > '9')
		return refuse(rd, "bad number");
	if (*rd->p == '0' && rd->end - rd->p > 1 && rd->p[1] >= '0' &&
	    rd->p[1] <= '9')
		return refuse(rd, "leading zero in a number");
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	while (rd->p < rd->end && *rd->p >= '0' && *rd->p <= '9') {
		unsigned d = *rd->p++ - '0';

		if (v > (limit - d) / 10)
			return refuse(rd, "number out of range");
		v = v * 10 + d;
	}
	if (rd->p < rd->end && (*rd->p == '.' || *rd->p == 'e' || *rd->p == 'E'))
		return refuse(rd, "only integers are accepted");
	*ret = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) :
		     (int64_t)v;
	return 0;
}

static bool
word(struct json_reader *rd, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(rd->end - rd->p) < n || memcmp(rd->p, w, n) != 0)
		return false;
	rd->p += n;
	return true;
}

static int
value(struct json_reader *rd, struct json_member *m)
{
	skip_space(rd);
	if (rd->p >= rd->end)
		return refuse(rd, "missing value");
	if (*rd->p == '"') {
		m->type = JSON_STRING;
		return string(rd, &m->string);
	}
	if (*rd->p == '-' || (*rd->p >= '0' && *rd->p <= '9')) {
		m->type = JSON_INT;
		return integer(rd, &m->integer);
	}
	if (word(rd, "true") || word(rd, "false")) {
		m->type = JSON_BOOL;
		m->boolean = rd->p[-1] == 'e' && rd->p[-4] == 't';
		return 0;
	}
	if (word(rd, "null")) {
		m->type = JSON_NULL;
		return 0;
	}
	if (*rd->p == '{' || *rd->p == '[')
		return refuse(rd, "nested objects and arrays are not accepted");
	return refuse(rd, "bad value");
}

static int
member(struct json_reader *rd, struct json_object *o)
{
	struct json_member *m;
	int r;

	if (o->n_members == JSON_MAX_MEMBERS)
		return refuse(rd, "more than %d members", JSON_MAX_MEMBERS);
	m = &o->members[o->n_members];
	memset(m, 0, sizeof(*m));
	r = string(rd, &m->key);
	if (r < 0)
		return r;
	if (json_get(o, m->key))
		return refuse(rd, "key '%s' given twice", m->key);
	r = expect(rd, ':');
	if (r >= 0)
		r = value(rd, m);
	if (r < 0)
		return r;
	o->n_members++;
	return 0;
}

static int
object(struct json_reader *rd, struct json_object *o)
{
	int r = expect(rd, '{');

	if (r < 0)
		return r;
	skip_space(rd);
	if (rd->p < rd->end && *rd->p == '}') {
		rd->p++;
		return 0;
	}
	for (;;) {
		r = member(rd, o);
		if (r < 0)
			return r;
		skip_space(rd);
		if (rd->p < rd->end && *rd->p == ',') {
			rd->p++;
			skip_space(rd);
			continue;
		}
		return expect(rd, '}');
	}
}

int
json_parse_object(const char *text, size_t len, struct json_object *ret,
		  char *err, size_t err_size)
{
	struct json_object o = { .n_members = 0 };
	struct json_reader rd = {
		.p = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
		.err = err, .err_size = err_size,
	};
	int r;

	if (err_size)
		err[0] = '\0';
	if (len > JSON_MAX_TEXT)
		return refuse(&rd, "longer than %d bytes", JSON_MAX_TEXT);
	/* Decoding never lengthens: the text's size is enough. */
	o.store = malloc(len + 1);
	if (!o.store)
		return -ENOMEM;
	rd.out = o.store;
	r = object(&rd, &o);
	if (r >= 0) {
		skip_space(&rd);
		if (rd.p != rd.end)
			r = refuse(&rd, "text after the object");
	}
	if (r < 0) {
		free(o.store);
		return r;
	}
	*ret = o;
	return 0;
}

void
json_object_free(struct json_object *o)
{
	if (!o)
		return;
	free(o->store);
	o->store = NULL;
	o->n_members = 0;
}

const struct json_member *
json_get(const struct json_object *o, const char *key)
{
	size_t i;

	for (i = 0; i < o->n_members; i++)
		if (strcmp(o->members[i].key, key) == 0)
			return &o->members[i];
	return NULL;
}

const char *
json_get_string(const struct json_object *o, const char *key)
{
	const struct json_member *m = json_get(o, key);

	return m && m->type == JSON_STRING ? m->string : NULL;
}

int64_t
json_get_int(const struct json_object *o, const char *key, int64_t def)
{
	const struct json_member *m = json_get(o, key);

	return m && m->type == JSON_INT ? m->integer : def;
}

bool
json_get_bool(const struct json_object *o, const char *key, bool def)
{
	const struct json_member *m = json_get(o, key);

	return m && m->type == JSON_BOOL ? m->boolean : def;
}

void
json_write_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p ? p + strlen(s) : NULL;

	fputc('"', f);
	for (; p && p < end; p++) {
		unsigned char ch = *p;
		size_t n;

		if (ch >= 0x80) {
			/* What the reader would refuse is replaced. */
			n = utf8_length(p, end);
			if (n == 0)
				fputs("\\ufffd", f);
			else
				fwrite(p, 1, n, f);
			p += n ? n - 1 : 0;
		} else if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}
