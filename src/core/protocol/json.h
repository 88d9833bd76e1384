/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon protocol's JSON (doc/protocol.md): one flat object per
 * message, whose members are strings, integers, booleans or null.  The
 * reader is strict and bounded: anything else is refused with a reason,
 * never guessed at.
 */
#ifndef TORPOR_JSON_H
#define TORPOR_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most members an object may have, and the longest text read. */
#define JSON_MAX_MEMBERS 32
#define JSON_MAX_TEXT (64 * 1024)

enum json_type {
	JSON_NULL,
	JSON_BOOL,
	JSON_INT,
	JSON_STRING,
};

struct json_member {
	const char *key;
	enum json_type type;
	const char *string;	/* JSON_STRING: decoded, NUL-terminated */
	int64_t integer;	/* JSON_INT */
	bool boolean;		/* JSON_BOOL */
};

struct json_object {
	struct json_member members[JSON_MAX_MEMBERS];
	size_t n_members;
	char *store;		/* the decoded keys and strings */
};

/*
 * Parse text (len bytes, no NUL needed) as one object, optionally followed
 * by white space.  Refused (-EBADMSG, with a reason in err): anything
 * longer than JSON_MAX_TEXT, nesting, fractions and exponents, integers
 * outside int64_t, a key given twice, a string holding NUL, invalid UTF-8
 * or escapes, more than JSON_MAX_MEMBERS members.  -ENOMEM.  On success
 * the caller frees ret with json_object_free().
 */
int json_parse_object(const char *text, size_t len, struct json_object *ret,
		      char *err, size_t err_size);

void json_object_free(struct json_object *o);

/* The member named key, or NULL. */
const struct json_member *json_get(const struct json_object *o,
				   const char *key);

/* The string of key, or NULL when missing or of another type. */
const char *json_get_string(const struct json_object *o, const char *key);

/* The integer of key; def when missing or of another type. */
int64_t json_get_int(const struct json_object *o, const char *key,
		     int64_t def);

/* The boolean of key; def when missing or of another type. */
bool json_get_bool(const struct json_object *o, const char *key, bool def);

/* Write s as a JSON string (quoted, escaped) to f. */
void json_write_string(FILE *f, const char *s);

#endif
