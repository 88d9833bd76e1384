/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulated snapshot device.  It hands out the simulator's memory
 * image ("sim:SIZE[:SEED]", made by sim-pages.c) and at resume takes
 * pages back the way /dev/snapshot does, comparing each one with the
 * image it regenerates; it models the kernel's lock, its checks of the
 * header page and its swap bookkeeping.  It needs no privileges, so the
 * demo, the tests and the benchmarks run on it.  A library of its own
 * (meson.build): torpor-resume, which goes into every initramfs, does not
 * link it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torpor/plugin-util.h>

#include "blockdev.h"
#include "log.h"
#include "sim-pages.h"
#include "snapshot-internal.h"
#include "snapshot-sim.h"
#include "snapshot.h"
#include "test-hook.h"

/* The kernel's swap bookkeeping for the area SNAPSHOT_SET_SWAP_AREA
 * named: pages 1..last_page of a swap partition, bad ones skipped. */
struct sim_swap {
	bool set;
	uint32_t last_page;
	uint32_t nr_bad;
	uint32_t *bad;
	uint64_t next;		/* the next page to hand out */
	uint64_t taken;		/* pages handed out */
};

struct sim_snapshot {
	struct snapshot s;	/* first: the ops get a struct snapshot * */
	/*
	 * The kernel's system_transition_mutex as /dev/snapshot takes it
	 * (kernel/power/user.c): read() and write() wait for it, every
	 * ioctl only tries it and fails with EBUSY while another thread of
	 * the caller is inside read() or write().  A caller that talks to
	 * the device from two threads at once sees the kernel's error here.
	 */
	pthread_mutex_t transition;
	struct sim_swap swap;
	uint64_t size, seed, pages;
	bool named;		/* the spec gave SIZE (and SEED) */
	uint64_t pref_image_size;	/* as handed over; 0: none */
	/* The simulated kernel: its release, machine and memory map. */
	char release[SWSUSP_UTS_LEN];
	char machine[SWSUSP_UTS_LEN];
	char memory_map[SIM_MEMORY_MAP_SIZE];
	/* The header page's: the running kernel's at hibernation, at resume
	 * the image's once its header page came (page 0 is made of them). */
	char img_release[SWSUSP_UTS_LEN];
	char img_machine[SWSUSP_UTS_LEN];
	char img_memory_map[SIM_MEMORY_MAP_SIZE];
	uint32_t img_version_code;

	bool frozen;
	/* hibernate */
	bool ready;		/* an image was created and not freed */
	bool resumed;		/* powered off: the next create_image is the
				 * one that returns in the "resumed" system */
	const char *after;	/* how the cycle left: "poweroff", "reboot",
				 * "suspend" (NULL: not yet) */
	uint64_t next_read;
	/* resume */
	bool header_seen;
	bool judged;		/* the header passed the kernel's check */
	bool refused;		/* a page was refused: take no more */
	bool mismatch;
	uint64_t mismatch_page;
	uint64_t next_write;

	struct sim_pages pages_of;	/* the image's data pages */
	uint8_t *scratch;	/* one page */
	/* Pages batch_first.. of the premade image (snapshot_sim_premake()),
	 * batch_pages of them. */
	uint8_t *batch;
	uint64_t batch_first, batch_pages;
	uint64_t premade_served;	/* pages taken from it */
};

static const struct snapshot_ops sim_ops;

static struct sim_snapshot *
to_sim(struct snapshot *s)
{
	return (struct sim_snapshot *)s;
}

/* An ioctl's way in: the lock if it is free, else the kernel's EBUSY. */
static int
ioctl_enter(struct snapshot *s)
{
	return pthread_mutex_trylock(&to_sim(s)->transition) == 0 ? 0 : -EBUSY;
}

/* read(), write() and close() wait for the lock. */
static void
io_enter(struct snapshot *s)
{
	pthread_mutex_lock(&to_sim(s)->transition);
}

static void
leave(struct snapshot *s)
{
	pthread_mutex_unlock(&to_sim(s)->transition);
}

/* Page `page` of this image into buf. */
static void
sim_fill(struct sim_snapshot *m, uint64_t page, void *buf)
{
	if (page == 0) {
		sim_generate_header(m->seed, m->size, m->img_release, buf);
		sim_header_set_arch(buf, m->img_machine, m->img_memory_map);
		return;
	}
	sim_pages_fill(&m->pages_of, page, buf);
}

/*
 * torpor bench's premade image: pages 1.. of one image (size, seed), made
 * once by the generator into a memfd before the bench forks the processes
 * it measures.  A sim of that image then hands those pages out and
 * compares with them at memory speed, and the bench measures torpor more
 * than the generator.  The pages are the generator's, byte for byte.
 */
static struct {
	int fd;
	uint64_t size, seed;
} premade = { .fd = -1 };

/* Premade pages come in by pread() this many at a time. */
#define PREMADE_BATCH	16

/* Page `page` of the premade image, or NULL: not premade, not this image,
 * or it could not be read (the generator makes it then).  The pages come
 * by pread() into a small buffer: the memfd's pages never join this
 * process's resident set, so the RSS the bench reports is torpor's. */
static const uint8_t *
premade_page(struct sim_snapshot *m, uint64_t page)
{
	uint64_t n;

	if (premade.fd < 0 || page == 0 || page >= m->pages ||
	    m->size != premade.size || m->seed != premade.seed)
		return NULL;
	if (m->batch_pages && page >= m->batch_first &&
	    page < m->batch_first + m->batch_pages)
		return m->batch + (page - m->batch_first) * SIM_PAGE_SIZE;
	if (!m->batch) {
		m->batch = malloc((size_t)PREMADE_BATCH * SIM_PAGE_SIZE);
		if (!m->batch)
			return NULL;
	}
	n = m->pages - page < PREMADE_BATCH ? m->pages - page : PREMADE_BATCH;
	if (pread(premade.fd, m->batch, n * SIM_PAGE_SIZE,
		  (off_t)(page * SIM_PAGE_SIZE)) != (ssize_t)(n * SIM_PAGE_SIZE)) {
		m->batch_pages = 0;
		return NULL;
	}
	m->batch_first = page;
	m->batch_pages = n;
	return m->batch;
}

/* Page `page` of this image: the premade one, or made into buf. */
static const uint8_t *
sim_page(struct sim_snapshot *m, uint64_t page, uint8_t *buf)
{
	const uint8_t *p = premade_page(m, page);

	if (p) {
		m->premade_served++;
		return p;
	}
	sim_fill(m, page, buf);
	return buf;
}

int
snapshot_sim_premake(uint64_t size, uint64_t seed)
{
	struct sim_pages g;
	uint8_t *map;
	int fd, r = 0;

	if (size == 0 || size % SIM_PAGE_SIZE != 0)
		return -EINVAL;
	snapshot_sim_premade_drop();
	fd = memfd_create("torpor-sim-pages", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		r = -errno;
		goto fail;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	/* Reserve the pages first: a store into one the memory cannot
	 * give would be a SIGBUS. */
	r = fallocate(fd, 0, 0, (off_t)size) < 0 ? -errno : 0;
	sim_pages_init(&g, seed);
	for (uint64_t p = 1; r == 0 && p < size / SIM_PAGE_SIZE; p++) {
		sim_pages_fill(&g, p, map + p * SIM_PAGE_SIZE);
		if (p % 256 == 255)
			madvise(map + (p - 255) * SIM_PAGE_SIZE,
				256 * SIM_PAGE_SIZE, MADV_DONTNEED);
	}
	sim_pages_release(&g);
	munmap(map, size);
	if (r < 0)
		goto fail;
	premade.fd = fd;
	premade.size = size;
	premade.seed = seed;
	return 0;
fail:
	close(fd);
	return r;
}

void
snapshot_sim_premade_drop(void)
{
	if (premade.fd >= 0)
		close(premade.fd);
	premade.fd = -1;
}

static int
do_freeze(struct snapshot *s)
{
	to_sim(s)->frozen = true;
	return 0;
}

/* Like the kernel: thawing with an image in memory is a no-op. */
static int
do_unfreeze(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	if (!m->ready)
		m->frozen = false;
	return 0;
}

/* Recorded only: the simulated image has the size its spec names. */
static int
do_pref_image_size(struct snapshot *s, uint64_t bytes)
{
	to_sim(s)->pref_image_size = bytes;
	return 0;
}

/*
 * The kernel refuses CREATE_IMAGE unless it is the hibernate side, tasks
 * are frozen and no image exists yet; after power_off() the call
 * "returns again" in the resumed system, with in_suspend = 0.
 */
static int
do_create_image(struct snapshot *s, int *in_suspend)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE || !m->frozen)
		return -EPERM;
	if (m->resumed) {
		m->resumed = false;
		m->ready = true;
		*in_suspend = 0;
		return 0;
	}
	if (m->ready)
		return -EPERM;
	/* As the kernel's: the copy must fit.  Only with a test's fake
	 * /proc: the sim's pages take no memory of this machine. */
	if (test_hook_path("TORPOR_TEST_SYSROOT", "")[0]) {
		struct snapshot_memory mem;

		snapshot_memory_read(m->size, &mem);
		if (snapshot_memory_short(&mem))
			return -ENOMEM;
	}
	m->ready = true;
	m->next_read = 0;
	*in_suspend = 1;
	return 0;
}

static int
do_image_size(struct snapshot *s, uint64_t *ret)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE || !m->ready)
		return -ENODATA;
	*ret = m->size;
	return 0;
}

static ssize_t
do_read_page(struct snapshot *s, void *buf)
{
	struct sim_snapshot *m = to_sim(s);
	const uint8_t *p;

	if (s->mode != SNAPSHOT_MODE_HIBERNATE)
		return -EBADF;
	if (!m->ready)
		return -ENODATA;
	if (m->next_read >= m->pages)
		return 0;
	p = sim_page(m, m->next_read++, buf);
	if (p != buf)
		memcpy(buf, p, SIM_PAGE_SIZE);
	return SIM_PAGE_SIZE;
}

static void
remember_mismatch(struct sim_snapshot *m, uint64_t page)
{
	if (m->mismatch)
		return;
	m->mismatch = true;
	m->mismatch_page = page;
	log_error("page %" PRIu64 " differs from the simulated image", page);
}

/*
 * The header tells the resume side which image to expect.  Refusals are
 * -EPERM with the kernel's "Image mismatch" wording where it has one.
 */
static int
sim_take_header(struct sim_snapshot *m, const uint8_t *p)
{
	struct snapshot_info info;
	uint64_t seed, size;
	uint32_t format, page_size;

	if (snapshot_parse_info(p, SIM_PAGE_SIZE, &info) < 0 ||
	    memcmp(p + SIM_OFF_TRAILER, SIM_MAGIC, sizeof(SIM_MAGIC)) != 0) {
		log_error("the first page is not the header of a simulated image; refusing it");
		return -EPERM;
	}
	memcpy(&format, p + SIM_OFF_FORMAT, sizeof(format));
	memcpy(&page_size, p + SIM_OFF_PAGE_SIZE, sizeof(page_size));
	memcpy(&seed, p + SIM_OFF_SEED, sizeof(seed));
	memcpy(&size, p + SIM_OFF_BYTES, sizeof(size));
	if (format != SIM_FORMAT_VERSION || page_size != SIM_PAGE_SIZE ||
	    size != info.size || info.pages != size / SIM_PAGE_SIZE) {
		log_error("Image mismatch: unknown simulated image format %" PRIu32 " (page size %" PRIu32 ")",
			  format, page_size);
		return -EPERM;
	}
	if (m->named && (size != m->size || seed != m->seed)) {
		log_error("Image mismatch: the image is sim:%" PRIu64 ":%" PRIu64 ", this device is sim:%" PRIu64 ":%" PRIu64,
			  size, seed, m->size, m->seed);
		return -EPERM;
	}
	memcpy(m->img_release, info.release, sizeof(m->img_release));
	memcpy(m->img_machine, info.machine, sizeof(m->img_machine));
	memset(m->img_memory_map, 0, sizeof(m->img_memory_map));
	memcpy(m->img_memory_map, p + SIM_OFF_MEMORY_MAP,
	       SIM_MEMORY_MAP_SIZE - 1);
	m->img_version_code = info.version_code;
	m->size = size;
	m->seed = seed;
	m->pages = info.pages;
	/* The seed of "sim" alone at resume is known from the header. */
	sim_pages_release(&m->pages_of);
	sim_pages_init(&m->pages_of, seed);
	m->header_seen = true;
	return 0;
}

/* A refusal of the header, in the kernel's words: what its log would
 * say (refusal_said()), x86's own line first when there is one. */
static int
sim_refuse_header(struct sim_snapshot *m, const char *arch_line,
		  const char *reason)
{
	snprintf(m->s.refusal_said, sizeof(m->s.refusal_said),
		 "%s%s%s\"PM: hibernation: Image mismatch: %s\"",
		 arch_line ? "\"" : "", arch_line ? arch_line : "",
		 arch_line ? "\"; " : "", reason);
	log_debug("sim kernel: %s", m->s.refusal_said);
	return -EPERM;
}

/*
 * The kernel's check of the header page (load_header()), made as the
 * kernel makes it when it is asked for the next page.  An x86-64 kernel
 * (CONFIG_ARCH_HIBERNATION_HEADER) checks its architecture header: the
 * magic (here: an image of an x86_64 kernel) and the digest of the
 * firmware memory map (here: its name), not the release.  Any other
 * compares the kernel (check_image_kernel()).  Either refuses with
 * -EPERM.  The memory size check that follows is not simulated.
 */
static int
sim_judge_header(struct sim_snapshot *m)
{
	if (!strcmp(m->machine, SNAPSHOT_ARCH_HEADER_MACHINE)) {
		if (strcmp(m->img_machine, SNAPSHOT_ARCH_HEADER_MACHINE) != 0)
			return sim_refuse_header(m, "Unrecognized hibernate image header format!",
						 "architecture specific data");
		if (strncmp(m->img_memory_map, m->memory_map,
			    SIM_MEMORY_MAP_SIZE) != 0)
			return sim_refuse_header(m, "Hibernate inconsistent memory map detected!",
						 "architecture specific data");
		return 0;
	}
	if (m->img_version_code != sim_version_code(m->release))
		return sim_refuse_header(m, NULL, "kernel version");
	if (strcmp(m->img_release, m->release) != 0)
		return sim_refuse_header(m, NULL, "kernel release");
	if (strcmp(m->img_machine, m->machine) != 0)
		return sim_refuse_header(m, NULL, "machine");
	return 0;
}

/*
 * Pages come back in order; each is compared with the page regenerated
 * from (seed, number).  Like write() on /dev/snapshot: the page size when
 * the page was taken, 0 once the image is complete, -EPERM when it was
 * refused (and for every page after that).
 */
static ssize_t
do_write_page(struct snapshot *s, const void *buf)
{
	struct sim_snapshot *m = to_sim(s);
	uint64_t page = m->next_write;
	int r;

	if (s->mode != SNAPSHOT_MODE_RESUME)
		return -EBADF;
	if (m->refused)
		return -EPERM;
	if (m->header_seen && page >= m->pages)
		return 0;
	if (page == 0) {
		r = sim_take_header(m, buf);
		if (r < 0) {
			m->refused = true;
			return r;
		}
	}
	if (page == 1 && !m->judged) {
		r = sim_judge_header(m);
		if (r < 0) {
			m->refused = true;
			return r;
		}
		m->judged = true;
	}
	if (memcmp(buf, sim_page(m, page, m->scratch), SIM_PAGE_SIZE) != 0) {
		remember_mismatch(m, page);
		m->refused = true;
		return -EPERM;
	}
	m->next_write++;
	s->pages_written++;
	s->pages_verified++;
	return SIM_PAGE_SIZE;
}

static int
do_atomic_restore(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_RESUME)
		return -EPERM;
	if (!m->frozen) {
		log_error("refusing to restore: tasks are not frozen");
		return -EPERM;
	}
	if (m->mismatch) {
		log_error("refusing to restore: page %" PRIu64 " differs from the simulated image",
			  m->mismatch_page);
		return -EPERM;
	}
	if (!m->header_seen) {
		log_error("refusing to restore: the image is incomplete (no valid header page was handed back)");
		return -EPERM;
	}
	if (s->pages_verified < m->pages) {
		log_error("refusing to restore: the image is incomplete, %" PRIu64 " of %" PRIu64 " pages missing",
			  m->pages - s->pages_verified, m->pages);
		return -EPERM;
	}
	s->restored = true;
	return 0;
}

static int
do_free_image(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	m->ready = false;
	m->next_read = 0;
	return 0;
}

static int
do_platform_support(struct snapshot *s, bool on)
{
	return 0;
}

/*
 * The tests' next boot: TORPOR_SIM_NEXT_BOOT, when set, is a shell command
 * run while the simulated machine is "off", before the cycle returns as
 * resumed: a torpor-resume there consumes the image as at a real boot,
 * and the cycle then reads back what it left.  (The hibernating process
 * keeps the writer's device open meanwhile: exclusive opens make that a
 * test for files and shared devices.)
 */
static void
sim_next_boot(void)
{
	const char *cmd = getenv(SIM_NEXT_BOOT_ENV);
	int status = 0;
	pid_t pid;

	if (!cmd || !*cmd)
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		log_warning_errno(-errno, "sim: the next boot could not run: %m");
		return;
	}
	log_notice("sim: next boot done (exit %d)",
		   WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

/* Nothing to switch off or restart: the image now counts as resumed,
 * and the way out is recorded (and said, for the tests). */
static int
sim_leave(struct snapshot *s, const char *how)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE)
		return -EPERM;
	m->resumed = true;
	m->ready = false;
	m->after = how;
	log_notice("sim: %s", how);
	sim_next_boot();
	return 0;
}

static int
do_power_off(struct snapshot *s)
{
	return sim_leave(s, "poweroff");
}

static int
do_reboot(struct snapshot *s)
{
	return sim_leave(s, "reboot");
}

/* Suspend to RAM and wake up at once: the image was not used. */
static int
do_suspend_to_ram(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE || !m->ready)
		return -EPERM;
	m->ready = false;
	m->after = "suspend";
	log_notice("sim: suspend to RAM, woke up");
	return 0;
}

/* 1 when the block device d is active swap (/proc/swaps), 0 when not,
 * -errno when that cannot be told. */
static int
swap_active(dev_t d)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[PATH_MAX + 128], name[PATH_MAX];
	struct stat st;
	int r = 0;

	if (!f)
		return -errno;
	while (r == 0 && fgets(line, sizeof(line), f))
		r = sscanf(line, "%4095s", name) == 1 &&
		    stat(name, &st) == 0 && S_ISBLK(st.st_mode) &&
		    st.st_rdev == d;
	fclose(f);
	return r;
}

/*
 * SNAPSHOT_SET_SWAP_AREA.  The kernel takes an active swap area; the sim
 * takes an inactive swap partition (its header at offset 0 of the device
 * with that number) and refuses an active one (-EBUSY): the running
 * kernel hands its pages to others, and only it knows which are free.  A
 * swap file's pages lie where its filesystem put them, which the sim
 * cannot see: -EOPNOTSUPP, the area is left to the writer (who takes an
 * inactive one's pages itself).  Like the kernel: -EPERM once pages were
 * handed out.
 */
static int
do_set_swap_area(struct snapshot *s, uint32_t dev, uint64_t offset)
{
	struct sim_swap *w = &to_sim(s)->swap;
	dev_t d = makedev((dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00));
	char node[PATH_MAX];
	uint8_t *pg = NULL;
	uint32_t last, nbad;
	int fd = -1, r;

	if (w->taken)
		return -EPERM;
	if (offset != 0)
		return -EOPNOTSUPP;
	r = bd_devnode(d, node, sizeof(node));
	if (r < 0)
		return r;
	r = swap_active(d);
	if (r > 0)
		log_error("the simulated snapshot device cannot use swap area %s: it is active, and only the running kernel knows which of its pages are free (swapoff %s first)",
			  node, node);
	if (r != 0)
		return r > 0 ? -EBUSY : r;
	fd = open(node, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENODEV;
	pg = malloc(SIM_PAGE_SIZE);
	r = pg ? 0 : -ENOMEM;
	if (r == 0 && pread(fd, pg, SIM_PAGE_SIZE, 0) != SIM_PAGE_SIZE)
		r = -ENODEV;
	if (r == 0 && (memcmp(pg + SIM_PAGE_SIZE - 10, "SWAPSPACE2", 10) != 0 ||
		       torpor_get_le32(pg + 1024) != 1))
		r = -ENODEV;
	if (r < 0)
		goto out;
	last = torpor_get_le32(pg + 1028);
	nbad = torpor_get_le32(pg + 1032);
	if (1536 + 4ull * nbad > SIM_PAGE_SIZE - 10) {
		r = -ENODEV;
		goto out;
	}
	free(w->bad);
	w->bad = nbad ? calloc(nbad, sizeof(*w->bad)) : NULL;
	if (nbad && !w->bad) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nbad; i++)
		w->bad[i] = torpor_get_le32(pg + 1536 + 4 * i);
	w->last_page = last;
	w->nr_bad = nbad;
	w->next = 1;
	w->set = true;
out:
	free(pg);
	if (fd >= 0)
		close(fd);
	return r;
}

static bool
swap_page_bad(const struct sim_swap *w, uint64_t page)
{
	for (uint32_t i = 0; i < w->nr_bad; i++)
		if (w->bad[i] == page)
			return true;
	return false;
}

/* SNAPSHOT_AVAIL_SWAP_SIZE: the free bytes of the area (0 with none). */
static int64_t
do_avail_swap(struct snapshot *s)
{
	struct sim_swap *w = &to_sim(s)->swap;
	int64_t n = 0;

	if (!w->set)
		return 0;
	for (uint64_t p = w->next; p <= w->last_page; p++)
		n += !swap_page_bad(w, p);
	return n * SIM_PAGE_SIZE;
}

/* SNAPSHOT_ALLOC_SWAP_PAGE: the byte offset of the next free page, front
 * to back as on an empty area. */
static int64_t
do_alloc_swap_page(struct snapshot *s)
{
	struct sim_swap *w = &to_sim(s)->swap;

	if (!w->set)
		return -ENODEV;
	while (w->next <= w->last_page && swap_page_bad(w, w->next))
		w->next++;
	if (w->next > w->last_page)
		return -ENOSPC;
	w->taken++;
	return (int64_t)(w->next++ * SIM_PAGE_SIZE);
}

static int
do_free_swap_pages(struct snapshot *s)
{
	struct sim_swap *w = &to_sim(s)->swap;

	if (!w->set)
		return -ENODEV;
	w->next = 1;
	w->taken = 0;
	return 0;
}

/* Like the kernel: closed without the restore, the pages handed back
 * are dropped, and with them everything the device knew of the image. */
static void
sim_drop_unrestored(struct sim_snapshot *m)
{
	struct snapshot *s = &m->s;

	if (s->mode != SNAPSHOT_MODE_RESUME || s->restored ||
	    s->pages_written == 0)
		return;
	log_debug("closed without a restore: %" PRIu64 " pages handed back are dropped",
		  s->pages_written);
	s->pages_written = 0;
	s->pages_verified = 0;
	m->next_write = 0;
	m->header_seen = false;
	m->judged = false;
}

/* Like release(): waits for the lock. */
static void
sim_close(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	io_enter(s);
	sim_drop_unrestored(m);
	leave(s);
	pthread_mutex_destroy(&m->transition);
	free(m->swap.bad);
	sim_pages_release(&m->pages_of);
	free(m->batch);
	free(m->scratch);
	free(m);
}

/* The device's entry points: each takes the transition lock as the
 * kernel does (an ioctl tries it, read(), write() and reboot() wait). */
#define SIM_IOCTL(name, type, params, args)				\
	static type							\
	sim_##name params						\
	{								\
		type r = ioctl_enter(s);				\
									\
		if (r < 0)						\
			return r;					\
		r = do_##name args;					\
		leave(s);						\
		return r;						\
	}
#define SIM_WAIT(name, type, params, args)				\
	static type							\
	sim_##name params						\
	{								\
		type r;							\
									\
		io_enter(s);						\
		r = do_##name args;					\
		leave(s);						\
		return r;						\
	}

SIM_IOCTL(freeze, int, (struct snapshot *s), (s))
SIM_IOCTL(unfreeze, int, (struct snapshot *s), (s))
SIM_IOCTL(pref_image_size, int, (struct snapshot *s, uint64_t bytes), (s, bytes))
SIM_IOCTL(create_image, int, (struct snapshot *s, int *in_suspend),
	  (s, in_suspend))
SIM_IOCTL(image_size, int, (struct snapshot *s, uint64_t *ret), (s, ret))
SIM_IOCTL(atomic_restore, int, (struct snapshot *s), (s))
SIM_IOCTL(free_image, int, (struct snapshot *s), (s))
SIM_IOCTL(platform_support, int, (struct snapshot *s, bool on), (s, on))
SIM_IOCTL(power_off, int, (struct snapshot *s), (s))
SIM_IOCTL(suspend_to_ram, int, (struct snapshot *s), (s))
SIM_IOCTL(set_swap_area, int, (struct snapshot *s, uint32_t dev, uint64_t offset),
	  (s, dev, offset))
SIM_IOCTL(avail_swap, int64_t, (struct snapshot *s), (s))
SIM_IOCTL(alloc_swap_page, int64_t, (struct snapshot *s), (s))
SIM_IOCTL(free_swap_pages, int, (struct snapshot *s), (s))
SIM_WAIT(read_page, ssize_t, (struct snapshot *s, void *buf), (s, buf))
SIM_WAIT(write_page, ssize_t, (struct snapshot *s, const void *buf), (s, buf))
SIM_WAIT(reboot, int, (struct snapshot *s), (s))

static const struct snapshot_ops sim_ops = {
	.freeze = sim_freeze,
	.unfreeze = sim_unfreeze,
	.pref_image_size = sim_pref_image_size,
	.create_image = sim_create_image,
	.image_size = sim_image_size,
	.read_page = sim_read_page,
	.write_page = sim_write_page,
	.atomic_restore = sim_atomic_restore,
	.free_image = sim_free_image,
	.platform_support = sim_platform_support,
	.power_off = sim_power_off,
	.reboot = sim_reboot,
	.suspend_to_ram = sim_suspend_to_ram,
	.set_swap_area = sim_set_swap_area,
	.avail_swap = sim_avail_swap,
	.alloc_swap_page = sim_alloc_swap_page,
	.free_swap_pages = sim_free_swap_pages,
	.close = sim_close,
};

const char *
sim_after(const struct snapshot *s)
{
	if (!s || s->kind != TORPOR_SNAPSHOT_SIM)
		return NULL;
	return to_sim((struct snapshot *)s)->after;
}

int
sim_first_mismatch(const struct snapshot *s, uint64_t *ret_page)
{
	const struct sim_snapshot *m = (const struct sim_snapshot *)s;

	if (!s || (s->dev ? s->dev : s->ops) != &sim_ops)
		return -EINVAL;
	if (!m->mismatch)
		return 0;
	if (ret_page)
		*ret_page = m->mismatch_page;
	return 1;
}

/* The value of a test's lever (printable, cut to size), or fallback. */
static void
sim_env_string(const char *name, const char *fallback, char *buf, size_t size)
{
	const char *v = getenv(name);
	size_t i;

	snprintf(buf, size, "%s", v && *v ? v : fallback);
	for (i = 0; buf[i]; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			buf[i] = '?';
}

/*
 * Open a simulated device.  In resume mode "sim" alone takes whatever
 * simulated image its header describes; "sim:SIZE[:SEED]" insists on
 * that one.  In hibernate mode "sim" alone is a 64 MiB image, seed 1.
 */
int
snapshot_sim_open(const char *spec, enum snapshot_mode mode,
		  struct snapshot **ret)
{
	struct sim_snapshot *m;
	uint64_t size, seed;
	bool named;
	int r;

	r = snapshot_spec_parse(spec, &size, &seed, &named);
	if (r < 0)
		return log_error_errno(-EINVAL, "invalid simulated snapshot '%s': %s",
				       spec, snapshot_spec_strerror(r));

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->scratch = malloc(SIM_PAGE_SIZE);
	if (!m->scratch) {
		free(m);
		return -ENOMEM;
	}
	pthread_mutex_init(&m->transition, NULL);
	m->s.ops = &sim_ops;
	m->s.kind = TORPOR_SNAPSHOT_SIM;
	m->s.mode = mode;
	m->s.page_size = SIM_PAGE_SIZE;
	m->size = size;
	m->seed = seed;
	m->pages = size / SIM_PAGE_SIZE;
	m->named = named;
	sim_pages_init(&m->pages_of, seed);

	r = snapshot_running_release(&m->s, m->release, sizeof(m->release));
	if (r < 0) {
		sim_close(&m->s);
		return log_error_errno(r, "cannot tell the kernel release for the simulated image: %m");
	}
	sim_env_string(SIM_MACHINE_ENV, SNAPSHOT_ARCH_HEADER_MACHINE, m->machine,
		       sizeof(m->machine));
	sim_env_string(SIM_MEMORY_MAP_ENV, "", m->memory_map,
		       sizeof(m->memory_map));
	memcpy(m->img_release, m->release, sizeof(m->release));
	memcpy(m->img_machine, m->machine, sizeof(m->machine));
	memcpy(m->img_memory_map, m->memory_map, sizeof(m->memory_map));
	*ret = &m->s;
	return 0;
}

uint64_t
sim_premade_served(const struct snapshot *s)
{
	const struct sim_snapshot *m = (const struct sim_snapshot *)s;

	if (!s || (s->dev ? s->dev : s->ops) != &sim_ops)
		return 0;
	return m->premade_served;
}

/* ------------------------------------------------------------------ */
/* The simulated machine, a snapshot source (snapshot.h).              */

static const char *
sim_kernel_release(void)
{
	return getenv(SIM_KERNEL_RELEASE_ENV);
}

static const char *
sim_machine(void)
{
	const char *machine = getenv(SIM_MACHINE_ENV);

	return machine && *machine ? machine : SNAPSHOT_ARCH_HEADER_MACHINE;
}

static const char *
sim_root_path(void)
{
	return getenv(SIM_ROOT_GUARD_ENV);
}

static const struct snapshot_source sim_source = {
	.kind = TORPOR_SNAPSHOT_SIM,
	.open = snapshot_sim_open,
	.kernel_release = sim_kernel_release,
	.machine = sim_machine,
	.root_path = sim_root_path,
};

/* Linking this library is what makes sim: specs open, and what lets its
 * levers ($TORPOR_SIM_*) be read: a program without it has neither. */
static void __attribute__((constructor))
sim_source_add(void)
{
	snapshot_source_add(&sim_source);
}
