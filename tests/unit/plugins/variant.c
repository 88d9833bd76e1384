/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Broken (and borderline) plugins for the loader tests, one per build of
 * this file; meson.build sets what each gets wrong:
 *   V_NAME           the name the struct declares (string)
 *   V_WRITER, V_MISC a writer's or a misc plugin's struct (else a filter's)
 *   V_TYPE           the type it declares (may be invalid)
 *   V_ABI            the ABI version it declares (the loader reads only
 *                    this field, first in every ABI, of an older plugin)
 *   V_SIZE           the struct size it declares
 *   V_NO_ENCODE      a filter without encode()
 *   V_NO_INVALIDATE  a writer without invalidate()
 *   V_LOAD_RESULT    what load() returns
 *   V_NO_ENTRY       no entry point at all
 *   V_NO_BUILT_FOR   no built_for version string
 *   V_KEYS           config keys with a stride wider than the core's
 * The entry point is written out by hand because TORPOR_FILTER_REGISTER()
 * and its siblings would set the version, size and type right.
 */
#include <errno.h>
#include <stdlib.h>
#include <stddef.h>

#include <torpor/plugin.h>

#ifndef V_NAME
#error "V_NAME must name the plugin"
#endif
#if defined(V_WRITER)
#define V_KIND torpor_writer
#define V_KIND_TYPE TORPOR_PLUGIN_WRITER
#elif defined(V_MISC)
#define V_KIND torpor_misc
#define V_KIND_TYPE TORPOR_PLUGIN_MISC
#else
#define V_KIND torpor_filter
#define V_KIND_TYPE TORPOR_PLUGIN_FILTER
#endif
#ifndef V_TYPE
#define V_TYPE V_KIND_TYPE
#endif
#ifndef V_ABI
#define V_ABI TORPOR_PLUGIN_ABI_VERSION
#endif
#ifndef V_SIZE
#define V_SIZE sizeof(struct V_KIND)
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

/* Fails: tests/integration's init-fails is this plugin. */
static int
v_initialise(int starting_cycle)
{
	return -EIO;
}

#if defined(V_WRITER)
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

/* Stands for a method an older plugin would not have. */
static int
v_rewrite_header(const void *header, size_t len)
{
	abort();
}
#elif defined(V_MISC)
/* Lies past an old misc plugin's struct_size: the loader must not copy
 * it. */
static int
v_sleep_event(int event, const char *action)
{
	abort();
}
#else
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
#endif

#ifdef V_KEYS
/* Config keys laid out with a stride larger than the core's struct, as a
 * plugin built against a newer SDK would have them. */
struct v_key {
	struct torpor_config_key k;
	uint64_t newer_field;
};

static const char *const v_choices[] = { "a", "b", NULL };

static const struct v_key v_keys[] = {
	{ { .name = "level", .type = TORPOR_CONFIG_INT, .min = 1, .max = 9,
	    .default_value = "3", .help = "a number" }, 0xdeadbeef },
	{ { .name = "mode", .type = TORPOR_CONFIG_ENUM, .choices = v_choices,
	    .default_value = "b", .help = "a choice" }, 0xdeadbeef },
	{ { .name = NULL }, 0 },
};
#endif

static const struct V_KIND v_plugin = {
	.plugin = {
		.abi_version = V_ABI,
		.struct_size = V_SIZE,
#ifdef V_KEYS
		.config_key_size = sizeof(struct v_key),
		.config_keys = &v_keys[0].k,
#endif
#ifndef V_NO_BUILT_FOR
		.built_for = TORPOR_VERSION_STRING,
#endif
		.name = V_NAME,
		.description = "broken test plugin",
		.type = (enum torpor_plugin_type)V_TYPE,
		.load = v_load,
		.initialise = v_initialise,
	},
#if defined(V_WRITER)
	.reserve = v_reserve,
	.write = v_write,
	.commit = v_commit,
	.find = v_find,
	.read_header = v_read_header,
	.read = v_read,
	.invalidate = V_INVALIDATE,
	/* A method past an old writer's struct_size: never called. */
	.rewrite_header = v_rewrite_header,
#elif defined(V_MISC)
	.sleep_event = v_sleep_event,
#else
	.max_encoded_size = v_max_encoded_size,
	.encode = V_ENCODE,
	.decode = v_code,
#endif
};

#ifdef V_NO_ENTRY
__attribute__((visibility("default")))
const struct torpor_plugin *not_the_entry_point(void);

__attribute__((visibility("default")))
const struct torpor_plugin *
not_the_entry_point(void)
{
	return &v_plugin.plugin;
}
#else
__attribute__((visibility("default")))
const struct torpor_plugin *torpor_plugin_entry(void);

__attribute__((visibility("default")))
const struct torpor_plugin *
torpor_plugin_entry(void)
{
	return &v_plugin.plugin;
}
#endif
