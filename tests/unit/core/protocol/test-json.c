/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The JSON reader of torpord's protocol (src/core/json.c) and the
 * protocol's framing (src/core/protocol.c): what is read, and every kind
 * of text that is refused.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "protocol.h"

static int
parse(const char *text, struct json_object *o, char *err, size_t n)
{
	return json_parse_object(text, strlen(text), o, err, n);
}

START_TEST(json_reads_members)
{
	struct json_object o;
	char err[128];

	ck_assert_int_eq(parse("{\"v\": 1, \"request\": \"hibernate\", \"test\": true,"
			       " \"x\": null, \"n\": -42, \"f\": false}",
			       &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.n_members, 6);
	ck_assert_int_eq(json_get_int(&o, "v", 0), 1);
	ck_assert_str_eq(json_get_string(&o, "request"), "hibernate");
	ck_assert(json_get_bool(&o, "test", false));
	ck_assert(!json_get_bool(&o, "f", true));
	ck_assert_int_eq(json_get_int(&o, "n", 0), -42);
	ck_assert_int_eq(json_get(&o, "x")->type, JSON_NULL);
	ck_assert_ptr_null(json_get_string(&o, "v"));
	ck_assert_int_eq(json_get_int(&o, "missing", 7), 7);
	json_object_free(&o);
}
END_TEST

START_TEST(json_decodes_escapes)
{
	struct json_object o;
	char err[128];

	ck_assert_int_eq(parse("{\"s\": \"a\\\"b\\\\c\\/\\n\\u00e9\\ud83d\\ude00\"}",
			       &o, err, sizeof(err)), 0);
	ck_assert_str_eq(json_get_string(&o, "s"),
			 "a\"b\\c/\n\xc3\xa9\xf0\x9f\x98\x80");
	json_object_free(&o);
	ck_assert_int_eq(parse("{\"n\": -9223372036854775808, \"m\": 9223372036854775807}",
			       &o, err, sizeof(err)), 0);
	ck_assert(json_get_int(&o, "n", 0) == INT64_MIN);
	ck_assert(json_get_int(&o, "m", 0) == INT64_MAX);
	json_object_free(&o);
}
END_TEST

static const char *const refused[] = {
	"", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}",
	"{\"a\":1} x", "{\"a\":{}}", "{\"a\":[1]}", "{\"a\":1.5}",
	"{\"a\":1e3}", "{\"a\":01}", "{\"a\":-}", "{\"a\":9223372036854775808}",
	"{\"a\":-9223372036854775809}", "{\"a\":1,\"a\":2}",
	"{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}",
	"{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\t\"}",
	"{\"a\":\"\xc3\"}", "{\"a\":\"\xc0\x80\"}", "{\"a\":\"\xed\xa0\x80\"}",
	"{\"a\":tru}", "{\"a\":nul}", "{a:1}", "{\"a\":\"unterminated}",
};

START_TEST(json_refuses)
{
	struct json_object o;
	char err[128];

	ck_assert_int_eq(parse(refused[_i], &o, err, sizeof(err)), -EBADMSG);
	ck_assert_msg(err[0], "no reason for %s", refused[_i]);
}
END_TEST

START_TEST(json_bounds)
{
	struct json_object o;
	char err[128], *text = malloc(JSON_MAX_TEXT + 2);
	size_t n = 0;
	int i;

	ck_assert_ptr_nonnull(text);
	/* One member too many. */
	n += (size_t)sprintf(text + n, "{");
	for (i = 0; i <= JSON_MAX_MEMBERS; i++)
		n += (size_t)sprintf(text + n, "%s\"k%d\": %d", i ? "," : "", i, i);
	sprintf(text + n, "}");
	ck_assert_int_eq(parse(text, &o, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "members"));
	/* One byte too long, even when it would parse. */
	memset(text, ' ', JSON_MAX_TEXT + 1);
	memcpy(text, "{}", 2);
	ck_assert_int_eq(json_parse_object(text, JSON_MAX_TEXT + 1, &o, err,
					   sizeof(err)), -EBADMSG);
	ck_assert_int_eq(json_parse_object(text, JSON_MAX_TEXT, &o, err,
					   sizeof(err)), 0);
	json_object_free(&o);
	free(text);
}
END_TEST

/* A message framed by the writer reads back through proto_in_read(), in
 * any split; a head that announces too much is refused before the body. */
START_TEST(protocol_frames)
{
	struct proto_in *in = malloc(sizeof(*in));
	struct proto_msg m;
	struct json_object o;
	char err[128];
	uint8_t big[4] = { 0, 1, 0, 1 };	/* 65537 bytes */
	int fds[2];

	ck_assert_ptr_nonnull(in);
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(proto_msg_begin(&m, "result"), 0);
	proto_msg_string(&m, "output", "line\n\"quoted\"");
	proto_msg_int(&m, "exit", 2);
	ck_assert_int_eq(proto_msg_end(&m), 0);
	ck_assert_int_eq(write(fds[1], m.text, 3), 3);
	proto_in_reset(in);
	ck_assert_int_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(proto_in_read(in, fds[0]), 0);
	ck_assert_int_eq(write(fds[1], m.text + 3, m.len - 3), (ssize_t)(m.len - 3));
	ck_assert_int_eq(proto_in_read(in, fds[0]), 1);
	ck_assert_int_eq(json_parse_object(in->buf, in->len, &o, err, sizeof(err)), 0);
	ck_assert_str_eq(json_get_string(&o, "type"), "result");
	ck_assert_str_eq(json_get_string(&o, "output"), "line\n\"quoted\"");
	ck_assert_int_eq(json_get_int(&o, "exit", 0), 2);
	json_object_free(&o);
	proto_msg_free(&m);
	proto_in_reset(in);
	ck_assert_int_eq(write(fds[1], big, 4), 4);
	ck_assert_int_eq(proto_in_read(in, fds[0]), -EMSGSIZE);
	proto_in_reset(in);
	ck_assert_int_eq(write(fds[1], big, 2), 2);
	close(fds[1]);
	ck_assert_int_eq(proto_in_read(in, fds[0]), -ECONNRESET);
	close(fds[0]);
	free(in);
}
END_TEST

Suite *json_suite(void);

Suite *
json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, json_reads_members);
	tcase_add_test(tc, json_decodes_escapes);
	tcase_add_loop_test(tc, json_refuses, 0,
			    sizeof(refused) / sizeof(refused[0]));
	tcase_add_test(tc, json_bounds);
	tcase_add_test(tc, protocol_frames);
	suite_add_tcase(s, tc);
	return s;
}
