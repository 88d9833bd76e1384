/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz json_parse_object(), the reader of every message torpord gets
 * from any local user.  What parses must write back (through the
 * protocol's writer) into text that parses to the same members.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json.h"
#include "protocol.h"

static void
same_members(const struct json_object *a, const struct json_object *b)
{
	size_t i;

	if (a->n_members != b->n_members)
		abort();
	for (i = 0; i < a->n_members; i++) {
		const struct json_member *x = &a->members[i];
		const struct json_member *y = json_get(b, x->key);

		if (!y || x->type != y->type)
			abort();
		if (x->type == JSON_STRING && strcmp(x->string, y->string) != 0)
			abort();
		if (x->type == JSON_INT && x->integer != y->integer)
			abort();
		if (x->type == JSON_BOOL && x->boolean != y->boolean)
			abort();
	}
}

/* Write o back as text (without the frame's head). */
static char *
write_back(const struct json_object *o, size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	fputc('{', f);
	for (i = 0; i < o->n_members; i++) {
		const struct json_member *m = &o->members[i];

		fputs(i ? ", " : "", f);
		json_write_string(f, m->key);
		fputs(": ", f);
		if (m->type == JSON_STRING)
			json_write_string(f, m->string);
		else if (m->type == JSON_INT)
			fprintf(f, "%lld", (long long)m->integer);
		else if (m->type == JSON_BOOL)
			fputs(m->boolean ? "true" : "false", f);
		else
			fputs("null", f);
	}
	fputc('}', f);
	fclose(f);
	*ret_len = len;
	return text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object o, o2;
	char err[128], *text;
	size_t len;

	if (json_parse_object((const char *)data, size, &o, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	if (o.n_members > JSON_MAX_MEMBERS)
		abort();
	text = write_back(&o, &len);
	if (json_parse_object(text, len, &o2, err, sizeof(err)) < 0)
		abort();
	same_members(&o, &o2);
	json_object_free(&o2);
	json_object_free(&o);
	free(text);
	return 0;
}

size_t
fuzz_seed(unsigned int i, uint8_t *buf, size_t size)
{
	static const char *const seeds[] = {
		"{\"v\": 1, \"request\": \"hibernate\", \"test\": true, \"after\": \"reboot\"}",
		"{\"v\": 1, \"request\": \"status\", \"json\": false}",
		"{\"v\":1,\"type\":\"progress\",\"percent\":40,\"eta_s\":-1,\"x\":null}",
		"{\"s\": \"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\\n\\t/\", \"n\": -9223372036854775808}",
		" { } ",
	};
	size_t n;

	if (i >= sizeof(seeds) / sizeof(seeds[0]))
		return 0;
	n = strlen(seeds[i]);
	if (n > size)
		return 0;
	memcpy(buf, seeds[i], n);
	return n;
}
