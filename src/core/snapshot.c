/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The parts of the snapshot interface both sources share: picking a source
 * from its spec, reading the image's first page, and the kernel release.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "snapshot-internal.h"
#include "snapshot.h"

enum torpor_snapshot_kind
snapshot_spec_kind(const char *spec)
{
	if (spec && strncmp(spec, "sim", 3) == 0 &&
	    (spec[3] == '\0' || spec[3] == ':'))
		return TORPOR_SNAPSHOT_SIM;
	return TORPOR_SNAPSHOT_KERNEL;
}

size_t
snapshot_page_size(const char *spec)
{
	long page;

	if (snapshot_spec_kind(spec) == TORPOR_SNAPSHOT_SIM)
		return SIM_PAGE_SIZE;
	page = sysconf(_SC_PAGESIZE);
	return page > 0 ? (size_t)page : 4096;
}

/*
 * Open the source a spec names: a sim spec or an absolute path to a
 * snapshot device.  Failures are logged here, where the reason is known,
 * because every caller just gives up.
 */
int
snapshot_open(const char *spec, enum snapshot_mode mode,
	      struct snapshot **ret)
{
	if (!ret || (mode != SNAPSHOT_MODE_HIBERNATE &&
		     mode != SNAPSHOT_MODE_RESUME))
		return -EINVAL;
	if (!spec || !*spec)
		return log_error_errno(-EINVAL, "no snapshot source given: use " SNAPSHOT_DEFAULT_SPEC " or sim:SIZE[:SEED]");
	if (snapshot_spec_kind(spec) == TORPOR_SNAPSHOT_SIM)
		return snapshot_sim_open(spec, mode, ret);
	if (spec[0] == '/')
		return snapshot_kernel_open(spec, mode, ret);
	return log_error_errno(-EINVAL, "unknown snapshot source '%s': use a device path such as " SNAPSHOT_DEFAULT_SPEC " or sim:SIZE[:SEED]",
			       spec);
}

int
snapshot_apply_prefs(struct snapshot *s, const struct torpor_config *c)
{
	if (!s || !s->ops || !c)
		return -EINVAL;
	if (!c->has_image_size || !s->ops->pref_image_size)
		return 0;
	return s->ops->pref_image_size(s, c->image_size);
}

void
snapshot_close(struct snapshot *s)
{
	if (s && s->ops && s->ops->close)
		s->ops->close(s);
}

static uint64_t
get_u64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint32_t
get_u32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* A utsname field: NUL-terminated within its 65 bytes, printable. */
static bool
uts_field_ok(const uint8_t *p, size_t off, bool need_text)
{
	const uint8_t *f = p + off;
	size_t i;

	for (i = 0; i < SWSUSP_UTS_LEN; i++) {
		if (f[i] == '\0')
			return !need_text || i > 0;
		if (f[i] < 0x20 || f[i] > 0x7e)
			return false;
	}
	return false;
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * x86 kernels put a struct restore_data_record where the utsname would be
 * and zero the rest of it (see snapshot-internal.h).
 */
static bool
is_x86_arch_header(const uint8_t *p)
{
	uint64_t magic = get_u64(p, SWSUSP_X86_OFF_MAGIC);

	return (magic == SWSUSP_X86_MAGIC || magic == SWSUSP_X86_MAGIC_OLD) &&
	       all_zero(p + SWSUSP_X86_RDR_SIZE,
			SWSUSP_UTS_SIZE - SWSUSP_X86_RDR_SIZE);
}

/*
 * Parse the first page of an image (struct swsusp_info as an x86_64
 * kernel lays it out).  -EBADMSG when it cannot be one: no pages, a size
 * that is not pages * page_size, more data pages than pages, or a utsname
 * whose strings are not terminated.  On an x86 kernel the page carries no
 * utsname at all; the release and version are then the running kernel's,
 * which is the only kernel that can have handed out the page.
 */
int
snapshot_parse_info(const void *page, size_t page_size,
		    struct snapshot_info *ret)
{
	const uint8_t *p = page;
	struct snapshot_info info;
	int32_t cpus;

	if (!page || !ret || page_size < SWSUSP_INFO_SIZE)
		return -EINVAL;

	memset(&info, 0, sizeof(info));
	info.version_code = get_u32(p, SWSUSP_OFF_VERSION_CODE);
	info.num_physpages = get_u64(p, SWSUSP_OFF_NUM_PHYSPAGES);
	memcpy(&cpus, p + SWSUSP_OFF_CPUS, sizeof(cpus));
	info.image_pages = get_u64(p, SWSUSP_OFF_IMAGE_PAGES);
	info.pages = get_u64(p, SWSUSP_OFF_PAGES);
	info.size = get_u64(p, SWSUSP_OFF_SIZE);

	if (cpus < 0 || info.pages == 0 || info.image_pages >= info.pages ||
	    info.pages > UINT64_MAX / page_size ||
	    info.size != info.pages * page_size)
		return -EBADMSG;
	info.cpus = (uint32_t)cpus;

	if (is_x86_arch_header(p)) {
		struct utsname u;

		if (uname(&u) < 0)
			return -errno;
		snprintf(info.release, sizeof(info.release), "%s", u.release);
		snprintf(info.version, sizeof(info.version), "%s", u.version);
	} else {
		if (!uts_field_ok(p, SWSUSP_OFF_SYSNAME, true) ||
		    !uts_field_ok(p, SWSUSP_OFF_NODENAME, false) ||
		    !uts_field_ok(p, SWSUSP_OFF_RELEASE, true) ||
		    !uts_field_ok(p, SWSUSP_OFF_VERSION, false) ||
		    !uts_field_ok(p, SWSUSP_OFF_MACHINE, true) ||
		    !uts_field_ok(p, SWSUSP_OFF_DOMAINNAME, false))
			return -EBADMSG;
		memcpy(info.release, p + SWSUSP_OFF_RELEASE, SWSUSP_UTS_LEN);
		memcpy(info.version, p + SWSUSP_OFF_VERSION, SWSUSP_UTS_LEN);
	}
	*ret = info;
	return 0;
}

/*
 * The running kernel's release; a sim honours $TORPOR_SIM_KERNEL_RELEASE
 * so that tests can pretend to run another kernel.  Only s->kind is
 * looked at: callers may pass a probe that was never opened.
 */
int
snapshot_running_release(const struct snapshot *s, char *buf, size_t size)
{
	const char *release = NULL;
	struct utsname u;
	size_t len;

	if (!buf || size == 0)
		return -EINVAL;
	if (s && s->kind == TORPOR_SNAPSHOT_SIM)
		release = getenv("TORPOR_SIM_KERNEL_RELEASE");
	if (release && *release) {
		if (strlen(release) >= SWSUSP_UTS_LEN)
			return -EINVAL;
	} else {
		if (uname(&u) < 0)
			return -errno;
		release = u.release;
	}
	len = strlen(release);
	if (len >= size)
		return -ERANGE;
	memcpy(buf, release, len + 1);
	return 0;
}
