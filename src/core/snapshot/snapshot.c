/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The parts of the snapshot interface every source shares: picking a
 * source from its spec, the one-at-a-time entry points, reading the
 * image's first page, and the kernel release.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proc.h"
#include "snapshot-internal.h"
#include "snapshot.h"
#include "sysroot.h"

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
 * One call at a time on the device, from whichever thread: the cycle's
 * thread reads the image while the writer thread writes it, and the swap
 * writer there takes its pages from the device.  Every entry point holds
 * s->lock for the call; the kernel's own lock is then always free when
 * an ioctl tries it.  create_image() holds it across the snapshot: the
 * resumed system returns from it still holding it, as the image
 * recorded, and lets it go.
 */
#define SERIAL(name, type, params, args)				\
	static type							\
	serial_##name params						\
	{								\
		type r;							\
									\
		pthread_mutex_lock(&s->lock);				\
		r = s->dev->name args;					\
		pthread_mutex_unlock(&s->lock);				\
		return r;						\
	}

SERIAL(freeze, int, (struct snapshot *s), (s))
SERIAL(unfreeze, int, (struct snapshot *s), (s))
SERIAL(pref_image_size, int, (struct snapshot *s, uint64_t bytes), (s, bytes))
SERIAL(create_image, int, (struct snapshot *s, int *in_suspend),
       (s, in_suspend))
SERIAL(image_size, int, (struct snapshot *s, uint64_t *ret), (s, ret))
SERIAL(read_page, ssize_t, (struct snapshot *s, void *buf), (s, buf))
SERIAL(write_page, ssize_t, (struct snapshot *s, const void *buf), (s, buf))

/* n pages through the source's batch op, or its one-page op n times. */
static ssize_t
serial_pages(struct snapshot *s, uint8_t *rbuf, const uint8_t *wbuf, size_t n)
{
	const struct snapshot_ops *dev = s->dev;
	ssize_t r = 0, k;
	size_t i;

	pthread_mutex_lock(&s->lock);
	if (rbuf && dev->read_pages)
		r = dev->read_pages(s, rbuf, n);
	else if (wbuf && dev->write_pages)
		r = dev->write_pages(s, wbuf, n);
	else
		for (i = 0; i < n; i++) {
			k = rbuf ? dev->read_page(s, rbuf + i * s->page_size) :
				   dev->write_page(s, wbuf + i * s->page_size);
			if (k <= 0) {
				if (i == 0)
					r = k;
				break;
			}
			r += k;
		}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static ssize_t
serial_read_pages(struct snapshot *s, void *buf, size_t n)
{
	return serial_pages(s, buf, NULL, n);
}

static ssize_t
serial_write_pages(struct snapshot *s, const void *buf, size_t n)
{
	return serial_pages(s, NULL, buf, n);
}

SERIAL(atomic_restore, int, (struct snapshot *s), (s))
SERIAL(free_image, int, (struct snapshot *s), (s))
SERIAL(platform_support, int, (struct snapshot *s, bool on), (s, on))
SERIAL(power_off, int, (struct snapshot *s), (s))
SERIAL(reboot, int, (struct snapshot *s), (s))
SERIAL(suspend_to_ram, int, (struct snapshot *s), (s))

/* Pages taken but not handed out are dropped: the kernel forgets them
 * with the rest (free_swap_pages) or refuses a new area while they are
 * taken (set_swap_area). */
static void
drop_swap_batch(struct snapshot *s)
{
	pthread_mutex_lock(&s->swap_lock);
	s->swap_have = s->swap_next = 0;
	pthread_mutex_unlock(&s->swap_lock);
}

static int
serial_set_swap_area(struct snapshot *s, uint32_t dev, uint64_t offset)
{
	int r;

	drop_swap_batch(s);
	pthread_mutex_lock(&s->lock);
	r = s->dev->set_swap_area(s, dev, offset);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Free bytes, less the pages taken for the batch. */
static int64_t
serial_avail_swap(struct snapshot *s)
{
	int64_t r;

	pthread_mutex_lock(&s->swap_lock);
	pthread_mutex_lock(&s->lock);
	r = s->dev->avail_swap(s);
	pthread_mutex_unlock(&s->lock);
	if (r > 0) {
		r -= (int64_t)(s->swap_have - s->swap_next) * (int64_t)s->page_size;
		if (r < 0)
			r = 0;
	}
	pthread_mutex_unlock(&s->swap_lock);
	return r;
}

/* The next page of the batch; an empty batch is filled first, up to
 * SNAPSHOT_SWAP_BATCH pages or the first error.  The error is returned
 * once no page is left before it. */
static int64_t
serial_alloc_swap_page(struct snapshot *s)
{
	int64_t r = 0;

	pthread_mutex_lock(&s->swap_lock);
	if (s->swap_next == s->swap_have) {
		s->swap_have = s->swap_next = 0;
		pthread_mutex_lock(&s->lock);
		while (s->swap_have < SNAPSHOT_SWAP_BATCH) {
			r = s->dev->alloc_swap_page(s);
			if (r <= 0)
				break;
			s->swap_batch[s->swap_have++] = r;
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (s->swap_next < s->swap_have)
		r = s->swap_batch[s->swap_next++];
	pthread_mutex_unlock(&s->swap_lock);
	return r;
}

static int
serial_free_swap_pages(struct snapshot *s)
{
	int r;

	drop_swap_batch(s);
	pthread_mutex_lock(&s->lock);
	r = s->dev->free_swap_pages(s);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Last, when no other thread is left: the source frees s. */
static void
serial_close(struct snapshot *s)
{
	const struct snapshot_ops *dev = s->dev;

	pthread_mutex_destroy(&s->swap_lock);
	pthread_mutex_destroy(&s->lock);
	dev->close(s);
}

static const struct snapshot_ops serial_ops = {
	.freeze = serial_freeze,
	.unfreeze = serial_unfreeze,
	.pref_image_size = serial_pref_image_size,
	.create_image = serial_create_image,
	.image_size = serial_image_size,
	.read_page = serial_read_page,
	.write_page = serial_write_page,
	.read_pages = serial_read_pages,
	.write_pages = serial_write_pages,
	.atomic_restore = serial_atomic_restore,
	.free_image = serial_free_image,
	.platform_support = serial_platform_support,
	.power_off = serial_power_off,
	.reboot = serial_reboot,
	.suspend_to_ram = serial_suspend_to_ram,
	.set_swap_area = serial_set_swap_area,
	.avail_swap = serial_avail_swap,
	.alloc_swap_page = serial_alloc_swap_page,
	.free_swap_pages = serial_free_swap_pages,
	.close = serial_close,
};

/* Put the source's own ops behind the one-at-a-time ones.  Every source
 * fills in every op, so none is NULL here. */
static int
serialize(struct snapshot *s)
{
	s->dev = s->ops;
	s->swap_have = s->swap_next = 0;
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		return -ENOMEM;
	if (pthread_mutex_init(&s->swap_lock, NULL) != 0) {
		pthread_mutex_destroy(&s->lock);
		return -ENOMEM;
	}
	s->ops = &serial_ops;
	return 0;
}

/* The sources besides the kernel's that this program links. */
#define SNAPSHOT_SOURCES_MAX 4
static const struct snapshot_source *sources[SNAPSHOT_SOURCES_MAX];

void
snapshot_source_add(const struct snapshot_source *src)
{
	size_t i;

	for (i = 0; i < SNAPSHOT_SOURCES_MAX; i++)
		if (!sources[i] || sources[i]->kind == src->kind) {
			sources[i] = src;
			return;
		}
}

static const struct snapshot_source *
source_of(enum torpor_snapshot_kind kind)
{
	size_t i;

	for (i = 0; i < SNAPSHOT_SOURCES_MAX && sources[i]; i++)
		if (sources[i]->kind == kind)
			return sources[i];
	return NULL;
}

/* What a source says in place of this machine's; NULL: this machine's. */
static const char *
source_says(const char *(*what)(void))
{
	const char *v = what ? what() : NULL;

	return v && *v ? v : NULL;
}

const char *
snapshot_root_path(enum torpor_snapshot_kind kind)
{
	const struct snapshot_source *src = source_of(kind);
	const char *p = source_says(src ? src->root_path : NULL);

	return p ? p : "/";
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
	const struct snapshot_source *src;
	struct snapshot *s = NULL;
	int r;

	if (!ret || (mode != SNAPSHOT_MODE_HIBERNATE &&
		     mode != SNAPSHOT_MODE_RESUME))
		return -EINVAL;
	if (!spec || !*spec)
		return log_error_errno(-EINVAL, "no snapshot source given: use " SNAPSHOT_DEFAULT_SPEC " or sim:SIZE[:SEED]");
	if (snapshot_spec_kind(spec) != TORPOR_SNAPSHOT_KERNEL) {
		src = source_of(snapshot_spec_kind(spec));
		if (!src)
			return log_error_errno(-EOPNOTSUPP, "snapshot source '%s' is the simulated snapshot device, which this program is built without: it restores through the kernel's " SNAPSHOT_DEFAULT_SPEC " only (the simulator, for tests and demonstrations, is in torpor, torpord and a build tree's torpor-resume-sim)",
					       spec);
		r = src->open(spec, mode, &s);
	} else if (spec[0] == '/')
		r = snapshot_kernel_open(spec, mode, &s);
	else
		return log_error_errno(-EINVAL, "unknown snapshot source '%s': use a device path such as " SNAPSHOT_DEFAULT_SPEC " or sim:SIZE[:SEED]",
				       spec);
	if (r < 0)
		return r;
	r = serialize(s);
	if (r < 0) {
		s->ops->close(s);
		return log_error_errno(r, "cannot set up the snapshot source's lock: %m");
	}
	*ret = s;
	return 0;
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
		snprintf(info.machine, sizeof(info.machine), "%s",
			 SNAPSHOT_ARCH_HEADER_MACHINE);
		info.arch_header = true;
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
		memcpy(info.machine, p + SWSUSP_OFF_MACHINE, SWSUSP_UTS_LEN);
	}
	*ret = info;
	return 0;
}

int
snapshot_running_release(const struct snapshot *s, char *buf, size_t size)
{
	const struct snapshot_source *src = s ? source_of(s->kind) : NULL;
	const char *release;
	struct utsname u;
	size_t len;

	if (!buf || size == 0)
		return -EINVAL;
	release = source_says(src ? src->kernel_release : NULL);
	if (release) {
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

bool
snapshot_kernel_judges_image(const struct snapshot *s)
{
	const struct snapshot_source *src = s ? source_of(s->kind) : NULL;
	const char *machine = source_says(src ? src->machine : NULL);
	struct utsname u;

	if (!machine && uname(&u) == 0)
		machine = u.machine;
	return machine && strcmp(machine, SNAPSHOT_ARCH_HEADER_MACHINE) == 0;
}

void
snapshot_memory_read(uint64_t image, struct snapshot_memory *ret)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/proc/meminfo",
		 sysroot());
	memset(ret, 0, sizeof(*ret));
	ret->image = image;
	ret->total = proc_meminfo_at(path, "MemTotal");
	ret->available = proc_meminfo_at(path, "MemAvailable");
	ret->free = proc_meminfo_at(path, "MemFree");
	ret->swap_free = proc_meminfo_at(path, "SwapFree");
	/* A kernel without MemAvailable (before 3.14), or a fake /proc
	 * without it: no figures to judge by. */
	ret->known = ret->total != 0 && ret->available != 0;
}

bool
snapshot_memory_short(const struct snapshot_memory *m)
{
	return m->known && m->image > m->available + m->swap_free;
}

void
snapshot_memory_explain(const struct snapshot_memory *m, char *buf,
			size_t size)
{
	double mib = 1048576.0;

	if (!m->known) {
		snprintf(buf, size, "the snapshot needs a free copy of every page it saves (/proc/meminfo gave no figures); what helps: swap space with room, closing programs, or a smaller [torpor] image_size");
		return;
	}
	snprintf(buf, size,
		 "the snapshot needs a free copy of every page it saves: the image is about %.1f MiB, and %.1f MiB is free or could be freed for it (MemAvailable %.1f MiB + SwapFree %.1f MiB; MemFree %.1f MiB of MemTotal %.1f MiB); "
		 "what helps: swap space with room (the kernel moves memory there before the snapshot), closing programs, or a smaller [torpor] image_size (the kernel then frees more before the snapshot: page cache, and with swap the programs' memory)",
		 (double)m->image / mib,
		 (double)(m->available + m->swap_free) / mib,
		 (double)m->available / mib, (double)m->swap_free / mib,
		 (double)m->free / mib, (double)m->total / mib);
}
