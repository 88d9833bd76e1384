/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hibernation cycle as named steps (doc/design.md, "The cycle"):
 * prepare, reserve, freeze, snapshot, stream, commit, then power off (or,
 * with --test, drop the image) and, once the system is back, thaw.  Each
 * step records what it set up in struct cycle; cycle_end() is the one
 * place that undoes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "boot-once.h"
#include "bootloader.h"
#include "chain.h"
#include "clock.h"
#include "cycle.h"
#include "device-names.h"
#include "host.h"
#include "initramfs-check.h"
#include "log.h"
#include "next-boot.h"
#include "plugin-call.h"
#include "pool.h"
#include "proc.h"
#include "progress.h"
#include "root-guard.h"
#include "snapshot.h"
#include "stream-out.h"
#include "test-hook.h"

struct cycle {
	struct torpor_session *s;
	const struct cycle_options *o;
	struct snapshot *snap;
	struct cycle_prepared *pre;	/* chain, pool, buffers: built ahead */
	struct image_header h;
	char guard_dev[320];		/* the guarded root's device */
	struct next_boot *next;		/* what the next boot starts, NULL:
					 * no boot involved (the sim) */
	struct boot_once once;		/* the one-shot set, to take back */
	bool first_pending;	/* the page read ahead not yet streamed */
	bool reserved, frozen, have_image, committed;
	bool woke;		/* came back from suspend to RAM, not disk */
	bool pre_done;		/* plugins were told: about to freeze */
	/* A step failed: the phases that follow (the clean-up) are timed
	 * but not announced, and neither is the end of the one that failed:
	 * a line of its time would read as its success. */
	bool failed;
	double t0;
	int phase;		/* the phase running, -1: none yet */
	double phase_t0;	/* when it began (CLOCK_MONOTONIC) */
};

void
cycle_print_times(const char *what, double program_start,
		  const struct cycle_times *t, enum cycle_phase end)
{
	const char *names[CYCLE_N_PHASES + 1] = { "program-start" };
	double secs[CYCLE_N_PHASES + 1] = { program_start };
	unsigned i;

	for (i = 0; i < CYCLE_N_PHASES; i++) {
		names[i + 1] = cycle_phase_name((enum cycle_phase)i);
		secs[i + 1] = i < end && t->phase[i] > 0 ? t->phase[i] : -1;
	}
	progress_print_phases(what, names, secs, CYCLE_N_PHASES + 1);
}

/* Ends the running phase (its time goes to o->times) and begins p;
 * CYCLE_N_PHASES only ends the running one. */
static void
cycle_phase(struct cycle *cy, enum cycle_phase p)
{
	const struct cycle_options *o = cy->o;
	double now = clock_now();

	if (cy->phase >= 0) {
		if (o->times)
			o->times->phase[cy->phase] += now - cy->phase_t0;
		if (o->phase && !cy->failed)
			o->phase(o->phase_ctx, (enum cycle_phase)cy->phase, true);
	}
	cy->phase = p < CYCLE_N_PHASES ? (int)p : -1;
	cy->phase_t0 = now;
	if (p < CYCLE_N_PHASES && o->phase && !cy->failed)
		o->phase(o->phase_ctx, p, false);
}

/* Before the point of no return: has the caller asked to stop? */
static int
cycle_check_cancel(const struct cycle *cy)
{
	if (cy->o->cancel && *cy->o->cancel)
		return log_notice("cancelled before the image was committed: nothing is kept"), -ECANCELED;
	return 0;
}

/* The ends of the chain: filters in order, then the writer. */
static const struct plugin_entry *
chain_entry(const struct chain *c, size_t i)
{
	return i < c->n_filters ? c->filters[i] : c->writer;
}

uint64_t
cycle_expected_image_bytes(enum torpor_snapshot_kind kind, const char *spec)
{
	uint64_t size = 0, seed, total, avail;
	bool named;
	FILE *f;

	/* The simulated image's size is in its name; like the kernel's, the
	 * device itself knows it only once the image exists. */
	if (kind == TORPOR_SNAPSHOT_SIM)
		return snapshot_spec_parse(spec, &size, &seed, &named) == 0 ?
		       size : 0;
	/* The kernel shrinks the image to /sys/power/image_size when it can;
	 * used memory is the other bound. */
	f = fopen("/sys/power/image_size", "re");
	if (f) {
		if (fscanf(f, "%" SCNu64, &size) != 1)
			size = 0;
		fclose(f);
	}
	total = proc_meminfo("MemTotal");
	avail = proc_meminfo("MemAvailable");
	if (total > avail && (size == 0 || total - avail < size))
		size = total - avail;
	return size;
}

/* Whether the stream writes on a thread of its own ([torpor] write_thread). */
static bool
wants_write_thread(const struct torpor_config *c)
{
	enum config_write_thread w = c->write_thread;

	/* Only with a second CPU to overlap the writes with: torpor.conf(5),
	 * write_thread, says what was measured. */
	return w == CONFIG_WRITE_THREAD_YES ||
	       (w == CONFIG_WRITE_THREAD_AUTO && pool_default_threads() > 1);
}

/* What the cycle will hold during the stream: the plugins' own needs
 * (registry_memory_needed(), every plugin once), the pool (buffers, and a
 * filter state per thread: one filter state more than runs is the margin),
 * the write buffers (and the writer thread's stack) and the page read
 * ahead.  Refused here, before anything is allocated. */
static int
check_memory(struct cycle_prepared *p)
{
	size_t page = p->chain.page_size;
	uint64_t plugins = registry_memory_needed(&p->s->reg, page);
	uint64_t need = stream_out_memory(p->write_thread) + page, pool, avail;
	char limit[PATH_MAX];

	/* Under a cgroup's limit (or little free memory) fewer threads. */
	p->threads = session_pool_threads(p->s, &p->chain, need, &avail,
					  limit, sizeof(limit));
	pool = pool_memory(&p->chain, p->threads);

	/* Every figure may be saturated; so is the sum. */
	need = pool > UINT64_MAX - need ? UINT64_MAX : need + pool;
	need = plugins > (UINT64_MAX - need) / page ? UINT64_MAX :
	       need + plugins * page;
	if (avail == 0 || need <= avail)
		return 0;
	return log_error_errno(-ENOMEM, "not enough memory to hibernate: the plugins and buffers need %" PRIu64 " MiB, %s leaves %" PRIu64 " MiB",
			       need / 1048576 + (need % 1048576 != 0), limit,
			       avail >> 20);
}

/* The header holds the chain and each plugin's saved configuration: check
 * that what the plugins ask for fits the header budget, and name the
 * chain in h. */
static int
check_header_room(const struct chain *c, const struct registry *reg,
		  struct image_header *h)
{
	size_t i, blobs = registry_header_storage(reg);

	h->n_chain = (uint32_t)c->n_filters + 1;
	for (i = 0; i < h->n_chain; i++) {
		const struct plugin_entry *e = chain_entry(c, i);
		size_t need = plugin_storage_needed(e);

		snprintf(h->chain[i].name, sizeof(h->chain[i].name), "%s", e->ops.name);
		h->chain[i].type = (uint8_t)e->ops.type;
		h->chain[i].position = (uint8_t)i;
		if (need > IMAGE_MAX_BLOB)
			return log_error_errno(-E2BIG, "plugin '%s' wants %zu bytes of header, more than %u",
					       e->ops.name, need, IMAGE_MAX_BLOB);
	}
	if (blobs > IMAGE_MAX_HEADER - image_header_size(h))
		return log_error_errno(-E2BIG, "the plugins want %zu bytes of image header, more than the %u bytes there are",
				       blobs, IMAGE_MAX_HEADER - (unsigned)image_header_size(h));
	return 0;
}

/* The configuration's chunk_pages goes into the image header, whose
 * reader refuses more than the format allows. */
_Static_assert(CONFIG_MAX_CHUNK_PAGES <= IMAGE_MAX_CHUNK_PAGES,
	       "every chunk size the configuration takes makes a readable image");

/* The chain built, the plugins initialised for a cycle, memory and the
 * header checked, then every buffer of the stream allocated (and
 * touched). */
static int
prepare_steps(struct cycle_prepared *p, size_t page_size)
{
	struct torpor_session *s = p->s;
	struct image_header h;
	int r;

	r = chain_setup(&p->chain, &s->reg, page_size, s->config->chunk_pages);
	if (r < 0)
		return r;
	r = registry_get(&s->reg);
	if (r < 0)
		return log_error_errno(r, "a plugin is being unloaded; try again");
	p->got = true;
	r = registry_initialise(&s->reg, 1);
	if (r < 0)
		return log_error_errno(r, "a plugin could not be initialised: %m");
	p->initialised = true;
	memset(&h, 0, sizeof(h));
	p->write_thread = wants_write_thread(s->config);
	r = check_memory(p);
	if (r >= 0)
		r = check_header_room(&p->chain, &s->reg, &h);
	image_header_clear(&h);
	if (r < 0)
		return r;
	p->first_page = chain_alloc_buffer(page_size);
	r = p->first_page ? stream_out_init(&p->out, p->chain.writer,
						     p->write_thread) : -ENOMEM;
	if (r >= 0)
		r = pool_init(&p->pool, &p->chain, POOL_ENCODE, p->threads);
	if (r < 0)
		return log_error_errno(r, "could not allocate the stream buffers: %m");
	return 0;
}

int
cycle_prepare(struct torpor_session *s, size_t page_size,
	      struct cycle_prepared *p)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->s = s;
	r = prepare_steps(p, page_size);
	if (r < 0) {
		cycle_prepared_free(p);
		return r;
	}
	p->ready = true;
	log_debug("cycle prepared: %u worker thread(s)%s, %zu KiB of buffers",
		  p->threads, p->write_thread ? " and a writer thread" : "",
		  (pool_memory(&p->chain, p->threads) +
		   stream_out_memory(p->write_thread) + page_size) >> 10);
	return 0;
}

void
cycle_prepared_free(struct cycle_prepared *p)
{
	if (!p->s)
		return;
	stream_out_free(&p->out);
	pool_free(&p->pool);
	free(p->first_page);
	if (p->initialised)
		registry_cleanup(&p->s->reg, 1);
	if (p->got)
		registry_put(&p->s->reg);
	chain_release(&p->chain);
	memset(p, 0, sizeof(*p));
}

/*
 * The writer is initialised again when the cycle begins: where it writes
 * (the file writer's block map of its file, the swap area the swap writer
 * picked) must be what the storage holds now, not what it held when the
 * cycle was prepared, maybe hours ago: a file made again since would have
 * given its old blocks to other files.  Cheap: the buffers and the
 * filters stay as prepared.
 */
static int
refresh_writer(struct cycle_prepared *p)
{
	struct plugin_entry *w = p->chain.writer;
	int r;

	if (w->initialised) {
		plugin_cleanup(w, 1);
		w->initialised = false;
	}
	r = plugin_initialise(w, 1);
	if (r < 0)
		return r;
	w->initialised = true;
	return 0;
}

/* The root filesystem as it is now, before the freeze, every cycle: a
 * later boot refuses the image if it was mounted (ext) or written (btrfs)
 * since.  A root that is neither ext2/3/4 nor btrfs on a block device is
 * not guarded, and that is said.  Before the freeze: statfs() on a root
 * served by a frozen process (FUSE) would never return. */
static void
record_root_guard(struct cycle *cy)
{
	const char *path = snapshot_root_path(cy->snap->kind);
	char why[320];
	char uuid[40];

	if (root_guard_record(path, &cy->h.guard, why, sizeof(why)) < 0) {
		log_info("root filesystem guard: none (%s): a later boot cannot tell whether it was mounted since the image was written",
			 why);
		return;
	}
	snprintf(cy->guard_dev, sizeof(cy->guard_dev), "%s", why);
	bd_format_uuid(cy->h.guard.fs_uuid, uuid, sizeof(uuid));
	if (cy->h.guard.kind == IMAGE_GUARD_BTRFS)
		log_debug("root filesystem guard: %s btrfs UUID=%s on %s",
			  path, uuid, why);
	else
		log_debug("root filesystem guard: %s UUID=%s on %s, mounted at %" PRIu64 ", mount count %u",
			  path, uuid, why, cy->h.guard.stamp, cy->h.guard.count);
}

/* The titles from the menu's top down to entry i, joined by " > " as a
 * person walks them ("Advanced options for Debian GNU/Linux > Debian
 * GNU/Linux, with Linux 6.1.0-28-amd64"); "" when they do not fit. */
static void
entry_menu_path(const struct boot_menu *m, int i, char *buf, size_t size)
{
	char rest[IMAGE_BOOT_ENTRY_SIZE];
	const struct boot_entry *e = &m->e[i];
	const char *title = e->title[0] ? e->title : e->id;
	int n;

	if (e->parent >= 0 && e->parent < i) {
		entry_menu_path(m, e->parent, rest, sizeof(rest));
		n = rest[0] ? snprintf(buf, size, "%s > %s", rest, title) : -1;
	} else {
		n = snprintf(buf, size, "%s", title);
	}
	if (n < 0 || (size_t)n >= size)
		buf[0] = '\0';
}

/*
 * The boot menu entry that starts this kernel, into the header: a boot
 * of another kernel cannot see this system's /boot, and names it when it
 * refuses the image.  From what check_next_boot() read of the boot
 * loader; best effort: none is recorded when it could not be read or
 * was not looked at (the sim), the reason said with -v.
 */
static void
record_boot_entry(struct cycle *cy)
{
	const struct next_boot *nb = cy->next;
	const struct boot_next *b = nb ? &nb->b : NULL;
	const char *why = "no boot loader is looked at for this snapshot device";

	cy->h.boot_entry[0] = '\0';
	if (nb && !nb->inspected)
		why = nb->line;
	else if (b && b->running < 0)
		why = "no entry of the boot loader starts the running kernel";
	if (nb && nb->inspected && b->running >= 0) {
		entry_menu_path(&b->menu, b->running, cy->h.boot_entry,
				sizeof(cy->h.boot_entry));
		/* The entry with only its own title, then none. */
		if (!image_boot_entry_valid(cy->h.boot_entry) ||
		    !cy->h.boot_entry[0])
			snprintf(cy->h.boot_entry, sizeof(cy->h.boot_entry), "%s",
				 b->menu.e[b->running].title);
		if (!image_boot_entry_valid(cy->h.boot_entry))
			cy->h.boot_entry[0] = '\0';
		why = "its title cannot be shown on a console";
	}
	if (cy->h.boot_entry[0])
		log_info("boot entry of this kernel: '%s'", cy->h.boot_entry);
	else
		log_info("boot entry of this kernel: none recorded (%s)", why);
}

/* A btrfs root's generation, after the snapshot: the freeze's sync
 * committed, which moved it.  Read from the device only. */
static void
refresh_root_guard(struct cycle *cy)
{
	char why[320];

	if (cy->h.guard.kind != IMAGE_GUARD_BTRFS)
		return;
	if (root_guard_refresh(&cy->h.guard, cy->guard_dev, why, sizeof(why)) < 0) {
		log_info("root filesystem guard: none (%s): a later boot cannot tell whether it was written since the image was written",
			 why);
		return;
	}
	log_debug("root filesystem guard: btrfs generation %" PRIu64 "%s after the snapshot",
		  cy->h.guard.stamp, cy->h.guard.count ? ", a tree log pending" : "");
}

/*
 * Which kernel the next boot starts (next-boot.h), before anything is
 * frozen.  Refused, unless forced: another release boots next and no
 * one-shot can make it the running one.  Cannot tell (no boot loader
 * torpor knows, its files unreadable): said, and the cycle goes on.
 */
static int
check_next_boot(struct cycle *cy)
{
	const char *root = next_boot_root(cy->snap->kind);
	char running[BOOT_RELEASE_SIZE];
	int r;

	if (!root)
		return 0;
	r = snapshot_running_release(cy->snap, running, sizeof(running));
	if (r < 0)
		return log_error_errno(r, "cannot tell the running kernel's release: %m");
	cy->next = malloc(sizeof(*cy->next));
	if (!cy->next)
		return log_error_errno(-ENOMEM, "out of memory");
	next_boot_plan(root, running, cy->next);
	switch (cy->next->verdict) {
	case NEXT_BOOT_REFUSE:
		if (cy->o->force) {
			log_warning("next boot: %s", cy->next->line);
			log_warning("hibernating anyway (--force): the next boot may not resume this image");
			return 0;
		}
		log_error("next boot: %s", cy->next->line);
		log_error("the next boot could not resume this image: %s",
			  cy->next->fix);
		return -ESTALE;
	case NEXT_BOOT_UNKNOWN:
		log_notice("next boot: %s", cy->next->line);
		return 0;
	default:
		log_info("next boot: %s", cy->next->line);
		return 0;
	}
}

/* The initramfs checks: the running kernel's, and the one of the kernel
 * that boots next when that is another and no one-shot makes the next
 * boot the running one (--force).  That one is looked for under the
 * boot loader's root, and a test's root has the sim checked too. */
static int
check_initramfs(struct cycle *cy)
{
	const struct next_boot *nb = cy->next;
	struct initramfs_check_options o = { .force = cy->o->force };
	char boot[sizeof(nb->root) + 8];
	int r = initramfs_check(cy->s, &o);

	if (r < 0 || !nb || nb->verdict == NEXT_BOOT_REDIRECT ||
	    !nb->release[0] || !strcmp(nb->release, nb->running))
		return r;
	snprintf(boot, sizeof(boot), "%s/boot", nb->root);
	o.boot_dir = boot;
	o.release = nb->release;
	o.required = nb->root[0] != '\0';
	log_info("the next boot starts %s: its initramfs too", nb->release);
	return initramfs_check(cy->s, &o);
}

/* The one-shot of the running kernel's entry, the last change before the
 * freeze: written through a mounted filesystem, it must be in the image's
 * view of it (a write after the snapshot would change the filesystem
 * behind the resumed kernel's back).  Not set: refused as when it could
 * not be, unless forced. */
static int
cycle_set_once(struct cycle *cy)
{
	const struct next_boot *nb = cy->next;
	char why[512];
	int r;

	if (!nb || nb->verdict != NEXT_BOOT_REDIRECT)
		return 0;
	r = boot_once_set(nb, &cy->once, why, sizeof(why));
	if (r >= 0) {
		log_notice("next boot: a one-shot boot of \"%s\" (%s) is set; the default stays %s",
			   nb->b.menu.e[nb->b.running].title, cy->once.id,
			   nb->release[0] ? nb->release :
			   nb->b.menu.e[nb->b.next].title);
		return 0;
	}
	if (cy->o->force) {
		log_warning("next boot: the one-shot boot of %s could not be set (%s); hibernating anyway (--force): the next boot starts %s",
			    nb->running, why, nb->release);
		return 0;
	}
	log_error("next boot: the one-shot boot of %s could not be set: %s",
		  nb->running, why);
	log_error("the next boot could not resume this image: hibernate again, or pick the entry of %s at the next boot and hibernate with --force",
		  nb->running);
	return -ESTALE;
}

/* The one-shot taken back, whatever the cycle's end: failed, cancelled,
 * --test, or resumed (where the boot loader used it, or did not). */
static void
cycle_restore_once(struct cycle *cy)
{
	char why[512];

	if (cy->once.loader == BOOT_LOADER_UNKNOWN)
		return;
	if (boot_once_restore(&cy->once, why, sizeof(why)) < 0)
		log_warning("next boot: the one-shot boot of %s was not taken back: %s",
			    cy->once.id, why);
	else
		log_info("next boot: the one-shot is taken back");
}

/* Open the source and check what the next boot needs; then the prepared
 * state is used (its writer initialised again), or built now (--direct,
 * or a daemon whose last build failed: its errors are this cycle's). */
static int
cycle_open(struct cycle *cy)
{
	struct torpor_session *s = cy->s;
	struct cycle_prepared *p = cy->pre;
	int r;

	/* The device first: a user who may not hibernate hears that. */
	r = snapshot_open(s->config->snapshot, SNAPSHOT_MODE_HIBERNATE, &cy->snap);
	if (r < 0)
		return r;
	r = check_next_boot(cy);
	if (r >= 0)
		r = check_initramfs(cy);
	if (r < 0)
		return r;
	host_set_snapshot(cy->snap);
	if (!p->ready)
		r = cycle_prepare(s, cy->snap->page_size, p);
	else if (p->s != s || p->chain.page_size != cy->snap->page_size)
		r = log_error_errno(-EINVAL, "the cycle was prepared for pages of %zu bytes, the snapshot has %zu",
				    p->chain.page_size, cy->snap->page_size);
	else
		r = refresh_writer(p);
	if (r < 0)
		return r;
	r = check_header_room(&p->chain, &s->reg, &cy->h);
	if (r < 0)
		return r;
	/* Drawn now, so that the memory the image holds knows it: the
	 * resumed system reads back only the header of this image. */
	if (getrandom(cy->h.uuid, sizeof(cy->h.uuid), 0) != sizeof(cy->h.uuid))
		return log_error_errno(-errno, "no random bytes for the image UUID: %m");
	record_root_guard(cy);
	record_boot_entry(cy);
	return 0;
}

/* Room on the storage for the image, asked before anything is frozen. */
static int
cycle_reserve(struct cycle *cy)
{
	uint64_t raw = cycle_expected_image_bytes(cy->snap->kind,
						  cy->s->config->snapshot);
	int r = plugin_reserve(cy->pre->chain.writer,
			       chain_expected_stream(&cy->pre->chain, raw));

	if (r < 0)
		return r;
	cy->reserved = true;
	return 0;
}

/* The sleep's name as systemd gives it to its system-sleep hooks. */
static const char *
sleep_action(const struct cycle *cy)
{
	if (cy->o->sleep_action)
		return cy->o->sleep_action;
	return cy->s->config->after == CONFIG_AFTER_SUSPEND ? "hybrid-sleep" :
							      "hibernate";
}

/* Tell the plugins (sleep-hooks runs the system-sleep hooks) that user
 * space is about to be frozen: daemons can still act. */
static int
cycle_pre_sleep(struct cycle *cy)
{
	int r = plugins_sleep_event(&cy->s->reg, TORPOR_SLEEP_PRE,
				    sleep_action(cy));

	cy->pre_done = r >= 0;
	return r;
}

static int
cycle_freeze(struct cycle *cy)
{
	int r = cy->snap->ops->freeze(cy->snap);

	if (r < 0)
		return log_error_errno(r, "could not freeze user space: %m");
	cy->frozen = true;
	/* The writer's last look at its filesystem: after the snapshot the
	 * kernel's freezable threads stay frozen. */
	return plugin_frozen(cy->pre->chain.writer);
}

/* Returns with *in_suspend = 1 after the snapshot, and again with 0 in the
 * resumed system. */
static int
cycle_snapshot(struct cycle *cy, int *in_suspend)
{
	int r;

	/* The platform's hibernation method (ACPI S4) is used for the power
	 * off when the source has one; it must be chosen before the image
	 * is created.  Without it, power_off() switches off directly. */
	if (cy->s->config->power_off == CONFIG_POWER_OFF_PLATFORM &&
	    cy->snap->ops->platform_support &&
	    cy->snap->ops->platform_support(cy->snap, true) < 0)
		log_debug("no platform hibernation method: powering off directly");
	/* [torpor] image_size: how small the kernel should try to make the
	 * image (it frees memory down to it before the snapshot). */
	r = snapshot_apply_prefs(cy->snap, cy->s->config);
	if (r < 0)
		return log_error_errno(r, "could not set the preferred image size: %m");
	r = cy->snap->ops->create_image(cy->snap, in_suspend);
	if (r == -ENOMEM) {
		struct snapshot_memory mem;
		char why[1024];

		snapshot_memory_read(cycle_expected_image_bytes(cy->snap->kind,
					cy->s->config->snapshot), &mem);
		snapshot_memory_explain(&mem, why, sizeof(why));
		return log_error_errno(r, "the kernel could not create the image: %m: %s",
				       why);
	}
	if (r < 0)
		return log_error_errno(r, "the kernel could not create the image: %m");
	cy->have_image = true;
	cy->t0 = clock_now();
	return 0;
}

/* The source with the first page read ahead. */
static int
read_pages(void *ctx, uint8_t *buf, uint32_t max_pages, uint32_t *ret_pages)
{
	struct cycle *cy = ctx;
	struct snapshot *snap = cy->snap;
	uint32_t n = 0;

	if (cy->first_pending && max_pages > 0) {
		memcpy(buf, cy->pre->first_page, snap->page_size);
		cy->first_pending = false;
		n = 1;
	}
	/* In batches (one system call each with the kernel's device); a
	 * short one is followed by the call that says why: 0 at the end. */
	while (n < max_pages) {
		ssize_t k = snap->ops->read_pages(snap, buf + (size_t)n * snap->page_size,
						  max_pages - n);

		if (k < 0)
			return log_error_errno((int)k, "reading a page of the snapshot failed: %m");
		if (k == 0)
			break;
		if ((size_t)k % snap->page_size)
			return log_error_errno(-EIO, "the snapshot gave a short page (%zd bytes)", k);
		n += (uint32_t)((size_t)k / snap->page_size);
	}
	*ret_pages = n;
	return 0;
}

/* The header's facts: the image's size and the kernel that wrote it
 * (from the image's first page, read ahead); the UUID was drawn before
 * the snapshot. */
static int
describe_image(struct cycle *cy)
{
	struct image_header *h = &cy->h;
	struct snapshot_info si;
	uint64_t bytes = 0;
	uint32_t n = 0;
	int r;

	r = cy->snap->ops->image_size(cy->snap, &bytes);
	if (r < 0)
		return log_error_errno(r, "could not get the image size: %m");
	h->format_version = IMAGE_FORMAT_VERSION;
	h->flags = cy->o->test ? IMAGE_FLAG_TEST : 0;
	h->created = (uint64_t)time(NULL);
	h->page_size = (uint32_t)cy->pre->chain.page_size;
	h->page_count = bytes / cy->pre->chain.page_size;
	h->chunk_pages = cy->pre->chain.chunk_pages;
	h->chunk_count = (h->page_count + h->chunk_pages - 1) / h->chunk_pages;
	r = read_pages(cy, cy->pre->first_page, 1, &n);
	if (r >= 0 && n == 0)
		r = log_error_errno(-EIO, "the snapshot is empty");
	if (r >= 0 && snapshot_parse_info(cy->pre->first_page, cy->pre->chain.page_size, &si) < 0)
		r = log_error_errno(-EBADMSG, "the image's first page is not a snapshot header");
	if (r < 0)
		return r;
	memcpy(h->kernel_release, si.release, sizeof(h->kernel_release));
	memcpy(h->kernel_version, si.version, sizeof(h->kernel_version));
	cy->first_pending = true;
	return 0;
}

/* Pages -> chain -> framing -> writer.  Filters learn the image before
 * any thread state exists (crypt draws its key in start_stream()), so
 * the states and threads start here, after the snapshot. */
static int
cycle_stream(struct cycle *cy)
{
	int r;

	r = describe_image(cy);
	if (r >= 0) {
		/* Before the stream: crypt binds the guard to it. */
		refresh_root_guard(cy);
		r = chain_start_stream(&cy->pre->chain, &cy->h);
	}
	if (r >= 0)
		r = pool_start(&cy->pre->pool);
	if (r < 0)
		return r;
	cy->pre->out.report = (struct stream_report){
		.fn = cy->o->progress,
		.ctx = cy->o->progress_ctx,
		.what = cy->o->test ? "hibernate (test)" : "hibernate",
		.cancel = cy->o->cancel,
	};
	r = stream_encode_all(&cy->pre->chain, &cy->pre->pool, &cy->pre->out, &cy->h,
			      read_pages, cy);
	cy->h.stored_bytes = cy->pre->out.total;
	if (r == -ECANCELED)
		return cycle_check_cancel(cy);
	return r;
}

/* A plugin's saved configuration, asked for its size again (a writer's
 * grows while the image is written). */
static int
save_entry(const struct plugin_entry *e, struct image_chain_entry *ce)
{
	size_t need = plugin_storage_needed(e);
	int r;

	ce->blob_len = 0;
	if (need == 0)
		return 0;
	if (need > IMAGE_MAX_BLOB)
		return log_error_errno(-E2BIG, "plugin '%s' wants %zu bytes of header, more than %u",
				       e->ops.name, need, IMAGE_MAX_BLOB);
	ce->blob = calloc(1, need);
	if (!ce->blob)
		return -ENOMEM;
	r = plugin_save_config(e, ce->blob, need);
	if (r < 0)
		return r;
	ce->blob_len = (uint32_t)r;
	return 0;
}

/* The header, with every plugin's configuration, goes last. */
static int
cycle_commit(struct cycle *cy)
{
	struct image_header *h = &cy->h;
	uint8_t *buf;
	size_t len, i;
	int r = 0;

	for (i = 0; i < h->n_chain && r >= 0; i++)
		r = save_entry(chain_entry(&cy->pre->chain, i), &h->chain[i]);
	if (r < 0)
		return r;
	len = image_header_size(h);
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	r = image_header_encode(h, buf, len, &len);
	if (r < 0)
		log_error_errno(r, "could not encode the image header: %m");
	else
		r = plugin_commit(cy->pre->chain.writer, buf, len);
	free(buf);
	if (r < 0)
		return r;
	cy->committed = true;
	progress_print_summary(cy->o->test ? "hibernate (test)" : "hibernate",
			       h->page_count, h->page_size, h->stored_bytes,
			       clock_now() - cy->t0);
	return 0;
}

/* --test: the system goes on running, so its image must never be
 * resumed: an image left behind would be resumed over it at the next
 * boot. */
static int
cycle_drop_test_image(struct cycle *cy)
{
	return plugin_invalidate(cy->pre->chain.writer);
}

/* Only the simulated device returns from here: its "resume" is the next
 * torpor-resume run; the cycle goes on as after a real one. */
/*
 * after = suspend (suspend to both): with the image written, suspend to
 * RAM.  Waking up from RAM makes the image on disk stale: it is discarded
 * and the cycle returns as after a resume.  1 when the machine could not
 * suspend: it is then powered off, and the image resumes at the next boot.
 */
static int
cycle_suspend_to_both(struct cycle *cy)
{
	int r;

	log_notice("image written: suspending to RAM (suspend to both)");
	r = cy->snap->ops->suspend_to_ram(cy->snap);
	if (r < 0) {
		log_warning_errno(r, "could not suspend to RAM (%m); powering off: the image resumes at the next boot");
		return 1;
	}
	cy->woke = true;
	log_notice("woke up from suspend to RAM: discarding the image on disk");
	return plugin_invalidate(cy->pre->chain.writer);
}

/* What the machine does once the image is written ([torpor] after). */
static int
cycle_leave(struct cycle *cy)
{
	int r;

	switch (cy->s->config->after) {
	case CONFIG_AFTER_REBOOT:
		log_notice("image written: rebooting");
		r = cy->snap->ops->reboot(cy->snap);
		return r < 0 ? log_error_errno(r, "could not reboot: %m") : 0;
	case CONFIG_AFTER_SUSPEND:
		r = cycle_suspend_to_both(cy);
		if (r <= 0)
			return r;
		break;
	case CONFIG_AFTER_POWEROFF:
		break;
	}
	r = cy->snap->ops->power_off(cy->snap);
	if (r < 0)
		return log_error_errno(r, "could not power off: %m");
	return 0;
}

/* Why the resume figures were not taken, said once. */
static void
ignore_figures(const char *why, const char *detail)
{
	log_notice("the resume figures are not known: %s%s%s", why,
		   detail ? ": " : "", detail ? detail : "");
}

/* The header of this image, as torpor-resume left it, parsed and checked
 * to be this image's: 0, or -errno when it was ignored (said why). */
static int
read_consumed_header(const struct cycle *cy, uint8_t *buf,
		     struct image_header *h)
{
	const struct plugin_entry *w = cy->pre->chain.writer;
	char err[200] = "";
	size_t len = 0;
	int r;

	r = plugin_read_consumed(w, cy->h.uuid, buf, IMAGE_MAX_HEADER, &len);
	if (r == -EOPNOTSUPP)
		log_info("writer '%s' cannot read back the resume figures",
			 w->ops.name);
	else if (r == -ENOENT)
		log_info("the resume figures are not known: no consumed-image record on the writer's storage");
	else if (r == -ESTALE)
		ignore_figures("the writer's consumed-image record names another image",
			       NULL);
	else if (r < 0)
		ignore_figures("the writer's consumed-image record was ignored",
			       strerror(-r));
	if (r < 0)
		return r;
	r = image_header_parse(buf, len, h, err, sizeof(err));
	if (r < 0) {
		ignore_figures("the header it points at was ignored", err);
		return r;
	}
	if (memcmp(h->uuid, cy->h.uuid, sizeof(h->uuid)) != 0) {
		ignore_figures("the header it points at belongs to another image", NULL);
		return -ESTALE;
	}
	if (err[0]) {
		ignore_figures("the statistics slot was ignored", err);
		return -EBADMSG;
	}
	return 0;
}

/*
 * Back from the image: read what torpor-resume left in the header's
 * resume-stats slot and keep it in times.  This memory is the one from
 * before the image was written, so the header is found through the
 * record the writer's consume() left, and trusted only when it is the
 * header of the image this cycle wrote (its UUID was drawn before the
 * snapshot).  Runs before the thaw: a swap writer's pages are free again
 * in this kernel, and nothing else may reuse them before they are read.
 */
static void
read_back_resume(const struct cycle *cy, struct cycle_times *times)
{
	struct image_header h;
	uint8_t *buf = malloc(IMAGE_MAX_HEADER);

	if (!buf)
		return;
	memset(&h, 0, sizeof(h));
	if (read_consumed_header(cy, buf, &h) == 0) {
		if (!h.stats.resumed_at) {
			ignore_figures("torpor-resume left none in the header", NULL);
		} else {
			if (!log_quiet())
				printf("resume (recorded by torpor-resume): %" PRIu64 " pages in %.2f s\n",
				       h.stats.pages_restored,
				       (double)h.stats.read_usec / 1e6);
			if (times) {
				times->resumed_at = h.stats.resumed_at;
				times->resume_usec = h.stats.read_usec;
				times->resume_pages = h.stats.pages_restored;
			}
		}
	}
	image_header_clear(&h);
	free(buf);
}

/* The one cleanup path.  A failure before the power-off leaves nothing:
 * the writer gives back what it took (an image already committed is
 * invalidated), the image is freed and tasks are thawed. */
static int
cycle_end(struct cycle *cy, int r)
{
	if (r < 0 && cy->committed)
		plugin_invalidate(cy->pre->chain.writer);
	else if (r < 0 && cy->reserved)
		plugin_abort(cy->pre->chain.writer);
	/* The worker threads were created after the freeze and carry the
	 * freezer's mark: they must be gone before the thaw, or the kernel
	 * warns (thaw_processes) on every cycle that comes back. */
	pool_stop(&cy->pre->pool);
	if (cy->have_image)
		cy->snap->ops->free_image(cy->snap);
	if (cy->frozen) {
		log_info("thawing");
		pool_wait_threads_gone();
		cy->snap->ops->unfreeze(cy->snap);
	}
	if (cy->pre_done)
		plugins_sleep_event(&cy->s->reg, TORPOR_SLEEP_POST,
				    sleep_action(cy));
	cycle_restore_once(cy);
	free(cy->next);
	/* The plugins were initialised for this one cycle (plugin.h): the
	 * prepared state is spent. */
	cycle_prepared_free(cy->pre);
	image_header_clear(&cy->h);
	host_set_snapshot(NULL);
	snapshot_close(cy->snap);
	return r;
}

int
cycle_hibernate(struct torpor_session *s, const struct cycle_options *o)
{
	struct cycle_prepared p = { .s = NULL };

	return cycle_hibernate_prepared(s, &p, o);
}

int
cycle_hibernate_prepared(struct torpor_session *s, struct cycle_prepared *p,
			 const struct cycle_options *o)
{
	struct cycle cy = { .s = s, .o = o, .pre = p, .phase = -1 };
	int in_suspend = 0, r;

	if (o->times)
		memset(o->times, 0, sizeof(*o->times));
	cycle_phase(&cy, CYCLE_PHASE_STARTUP);
	r = cycle_open(&cy);
	if (r >= 0)
		r = cycle_reserve(&cy);
	if (r >= 0)
		r = cycle_pre_sleep(&cy);
	if (r >= 0)
		r = cycle_set_once(&cy);
	if (r >= 0)
		r = cycle_check_cancel(&cy);
	if (r >= 0) {
		cycle_phase(&cy, CYCLE_PHASE_FREEZE);
		r = cycle_freeze(&cy);
	}
	if (r >= 0)
		r = cycle_check_cancel(&cy);
	if (r >= 0) {
		cycle_phase(&cy, CYCLE_PHASE_SNAPSHOT);
		r = cycle_snapshot(&cy, &in_suspend);
	}
	if (r >= 0 && in_suspend) {
		cycle_phase(&cy, CYCLE_PHASE_WRITE);
		r = cycle_stream(&cy);
		if (r >= 0)
			r = cycle_check_cancel(&cy);
		if (r >= 0) {
			cycle_phase(&cy, CYCLE_PHASE_SYNC);
			r = cycle_commit(&cy);
		}
		if (r >= 0) {
			cycle_phase(&cy, CYCLE_PHASE_POWEROFF);
			r = o->test ? cycle_drop_test_image(&cy) :
				      cycle_leave(&cy);
		}
	}
	cy.failed = r < 0;
	cycle_phase(&cy, CYCLE_PHASE_RESUMED);
	if (r >= 0 && !o->test && !cy.woke)
		read_back_resume(&cy, o->times);
	if (o->times) {
		/* Zero after a real resume: set after the snapshot. */
		o->times->pages = cy.h.page_count;
		o->times->page_size = cy.h.page_size;
		o->times->stored_bytes = cy.h.stored_bytes;
		o->times->chunks_in_place = p->out.in_place;
	}
	r = cycle_end(&cy, r);
	cycle_phase(&cy, CYCLE_N_PHASES);
	return r;
}
