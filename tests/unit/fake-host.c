/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake-host.h"

/*
 * A method the ABI gains is appended to struct torpor_host (plugin.h):
 * this fails the build until it has a stand-in below, so that no test host
 * leaves it NULL.
 */
_Static_assert(sizeof(struct torpor_host) ==
	       offsetof(struct torpor_host, resume_location) +
	       sizeof(((struct torpor_host *)0)->resume_location),
	       "struct torpor_host has a method fake-host.c does not know");

__attribute__((noreturn))
static void
unset(const char *method)
{
	fprintf(stderr, "fake host: a plugin called host->%s, which this test "
		"did not set\n", method);
	fflush(stderr);
	abort();
}

__attribute__((format(printf, 3, 4)))
static void
no_log(int level, const char *plugin, const char *fmt, ...)
{
	unset("log");
}

static const char *
no_config_get(const char *section, const char *key)
{
	unset("config_get");
}

static void *
no_secure_alloc(size_t size)
{
	unset("secure_alloc");
}

static void
no_secure_free(void *p, size_t size)
{
	unset("secure_free");
}

static int
no_ask_passphrase(const char *prompt, char *buf, size_t size)
{
	unset("ask_passphrase");
}

static int
no_snapshot_kind(void)
{
	unset("snapshot_kind");
}

static int
no_swap_set_area(uint32_t kernel_dev, uint64_t offset)
{
	unset("swap_set_area");
}

static int64_t
no_swap_avail(void)
{
	unset("swap_avail");
}

static int64_t
no_swap_alloc_page(void)
{
	unset("swap_alloc_page");
}

static int
no_swap_free_pages(void)
{
	unset("swap_free_pages");
}

static uint32_t
no_crc32c(uint32_t crc, const void *buf, size_t len)
{
	unset("crc32c");
}

static int
no_resolve_device(const char *spec, char *buf, size_t size)
{
	unset("resolve_device");
}

static int
no_config_number(const char *section, const char *key, int64_t *ret)
{
	unset("config_number");
}

static int
no_resume_location(char *dev, size_t size, uint64_t *ret_offset)
{
	unset("resume_location");
}

#define TAKE(m) host->m = methods->m ? methods->m : no_##m

const struct torpor_host *
fake_host_init(struct torpor_host *host, const struct torpor_host *methods)
{
	host->struct_size = sizeof(struct torpor_host);
	host->abi_version = TORPOR_PLUGIN_ABI_VERSION;
	TAKE(log);
	TAKE(config_get);
	TAKE(secure_alloc);
	TAKE(secure_free);
	TAKE(ask_passphrase);
	TAKE(snapshot_kind);
	TAKE(swap_set_area);
	TAKE(swap_avail);
	TAKE(swap_alloc_page);
	TAKE(swap_free_pages);
	TAKE(crc32c);
	TAKE(resolve_device);
	TAKE(config_number);
	TAKE(resume_location);
	return host;
}
