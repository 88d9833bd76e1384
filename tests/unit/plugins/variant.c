/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Broken (and borderline) plugins for the loader tests, one per build of
 * this file; meson.build sets what each gets wrong:
 *   V_NAME           the name the struct declares (string)
 *   V_TYPE           its type (may be invalid)
 *   V_ABI            the ABI version it declares
 *   V_SIZE           the struct size it declares
 *   V_NO_ENCODE      a filter without encode()
 *   V_NO_INVALIDATE  a writer without invalidate()
 *   V_LOAD_RESULT    what load() returns
 *   V_NO_ENTRY       no entry point at all
 * The entry point is written out by hand because TORPOR_PLUGIN_REGISTER()
 * would set the version and size right.
 */
#include <errno.h>
#include <stddef.h>

#include <torpor/plugin.h>

#ifndef V_NAME
#error "V_NAME must name the plugin"
#endif
#ifndef V_TYPE
#define V_TYPE TORPOR_PLUGIN_FILTER
#endif
#ifndef V_ABI
#define V_ABI TORPOR_PLUGIN_ABI_VERSION
#endif
#ifndef V_SIZE
#define V_SIZE sizeof(struct torpor_plugin)
#endif
#ifdef V_NO_ENCODE
#define V_ENCODE NULL
#else
#define V_ENCODE v_code
#endif
#ifdef V_NO_INVALIDATE
#define V_INVALIDATE NULL
#else
#define V_INVALIDATE v_invalidate
#endif
#ifndef V_LOAD_RESULT
#define V_LOAD_RESULT 0
#endif

static int
v_load(const struct torpor_host *host)
{
	return V_LOAD_RESULT;
}

/* Lies past a short struct_size: the loader must not copy it. */
static int
v_initialise(int starting_cycle)
{
	return -EIO;
}

static size_t
v_max_encoded_size(size_t in_len)
{
	return in_len;
}

static int
v_code(void *state, const struct torpor_chunk_info *info,
       const uint8_t *in, size_t in_len, uint8_t *out, size_t out_size,
       size_t *ret_len)
{
	return -EIO;
}

static int
v_reserve(uint64_t expected_bytes)
{
	return 0;
}

static int
v_write(const void *buf, size_t len)
{
	return 0;
}

static int
v_commit(const void *header, size_t len)
{
	return 0;
}

static int
v_find(void)
{
	return 0;
}

static int
v_read_header(void *buf, size_t size, size_t *ret_len)
{
	return -ENODATA;
}

static int
v_read(uint64_t offset, void *buf, size_t len)
{
	return -ENODATA;
}

/* Left out of the no-invalidate variant. */
static int __attribute__((unused))
v_invalidate(void)
{
	return 0;
}

static const struct torpor_filter_ops v_filter = {
	.max_encoded_size = v_max_encoded_size,
	.encode = V_ENCODE,
	.decode = v_code,
};

static const struct torpor_writer_ops v_writer = {
	.reserve = v_reserve,
	.write = v_write,
	.commit = v_commit,
	.find = v_find,
	.read_header = v_read_header,
	.read = v_read,
	.invalidate = V_INVALIDATE,
};

static const struct torpor_plugin v_plugin = {
	.abi_version = V_ABI,
	.struct_size = V_SIZE,
	.name = V_NAME,
	.description = "broken test plugin",
	.type = (enum torpor_plugin_type)V_TYPE,
	.load = v_load,
	.initialise = v_initialise,
	.filter = V_TYPE == TORPOR_PLUGIN_FILTER ? &v_filter : NULL,
	.writer = V_TYPE == TORPOR_PLUGIN_WRITER ? &v_writer : NULL,
};

#ifdef V_NO_ENTRY
__attribute__((visibility("default")))
const struct torpor_plugin *not_the_entry_point(void);

__attribute__((visibility("default")))
const struct torpor_plugin *
not_the_entry_point(void)
{
	return &v_plugin;
}
#else
__attribute__((visibility("default")))
const struct torpor_plugin *torpor_plugin_entry(void);

__attribute__((visibility("default")))
const struct torpor_plugin *
torpor_plugin_entry(void)
{
	return &v_plugin;
}
#endif
