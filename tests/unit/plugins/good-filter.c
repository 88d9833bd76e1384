/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A well-formed filter for the loader tests.  It records every method call:
 * as one line each in the file named by TORPOR_TEST_TRACE (when set), so a
 * test can check the order of calls even across unload(), and in memory,
 * shown by print_debug_info().  Encoding is the identity.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <torpor/plugin.h>

static const struct torpor_host *host;
static char calls[256];

static void
record(const char *call)
{
	const char *path = getenv("TORPOR_TEST_TRACE");
	size_t len = strlen(calls);

	snprintf(calls + len, sizeof(calls) - len, "%s%s", len ? "," : "",
		 call);
	if (path) {
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			      0600);

		if (fd >= 0) {
			dprintf(fd, "good-filter %s\n", call);
			close(fd);
		}
	}
}

static int
gf_load(const struct torpor_host *h)
{
	host = h;
	calls[0] = '\0';
	record(h ? "load" : "load(no host)");
	if (h && h->log)
		h->log(TORPOR_LOG_DEBUG, "good-filter", "loaded");
	return 0;
}

static void
gf_unload(void)
{
	record("unload");
	host = NULL;
}

static int
gf_initialise(int starting_cycle)
{
	record(starting_cycle ? "initialise(1)" : "initialise(0)");
	return 0;
}

static void
gf_cleanup(int finishing_cycle)
{
	record(finishing_cycle ? "cleanup(1)" : "cleanup(0)");
}

static size_t
gf_memory_needed(void)
{
	return 100;
}

static size_t
gf_storage_needed(void)
{
	return 8;
}

static int
gf_print_debug_info(char *buf, size_t size)
{
	int n = snprintf(buf, size, "calls=%s", calls);

	if (n < 0)
		return -EIO;
	return (size_t)n >= size ? (int)size - 1 : n;
}

static size_t
gf_max_encoded_size(size_t in_len)
{
	return in_len;
}

static int
gf_copy(void *state, const struct torpor_chunk_info *info,
	const uint8_t *in, size_t in_len, uint8_t *out, size_t out_size,
	size_t *ret_len)
{
	if (in_len > out_size)
		return -ENOBUFS;
	memcpy(out, in, in_len);
	*ret_len = in_len;
	return 0;
}

static const struct torpor_filter good_filter = {
	.plugin = {
		.name = "good-filter",
		.description = "test filter that records its calls",
		.load = gf_load,
		.unload = gf_unload,
		.initialise = gf_initialise,
		.cleanup = gf_cleanup,
		.memory_needed = gf_memory_needed,
		.storage_needed = gf_storage_needed,
		.print_debug_info = gf_print_debug_info,
	},
	.max_encoded_size = gf_max_encoded_size,
	.encode = gf_copy,
	.decode = gf_copy,
};

TORPOR_FILTER_REGISTER(good_filter)
