/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one module through which the core calls plugins: absent methods give
 * their documented defaults, required ones are -ENOSYS, and what the ABI
 * promises about results is checked.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "log.h"
#include "plugin-call.h"

static struct plugin_entry bare;

static void
setup(void)
{
	memset(&bare, 0, sizeof(bare));
	bare.ops.name = "bare";
	bare.ops.type = TORPOR_PLUGIN_FILTER;
	/* The failures below are expected: keep the output for real ones. */
	log_set_max_level(TORPOR_LOG_ERR - 1);
}

START_TEST(absent_optional_methods_give_defaults)
{
	uint8_t buf[8] = { 0 };
	void *state = &bare;

	ck_assert_int_eq(plugin_load(&bare, NULL), 0);
	ck_assert_int_eq(plugin_initialise(&bare, 1), 0);
	ck_assert_int_eq(plugin_start_stream(&bare, NULL), 0);
	ck_assert_uint_eq(plugin_memory_needed(&bare), 0);
	ck_assert_uint_eq(plugin_storage_needed(&bare), 0);
	ck_assert_int_eq(plugin_save_config(&bare, buf, sizeof(buf)), 0);
	ck_assert_int_eq(plugin_load_config(&bare, NULL, 0), 0);
	ck_assert_uint_eq(plugin_expected_ratio(&bare), 1000);
	ck_assert_int_eq(plugin_thread_init(&bare, &state), 0);
	ck_assert_ptr_null(state);
	ck_assert_int_eq(plugin_rewrite_header(&bare, buf, 1), 0);
	ck_assert_int_eq(plugin_resume_args(&bare, (char *)buf, sizeof(buf)),
			 -EOPNOTSUPP);
	ck_assert_int_eq(plugin_print_debug_info(&bare, (char *)buf, sizeof(buf)),
			 -EOPNOTSUPP);
	/* No-ops. */
	plugin_cleanup(&bare, 1);
	plugin_thread_free(&bare, NULL);
	plugin_abort(&bare);
	plugin_refused(&bare);
	plugin_unload(&bare);
}
END_TEST

START_TEST(absent_required_methods_are_enosys)
{
	struct torpor_chunk_info info = { .struct_size = sizeof(info) };
	uint8_t buf[8] = { 0 };
	size_t len;

	ck_assert_int_eq(plugin_encode(&bare, NULL, &info, buf, 1, buf, 8, &len),
			 -ENOSYS);
	ck_assert_int_eq(plugin_decode(&bare, NULL, &info, buf, 1, buf, 8, &len),
			 -ENOSYS);
	ck_assert_int_eq(plugin_reserve(&bare, 1), -ENOSYS);
	ck_assert_int_eq(plugin_write(&bare, buf, 1), -ENOSYS);
	ck_assert_int_eq(plugin_commit(&bare, buf, 1), -ENOSYS);
	ck_assert_int_eq(plugin_find(&bare), -ENOSYS);
	ck_assert_int_eq(plugin_read_header(&bare, buf, 8, &len), -ENOSYS);
	ck_assert_int_eq(plugin_read(&bare, 0, buf, 1), -ENOSYS);
	ck_assert_int_eq(plugin_invalidate(&bare), -ENOSYS);
}
END_TEST

/* A saved configuration with nobody to load it: the image is not one
 * this plugin can use. */
START_TEST(saved_config_without_load_config_is_refused)
{
	uint8_t blob[3] = { 1, 2, 3 };

	ck_assert_int_eq(plugin_load_config(&bare, blob, sizeof(blob)), -EBADMSG);
}
END_TEST

static int invalidated;

static int
count_invalidate(void)
{
	invalidated++;
	return 0;
}

static size_t consumed_len;

static int
read_consumed_len(const uint8_t uuid[16], void *buf, size_t size,
		  size_t *ret_len)
{
	(void)uuid, (void)buf, (void)size;
	*ret_len = consumed_len;
	return 0;
}

/* A writer from before consume() and read_consumed(): the resume side
 * invalidates as before, the resumed system has nothing to read back; a
 * header longer than the buffer is refused. */
START_TEST(consume_falls_back_to_invalidate)
{
	static const uint8_t uuid[16] = { 1 };
	uint8_t buf[8];
	size_t len = 0;

	bare.ops.type = TORPOR_PLUGIN_WRITER;
	ck_assert_int_eq(plugin_consume(&bare, uuid), -ENOSYS);
	bare.writer.invalidate = count_invalidate;
	invalidated = 0;
	ck_assert_int_eq(plugin_consume(&bare, uuid), 0);
	ck_assert_int_eq(invalidated, 1);
	ck_assert_int_eq(plugin_read_consumed(&bare, uuid, buf, sizeof(buf), &len),
			 -EOPNOTSUPP);
	bare.writer.read_consumed = read_consumed_len;
	consumed_len = sizeof(buf) + 1;
	ck_assert_int_eq(plugin_read_consumed(&bare, uuid, buf, sizeof(buf), &len),
			 -EMSGSIZE);
	consumed_len = sizeof(buf);
	ck_assert_int_eq(plugin_read_consumed(&bare, uuid, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, sizeof(buf));
}
END_TEST

static size_t produce;

static int
produce_encode(void *st, const struct torpor_chunk_info *info,
	       const uint8_t *in, size_t in_len, uint8_t *out,
	       size_t out_size, size_t *ret_len)
{
	(void)st, (void)info, (void)in, (void)in_len, (void)out, (void)out_size;
	*ret_len = produce;
	return 0;
}

START_TEST(results_are_held_to_their_bounds)
{
	struct torpor_chunk_info info = { .struct_size = sizeof(info) };
	uint8_t buf[16] = { 0 };
	size_t len = 0;

	bare.filter.encode = produce_encode;
	bare.filter.decode = produce_encode;
	produce = 0;
	ck_assert_int_eq(plugin_encode(&bare, NULL, &info, buf, 4, buf, 8, &len), -EIO);
	produce = 9;
	ck_assert_int_eq(plugin_encode(&bare, NULL, &info, buf, 4, buf, 8, &len), -EIO);
	/* A decoder that overflows was fed corrupt data. */
	ck_assert_int_eq(plugin_decode(&bare, NULL, &info, buf, 4, buf, 8, &len), -EBADMSG);
	produce = 8;
	ck_assert_int_eq(plugin_encode(&bare, NULL, &info, buf, 4, buf, 8, &len), 0);
	ck_assert_uint_eq(len, 8);
	ck_assert_int_eq(plugin_decode(&bare, NULL, &info, buf, 4, buf, 8, &len), 0);
}
END_TEST

static int writes;

static int
count_write(const void *buf, size_t len)
{
	(void)buf, (void)len;
	writes++;
	return 0;
}

/* The kinds' structs share their storage in an entry: a method is only
 * ever taken from the struct of the entry's own kind. */
START_TEST(methods_of_another_kind_are_absent)
{
	struct torpor_chunk_info info = { .struct_size = sizeof(info) };
	uint8_t buf[16] = { 0 };
	void *state = &bare;
	size_t len = 0;

	/* A filter's encode() lies where a writer's find() would. */
	bare.filter.encode = produce_encode;
	bare.filter.decode = produce_encode;
	ck_assert_ptr_eq((void *)bare.writer.write, (void *)produce_encode);
	ck_assert_int_eq(plugin_find(&bare), -ENOSYS);
	ck_assert_int_eq(plugin_write(&bare, buf, 1), -ENOSYS);
	ck_assert_int_eq(plugin_commit(&bare, buf, 1), -ENOSYS);
	ck_assert_int_eq(plugin_free_space(&bare, NULL), -EOPNOTSUPP);

	/* And the other way round. */
	memset(&bare.writer, 0, sizeof(bare.writer));
	bare.ops.name = "bare";
	bare.ops.type = TORPOR_PLUGIN_WRITER;
	/* Where a filter's encode() and decode() would lie. */
	bare.writer.write = count_write;
	bare.writer.commit = count_write;
	writes = 0;
	ck_assert_int_eq(plugin_encode(&bare, NULL, &info, buf, 4, buf, 8, &len),
			 -ENOSYS);
	ck_assert_int_eq(plugin_decode(&bare, NULL, &info, buf, 4, buf, 8, &len),
			 -ENOSYS);
	ck_assert_uint_eq(plugin_max_encoded_size(&bare, 4), 0);
	ck_assert_int_eq(plugin_thread_init(&bare, &state), 0);
	ck_assert_ptr_null(state);
	ck_assert_int_eq(writes, 0);
	ck_assert_int_eq(plugin_write(&bare, buf, 1), 0);
	ck_assert_int_eq(writes, 1);
}
END_TEST

static int
save_too_much(uint8_t *buf, size_t size)
{
	(void)buf;
	return (int)size + 1;
}

START_TEST(save_config_stays_in_its_storage)
{
	uint8_t buf[8] = { 0 };

	bare.ops.save_config = save_too_much;
	ck_assert_int_eq(plugin_save_config(&bare, buf, sizeof(buf)), -EOVERFLOW);
}
END_TEST

Suite *plugin_call_suite(void);

Suite *
plugin_call_suite(void)
{
	Suite *s = suite_create("plugin-call");
	TCase *tc = tcase_create("plugin-call");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, absent_optional_methods_give_defaults);
	tcase_add_test(tc, absent_required_methods_are_enosys);
	tcase_add_test(tc, saved_config_without_load_config_is_refused);
	tcase_add_test(tc, results_are_held_to_their_bounds);
	tcase_add_test(tc, save_config_stays_in_its_storage);
	tcase_add_test(tc, consume_falls_back_to_invalidate);
	tcase_add_test(tc, methods_of_another_kind_are_absent);
	suite_add_tcase(s, tc);
	return s;
}
