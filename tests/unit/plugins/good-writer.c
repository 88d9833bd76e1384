/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A well-formed writer for the loader tests: every method, no storage. */
#include <errno.h>
#include <string.h>

#include <torpor/plugin.h>

static int
gw_reserve(uint64_t expected_bytes)
{
	return 0;
}

static int
gw_write(const void *buf, size_t len)
{
	return 0;
}

static int
gw_commit(const void *header, size_t len)
{
	return 0;
}

static int
gw_find(void)
{
	return 0;
}

static int
gw_read_header(void *buf, size_t size, size_t *ret_len)
{
	return -ENODATA;
}

static int
gw_read(uint64_t offset, void *buf, size_t len)
{
	return -ENODATA;
}

static int
gw_invalidate(void)
{
	return 0;
}

static int
gw_print_debug_info(char *buf, size_t size)
{
	static const char text[] = "no image";

	if (size == 0)
		return 0;
	strncpy(buf, text, size - 1);
	buf[size - 1] = '\0';
	return (int)strlen(buf);
}

static const struct torpor_writer good_writer = {
	.plugin = {
		.name = "good-writer",
		.description = "test writer that stores nothing",
		.print_debug_info = gw_print_debug_info,
	},
	.reserve = gw_reserve,
	.write = gw_write,
	.commit = gw_commit,
	.find = gw_find,
	.read_header = gw_read_header,
	.read = gw_read,
	.invalidate = gw_invalidate,
};

TORPOR_WRITER_REGISTER(good_writer)
