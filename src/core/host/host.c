/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gcrypt.h>

#include "crc32c.h"
#include "device-names.h"
#include "host.h"
#include "log.h"
#include "passphrase.h"

static const struct torpor_config *host_config;
static const struct registry *host_registry;
static enum torpor_snapshot_kind host_kind = TORPOR_SNAPSHOT_KERNEL;
static struct snapshot *host_snapshot;
static const char *host_resume, *host_resume_offset;

int
host_init_crypto(void)
{
	static int done;

	if (done)
		return 0;
	if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
		if (!gcry_check_version(GCRYPT_VERSION))
			return log_error_errno(-ENOTSUP,
				"libgcrypt is older than the %s torpor was built with",
				GCRYPT_VERSION);
		/* Secure memory is locked; without root the lock fails and
		 * libgcrypt falls back to ordinary memory, which is what a
		 * user's simulated run gets. */
		gcry_control(GCRYCTL_SUSPEND_SECMEM_WARN);
		gcry_control(GCRYCTL_INIT_SECMEM, 256 * 1024, 0);
		gcry_control(GCRYCTL_DISABLE_SECMEM_WARN);
		gcry_control(GCRYCTL_RESUME_SECMEM_WARN);
		gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	}
	done = 1;
	return 0;
}

void
host_set_config(const struct torpor_config *c)
{
	host_config = c;
}

void
host_set_registry(const struct registry *r)
{
	host_registry = r;
}

void
host_set_snapshot_kind(enum torpor_snapshot_kind kind)
{
	host_kind = kind;
}

void
host_set_snapshot(struct snapshot *s)
{
	host_snapshot = s;
	if (s)
		host_kind = s->kind;
}

void
host_set_resume_location(const char *resume, const char *resume_offset)
{
	host_resume = resume;
	host_resume_offset = resume_offset;
}

enum torpor_snapshot_kind
host_kind_of_spec(const char *spec)
{
	return snapshot_spec_kind(spec);
}

static void
host_log(int level, const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_fullv(level, plugin, fmt, ap);
	va_end(ap);
}

static const char *
host_config_get(const char *section, const char *key)
{
	struct plugin_entry *e;

	if (!section || !key)
		return NULL;
	if (strcmp(section, "torpor") == 0)
		return host_config ? config_get(host_config, section, key) : NULL;
	e = host_registry ? registry_find(host_registry, section) : NULL;
	if (e)
		return config_get_for(host_config, &e->ops, key);
	return host_config ? config_get(host_config, section, key) : NULL;
}

static void *
host_secure_alloc(size_t size)
{
	host_init_crypto();
	return gcry_calloc_secure(1, size);
}

static void
host_secure_free(void *p, size_t size)
{
	if (!p)
		return;
	/* libgcrypt wipes its secure pool on free, but the pointer may have
	 * come from the fallback pool when locking failed. */
	explicit_bzero(p, size);
	gcry_free(p);
}

static int
host_ask_passphrase(const char *prompt, char *buf, size_t size)
{
	return passphrase_ask(prompt, buf, size);
}

static int
host_snapshot_kind(void)
{
	return host_kind;
}

static int
host_swap_set_area(uint32_t dev, uint64_t offset)
{
	if (!host_snapshot)
		return -ENODEV;
	return host_snapshot->ops->set_swap_area(host_snapshot, dev, offset);
}

static int64_t
host_swap_avail(void)
{
	if (!host_snapshot)
		return -ENODEV;
	return host_snapshot->ops->avail_swap(host_snapshot);
}

static int64_t
host_swap_alloc_page(void)
{
	if (!host_snapshot)
		return -ENODEV;
	return host_snapshot->ops->alloc_swap_page(host_snapshot);
}

static int
host_swap_free_pages(void)
{
	if (!host_snapshot)
		return -ENODEV;
	return host_snapshot->ops->free_swap_pages(host_snapshot);
}

static int
host_config_number(const char *section, const char *key, int64_t *ret)
{
	const struct plugin_entry *e;
	const struct torpor_config_key *k;

	if (!section || !key || !ret)
		return -EINVAL;
	e = host_registry ? registry_find(host_registry, section) : NULL;
	k = e ? config_find_key(&e->ops, key) : NULL;
	if (!k)
		return -EINVAL;
	return config_number_of(k, host_config_get(section, key), ret);
}

static int
host_resolve_device(const char *spec, char *buf, size_t size)
{
	if (!spec || !buf)
		return -EINVAL;
	return bd_resolve(spec, buf, size);
}

static int
host_resume_location(char *dev, size_t size, uint64_t *ret_offset)
{
	uint64_t pages = 0;
	char *end;
	int r;

	if (!host_resume || !*host_resume)
		return 0;
	if (host_resume_offset && *host_resume_offset) {
		errno = 0;
		pages = strtoull(host_resume_offset, &end, 10);
		if (errno || *end || end == host_resume_offset ||
		    pages > UINT64_MAX / (uint64_t)sysconf(_SC_PAGESIZE)) {
			log_error("resume_offset=%s is not a page number",
				  host_resume_offset);
			return -EINVAL;
		}
	}
	r = bd_resolve(host_resume, dev, size);
	if (r < 0)
		return log_error_errno(r, "cannot find resume=%s: %s", host_resume,
				       r == -ENODEV ? "no such device" : strerror(-r));
	*ret_offset = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	return 1;
}

static const struct torpor_host host = {
	.struct_size = sizeof(struct torpor_host),
	.abi_version = TORPOR_PLUGIN_ABI_VERSION,
	.log = host_log,
	.config_get = host_config_get,
	.secure_alloc = host_secure_alloc,
	.secure_free = host_secure_free,
	.ask_passphrase = host_ask_passphrase,
	.snapshot_kind = host_snapshot_kind,
	.swap_set_area = host_swap_set_area,
	.swap_avail = host_swap_avail,
	.swap_alloc_page = host_swap_alloc_page,
	.swap_free_pages = host_swap_free_pages,
	.crc32c = crc32c,
	.resolve_device = host_resolve_device,
	.config_number = host_config_number,
	.resume_location = host_resume_location,
};

const struct torpor_host *
host_get(void)
{
	return &host;
}
