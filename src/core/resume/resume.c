/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Resume and verify as named steps: find the image, read its header, check
 * it against this system, rebuild the chain it names, allocate for the
 * stream, then (for a resume: once user space is frozen) stream it in one
 * pass, every chunk checked and its pages handed to the snapshot device as
 * they come, and for a resume invalidate the image and restore.  Each
 * step records what it set up in struct resume; resume_end() is the one
 * place that undoes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "chain.h"
#include "clock.h"
#include "host.h"
#include "log.h"
#include "plugin-call.h"
#include "pool.h"
#include "proc.h"
#include "progress.h"
#include "resume.h"
#include "root-guard.h"
#include "snapshot.h"
#include "stream-in.h"

void
resume_parse_cmdline(const char *cmdline, bool *noresume,
		     char *resume, size_t resume_size,
		     char *offset, size_t offset_size)
{
	const char *p = cmdline;

	*noresume = false;
	resume[0] = '\0';
	offset[0] = '\0';
	while (p && *p) {
		size_t len;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		len = strcspn(p, " \t\n");
		if (len == 8 && strncmp(p, "noresume", 8) == 0)
			*noresume = true;
		else if (len > 7 && strncmp(p, "resume=", 7) == 0)
			snprintf(resume, resume_size, "%.*s", (int)(len - 7), p + 7);
		else if (len > 14 && strncmp(p, "resume_offset=", 14) == 0)
			snprintf(offset, offset_size, "%.*s", (int)(len - 14), p + 14);
		p += len;
	}
}


/* A step's answer besides 0 (go on), EXIT_REFUSED and -errno: the run
 * is over and succeeded (no image, noresume, verified). */
#define RESUME_DONE 1

struct resume {
	struct torpor_session *s;
	struct resume_options *o;
	const struct plugin_entry *writer;
	const char *what;		/* "resume" or "verify" */
	struct image_header h;
	uint8_t *hdr;			/* the header as stored */
	size_t hdr_len;
	struct chain c;
	struct pool pool;
	struct stream_in in;
	struct snapshot *snap;		/* opened: pages may have been handed */
	uint64_t pages;			/* handed to the snapshot device */
	bool got, frozen, found, gone;
	bool test_image;		/* verify: refused once it was read */
	bool first_checked;		/* the snapshot's first page */
	bool kernel_refused;		/* the kernel refused the image's header */
	double t0;
	double phase_t0;		/* when the running phase began */
	enum resume_phase phase;
};

static const char *const phase_names[RESUME_N_PHASES] = {
	[RESUME_PHASE_START] = "program-start",
	[RESUME_PHASE_HEADER] = "header",
	[RESUME_PHASE_READ] = "read+decode",
	[RESUME_PHASE_RESTORE] = "restore",
};

/* End the running phase (its time goes to o->times) and begin p. */
static void
resume_phase(struct resume *rs, enum resume_phase p)
{
	double now = clock_now();

	rs->o->times[rs->phase] += now - rs->phase_t0;
	rs->phase = p;
	rs->phase_t0 = now;
}

/* The image is refused, and why: it comes back in o->refusal. */
static int
refuse(struct resume *rs, enum resume_refusal why)
{
	rs->o->refusal = why;
	return EXIT_REFUSED;
}

/* What a plugin's error says about the image. */
static enum resume_refusal
classify(int r)
{
	switch (r) {
	case -EKEYREJECTED:
		return REFUSAL_KEY;
	case -ENOKEY:
	case -EKEYREVOKED:
	case -EPERM:
	case -EPROTONOSUPPORT:
		return REFUSAL_ELSEWHERE;
	default:
		return REFUSAL_CORRUPT;
	}
}

/* A plugin's error: a refusal when it is one of the codes a plugin uses
 * to say "this image is not acceptable", else the error itself. */
static int
judge_plugin_error(struct resume *rs, int r)
{
	if (r == -EBADMSG || r == -EKEYREJECTED || r == -ENOKEY ||
	    r == -EPROTONOSUPPORT || r == -EKEYREVOKED || r == -EPERM)
		return refuse(rs, classify(r));
	return r;
}

/* Take the plugins and look for an image.  noresume discards it. */
static int
resume_find(struct resume *rs)
{
	int r;

	r = registry_get(&rs->s->reg);
	if (r < 0)
		return log_error_errno(r, "a plugin is being unloaded; try again");
	rs->got = true;
	r = registry_initialise(&rs->s->reg, 1);
	if (r >= 0)
		r = plugin_find(rs->writer);
	if (r <= 0) {
		if (r == 0 && rs->o->mode != RESUME_INSPECT)
			printf("%s: no image found\n", rs->what);
		return r < 0 ? r : RESUME_DONE;
	}
	rs->found = true;
	if (!rs->o->noresume || rs->o->mode != RESUME_RESTORE)
		return 0;
	r = plugin_invalidate(rs->writer);
	if (r < 0)
		return r;
	rs->gone = true;
	printf("%s: noresume given: image discarded, booting normally\n", rs->what);
	return RESUME_DONE;
}

/* What the caller may say about the image once its header parsed. */
static void
note_facts(struct resume_options *o, const struct image_header *h)
{
	o->header_valid = true;
	o->test_image = (h->flags & IMAGE_FLAG_TEST) != 0;
	memcpy(o->uuid, h->uuid, sizeof(o->uuid));
	o->created = h->created;
	o->page_count = h->page_count;
	o->page_size = h->page_size;
	o->stored_bytes = h->stored_bytes;
	memcpy(o->kernel_release, h->kernel_release, sizeof(o->kernel_release));
	memcpy(o->boot_entry, h->boot_entry, sizeof(o->boot_entry));
}

static int
resume_read_header(struct resume *rs)
{
	char err[200];
	int r;

	rs->hdr = malloc(IMAGE_MAX_HEADER);
	if (!rs->hdr)
		return -ENOMEM;
	r = plugin_read_header(rs->writer, rs->hdr, IMAGE_MAX_HEADER,
			       &rs->hdr_len);
	if (r == -EBADMSG || r == -EMSGSIZE || r == -ENODATA) {
		log_error_errno(r, "image refused: writer '%s' cannot read its header: %m",
				rs->writer->ops.name);
		return refuse(rs, REFUSAL_CORRUPT);
	}
	if (r < 0)
		return r;
	r = image_header_parse(rs->hdr, rs->hdr_len, &rs->h, err, sizeof(err));
	if (r < 0) {
		log_error("image refused: header: %s", err);
		return refuse(rs, REFUSAL_CORRUPT);
	}
	note_facts(rs->o, &rs->h);
	return 0;
}

static int
refuse_test_image(struct resume *rs)
{
	log_error("image refused: not resumable: test image (written by `torpor hibernate --test`, whose system kept running; restoring it would corrupt the filesystems)");
	return refuse(rs, REFUSAL_CORRUPT);
}

/*
 * The root filesystem was not mounted since the image was written
 * (format 3's guard): restoring memory over a filesystem changed since
 * loses data, so such an image is stale and never resumable.  A guard
 * that cannot judge (the filesystem is not visible: a root on a device
 * this initramfs has not brought up) lets the resume go on, said once.
 */
static int
check_root_guard(struct resume *rs)
{
	char msg[400];
	int r = root_guard_check(&rs->h.guard, msg, sizeof(msg));

	if (r == -ESTALE) {
		log_error("image refused: %s%s", msg,
			  rs->o->mode == RESUME_RESTORE ? " and is discarded" : "");
		rs->o->stale_root = true;
		return refuse(rs, REFUSAL_CORRUPT);
	}
	if (r < 0 && rs->o->mode != RESUME_INSPECT)
		log_notice("%s: note: %s", rs->what, msg);
	return 0;
}

/* This system can restore the image: its page size, its kernel, an
 * image whose system did not go on running, and a root filesystem not
 * mounted since. */
static int
resume_check(struct resume *rs)
{
	const struct image_header *h = &rs->h;
	struct snapshot probe = {
		.kind = host_kind_of_spec(rs->s->config->snapshot),
	};
	char release[65];
	struct utsname u;
	bool judges = snapshot_kernel_judges_image(&probe);
	bool other_build;
	int r;

	if (h->page_size != (uint32_t)sysconf(_SC_PAGESIZE)) {
		log_error("image refused: its page size is %u, this system's is %ld",
			  h->page_size, sysconf(_SC_PAGESIZE));
		return refuse(rs, REFUSAL_ELSEWHERE);
	}
	if (h->flags & IMAGE_FLAG_TEST) {
		/* verify still checks the stream, and says both. */
		rs->test_image = true;
		if (rs->o->mode != RESUME_VERIFY)
			return refuse_test_image(rs);
	}
	r = snapshot_running_release(&probe, release, sizeof(release));
	if (r < 0)
		return log_error_errno(r, "cannot tell the running kernel's release: %m");
	other_build = probe.kind == TORPOR_SNAPSHOT_KERNEL && uname(&u) == 0 &&
		      strcmp(u.version, h->kernel_version) != 0;
	rs->o->other_kernel = other_build ||
			      strcmp(release, h->kernel_release) != 0;
	if (rs->o->other_kernel && judges) {
		/* The kernel's own check decides, at the first page after
		 * the header (restore_pages()). */
		if (rs->o->mode != RESUME_INSPECT)
			log_notice("%s: the image was written by kernel %s%s%s%s, this is kernel %s%s%s%s: this kernel checks the image's architecture header itself and decides before any page of its data is handed over",
				   rs->what, h->kernel_release,
				   other_build ? " build '" : "",
				   other_build ? h->kernel_version : "",
				   other_build ? "'" : "", release,
				   other_build ? " build '" : "",
				   other_build ? u.version : "",
				   other_build ? "'" : "");
	} else if (strcmp(release, h->kernel_release) != 0) {
		log_error("image refused: it was written by kernel %s, this is kernel %s; boot %s to resume it",
			  h->kernel_release, release, h->kernel_release);
		rs->o->wrong_kernel = true;
		return refuse(rs, REFUSAL_ELSEWHERE);
	} else if (other_build) {
		log_error("image refused: it was written by kernel %s build '%s', this is build '%s'",
			  h->kernel_release, h->kernel_version, u.version);
		rs->o->wrong_kernel = true;
		return refuse(rs, REFUSAL_ELSEWHERE);
	}
	return check_root_guard(rs);
}

/* Chain entry i of the header: the plugin it names, in its place. */
static int
rebuild_entry(struct resume *rs, uint32_t i)
{
	const struct image_chain_entry *ce = &rs->h.chain[i];
	struct registry *reg = &rs->s->reg;
	struct plugin_entry *e = registry_find(reg, ce->name);

	if (i + 1 == rs->h.n_chain) {
		if (ce->type != TORPOR_PLUGIN_WRITER || !e || e != reg->active_writer) {
			log_error("image refused: it was written by writer '%s', the configured writer is '%s'",
				  ce->name, reg->active_writer->ops.name);
			return refuse(rs, REFUSAL_ELSEWHERE);
		}
		return 0;
	}
	if (ce->type != TORPOR_PLUGIN_FILTER) {
		log_error("image refused: chain position %u ('%s') is not a filter",
			  i, ce->name);
		return refuse(rs, REFUSAL_CORRUPT);
	}
	if (!e || e->ops.type != TORPOR_PLUGIN_FILTER) {
		log_error("image refused: it needs filter '%s' (chain position %u), which is not installed in %s",
			  ce->name, i, rs->s->plugin_dir);
		return refuse(rs, REFUSAL_ELSEWHERE);
	}
	e->disabled = false;
	/* Suspend2's move-to-tail reproduces the recorded order. */
	registry_move_tail(reg, e);
	return 0;
}

/* The chain the header names, each plugin with its saved configuration
 * (a filter's before its initialise(1), the writer's after). */
static int
resume_rebuild_chain(struct resume *rs)
{
	struct plugin_entry *e;
	uint32_t i;
	int r;

	for (e = rs->s->reg.filters_head; e; e = e->next_typed)
		e->disabled = true;
	for (i = 0; i < rs->h.n_chain; i++) {
		const struct image_chain_entry *ce = &rs->h.chain[i];

		r = rebuild_entry(rs, i);
		if (r != 0)
			return r;
		e = registry_find(&rs->s->reg, ce->name);
		r = plugin_load_config(e, ce->blob, ce->blob_len);
		if (r >= 0 && !e->initialised) {
			r = plugin_initialise(e, 1);
			/* As registry_initialise(): without an initialise()
			 * the plugin's cleanup() is still owed. */
			e->initialised = r >= 0;
		}
		if (r < 0)
			return judge_plugin_error(rs, r);
	}
	r = chain_setup(&rs->c, &rs->s->reg, rs->h.page_size, rs->h.chunk_pages);
	if (r < 0)
		return r;
	if (rs->c.n_filters + 1 != rs->h.n_chain) {
		log_error("image refused: the rebuilt chain has %zu filters, the header %u",
			  rs->c.n_filters, rs->h.n_chain - 1);
		return refuse(rs, REFUSAL_CORRUPT);
	}
	return 0;
}

/*
 * The writer holds every stored byte the header claims.  Its read() says
 * -ENODATA past the end of what it holds, and the stream is read in
 * pieces of STREAM_IO_SIZE: a header claiming more would fail the first
 * piece and read as a missing chunk 0, though chunk 0 is there.  One
 * byte at the claimed end tells; only when it is missing is the end the
 * writer has found, by bisection (at most 64 reads of a byte, for an
 * image that is refused anyway), so that both figures are said.
 */
static int
check_stored_bytes(struct resume *rs)
{
	uint64_t claimed = rs->h.stored_bytes, held = 0, missing = claimed;
	uint8_t byte;
	int r;

	if (claimed == 0)
		return 0;
	r = plugin_read(rs->writer, claimed - 1, &byte, 1);
	if (r != -ENODATA)
		return r < 0 ? judge_plugin_error(rs, r) : r;
	/* held bytes are there, missing are not. */
	while (missing - held > 1) {
		uint64_t mid = held + (missing - held) / 2;

		r = plugin_read(rs->writer, mid - 1, &byte, 1);
		if (r == -ENODATA)
			missing = mid;
		else if (r < 0)
			return r;
		else
			held = mid;
	}
	log_error("image refused: the header claims %" PRIu64 " stored bytes, more than the %" PRIu64 " bytes of stream that writer '%s' holds",
		  claimed, held, rs->writer->ops.name);
	return refuse(rs, REFUSAL_CORRUPT);
}

/*
 * The pool's threads within what this process may still take: its cgroups'
 * memory limits as well as the system's free memory (the kernel needs the
 * rest for the image's pages).  The pool and the read-ahead ring get at
 * most half of it, down to one thread; when even one does not fit, the
 * resume stops here, before anything was handed to the kernel.
 */
static int
resume_threads(const struct resume *rs, unsigned *ret)
{
	uint64_t fixed = (uint64_t)STREAM_READ_PIECES * STREAM_IO_SIZE, need;
	char limit[PATH_MAX];
	uint64_t room;
	unsigned t;

	t = session_pool_threads(rs->s, &rs->c, fixed, &room, limit,
				 sizeof(limit));
	need = pool_memory(&rs->c, t) + fixed;
	if (room && need > room)
		return log_error_errno(-ENOMEM, "not enough memory to resume: the buffers need %" PRIu64 " MiB and %s leaves %" PRIu64 " MiB",
				       (need >> 20) + 1, limit, room >> 20);
	*ret = t;
	return 0;
}

/* Everything the stream needs, allocated and touched before the freeze:
 * the chain's stream, the pool's buffers, the read-ahead ring.  Threads
 * come later (resume_stream): the freezer would stop them. */
static int
resume_prepare(struct resume *rs)
{
	unsigned threads = 1;
	int r;

	r = chain_start_stream(&rs->c, &rs->h);
	if (r < 0)
		return judge_plugin_error(rs, r);
	r = resume_threads(rs, &threads);
	if (r < 0)
		return r;
	r = pool_init(&rs->pool, &rs->c, POOL_DECODE, threads);
	if (r >= 0)
		r = stream_in_init(&rs->in, rs->writer, rs->h.stored_bytes);
	if (r < 0)
		return r;
	rs->in.report = (struct stream_report){
		.fn = rs->o->progress,
		.ctx = rs->o->progress_ctx,
		.what = rs->what,
	};
	return 0;
}

static void
print_verified(const struct resume *rs)
{
	uint32_t i;

	progress_print_summary(rs->what, rs->h.page_count, rs->h.page_size,
			       rs->h.stored_bytes, clock_now() - rs->t0);
	printf("verify: image is intact: %" PRIu64 " chunks, chain",
	       rs->h.chunk_count);
	for (i = 0; i < rs->h.n_chain; i++)
		printf(" %s", rs->h.chain[i].name);
	printf("\n");
}

/* The freezer stops every task but the one that asks for the freeze, our
 * worker threads included: they start once user space is frozen (threads
 * created then are not frozen). */
static int
resume_freeze(struct resume *rs)
{
	int r;

	r = snapshot_open(rs->s->config->snapshot, SNAPSHOT_MODE_RESUME, &rs->snap);
	if (r < 0)
		return r;
	r = rs->snap->ops->freeze(rs->snap);
	if (r < 0)
		return log_error_errno(r, "could not freeze user space: %m");
	rs->frozen = true;
	return 0;
}

/*
 * The snapshot's own first page (struct swsusp_info) must describe the
 * image the header describes: a header whose page count or kernel was
 * changed with a valid checksum, or a stream cut to whole chunks, is
 * caught here, before any page is handed on.  Chunk 0 is at stream
 * offset 0.
 */
static int
check_first_page(struct resume *rs, const uint8_t *pages, size_t len)
{
	const struct image_header *h = &rs->h;
	struct snapshot_info si;

	rs->first_checked = true;
	if (len < h->page_size ||
	    snapshot_parse_info(pages, h->page_size, &si) < 0) {
		log_error("chunk 0 at stream offset 0: the image's first page is not a snapshot header");
		return -EBADMSG;
	}
	if (si.pages != h->page_count) {
		log_error("chunk 0 at stream offset 0: the snapshot's first page says %" PRIu64 " pages, the image header %" PRIu64,
			  si.pages, h->page_count);
		return -EBADMSG;
	}
	/* An x86 kernel's first page names no kernel (its architecture
	 * header stands there): the kernel checks that one itself. */
	if (!si.arch_header && strcmp(si.release, h->kernel_release) != 0) {
		log_error("chunk 0 at stream offset 0: the snapshot's first page says kernel %s, the image header %s",
			  si.release, h->kernel_release);
		return -EBADMSG;
	}
	return 0;
}

/* verify's sink: the pages go nowhere, but the first one is checked. */
static int
check_pages(void *ctx, const uint8_t *pages, size_t len)
{
	struct resume *rs = ctx;

	return rs->first_checked ? 0 : check_first_page(rs, pages, len);
}

/* The kernel checks the image's header page when it is asked for the next
 * page (kernel/power/snapshot.c: snapshot_write_next() calls load_header()
 * before it takes a byte of page 1): an -EPERM for one of the first two
 * pages means this kernel does not accept the image, which another
 * kernel or machine configuration could.  Only the header page was
 * handed over then; the kernel frees it when the device is closed. */
#define RESTORE_CHECKED_PAGES 2

/* The kernel refused the image's header: say so with its own words. */
static int
say_kernel_refused(struct resume *rs, int r)
{
	const struct image_header *h = &rs->h;
	const char *said = rs->snap->refusal_said[0] ? rs->snap->refusal_said :
			   "nothing torpor could read in its log";
	struct snapshot probe = { .kind = rs->snap->kind };
	char release[65];

	rs->kernel_refused = true;
	rs->o->wrong_kernel = rs->o->other_kernel;
	if (snapshot_running_release(&probe, release, sizeof(release)) < 0)
		snprintf(release, sizeof(release), "?");
	if (rs->o->other_kernel)
		return log_error_errno(r, "image refused by the kernel: it was written by kernel %s, and kernel %s does not accept it (the write of page %" PRIu64 ", the first after the image's header, failed: %m); the kernel said: %s; boot %s to resume it",
				       h->kernel_release, release, rs->pages,
				       said, h->kernel_release);
	return log_error_errno(r, "image refused by the kernel: it does not accept the image's header (the write of page %" PRIu64 " failed: %m); the kernel said: %s; it was written on a machine with another memory size, memory map or CPU",
			       rs->pages, said);
}

static int
restore_pages(void *ctx, const uint8_t *pages, size_t len)
{
	struct resume *rs = ctx;
	size_t off;
	int r;

	if (!rs->first_checked) {
		r = check_first_page(rs, pages, len);
		if (r < 0)
			return r;
	}
	off = 0;
	while (off < len) {
		ssize_t k;

		/* After the pages the kernel checks first, in batches (one
		 * system call each with the kernel's device): a short one is
		 * followed by the one-page call that says why. */
		if (rs->pages >= RESTORE_CHECKED_PAGES) {
			k = rs->snap->ops->write_pages(rs->snap, pages + off,
						       (len - off) / rs->snap->page_size);
			if (k > 0 && (size_t)k % rs->snap->page_size == 0) {
				rs->pages += (size_t)k / rs->snap->page_size;
				off += (size_t)k;
				continue;
			}
			if (k > 0)
				k = -EIO;
		} else {
			k = rs->snap->ops->write_page(rs->snap, pages + off);
		}
		if (k == -EPERM && rs->pages < RESTORE_CHECKED_PAGES)
			return say_kernel_refused(rs, (int)k);
		if (k < 0)
			return log_error_errno((int)k, "the snapshot device refused page %" PRIu64 ": %m",
					       rs->pages);
		if (k == 0)
			return log_error_errno(-EPERM, "the snapshot device says the image is complete after %" PRIu64 " pages",
					       rs->pages);
		rs->pages++;
		off += rs->snap->page_size;
	}
	return 0;
}

/*
 * One write() more once every page is in, which must say that the image
 * is complete (0), as the kernel's own loader asks until it does.  Since
 * 6.6 the kernel leaves zero pages out of the image and clears them as
 * it walks past them when it is asked for the next page: zero pages at
 * the end of the image are only cleared by that last request (kernels
 * before a 2026 stable fix did not do it at the restore), and a resumed
 * system would otherwise run with whatever they held.
 */
static int
drain_device(struct resume *rs)
{
	uint8_t *zero = calloc(1, rs->snap->page_size);
	ssize_t k;

	if (!zero)
		return -ENOMEM;
	k = rs->snap->ops->write_page(rs->snap, zero);
	free(zero);
	if (k < 0)
		return log_error_errno((int)k, "the snapshot device refused the end of the image after %" PRIu64 " pages: %m",
				       rs->pages);
	if (k > 0)
		return log_error_errno(-EPERM, "the snapshot device wants more than the image's %" PRIu64 " pages",
				       rs->pages);
	return 0;
}

/* From here on a failure must never be retried at the next boot. */
static int
invalidate_before_restore(struct resume *rs)
{
	int r;

	if (rs->gone)
		return 0;
	/* The record it leaves lets the resumed system read the slot. */
	r = plugin_consume(rs->writer, rs->h.uuid);
	if (r < 0) {
		log_error("not resuming: the image could not be invalidated first");
		return r;
	}
	rs->gone = true;
	return 0;
}

/*
 * The one pass: every chunk read, checked and decoded once; for a resume
 * its pages go to the snapshot device as they come.  The kernel keeps
 * them until the atomic restore and drops them all when the device is
 * closed without it, so a chunk refused half-way leaves nothing behind
 * but the image, as it was.  Only once every page is in and every chunk
 * verified is the image invalidated: nothing is ever restored twice.
 */
static int
resume_stream(struct resume *rs)
{
	bool restore = rs->o->mode == RESUME_RESTORE;
	int r;

	r = pool_start(&rs->pool);
	if (r < 0)
		return r;
	r = stream_decode_all(&rs->c, &rs->pool, &rs->in, &rs->h,
			      restore ? restore_pages : check_pages, rs);
	pool_stop(&rs->pool);
	rs->o->chunks_in_place = rs->in.in_place;
	if (r < 0 && rs->kernel_refused)
		return refuse(rs, REFUSAL_ELSEWHERE);
	if (r == -EBADMSG || r == -EPERM)
		return refuse(rs, REFUSAL_CORRUPT);
	if (r < 0 || !restore)
		return r;
	if (rs->pages != rs->h.page_count)
		return log_error_errno(-EIO, "handed %" PRIu64 " of %" PRIu64 " pages",
				       rs->pages, rs->h.page_count);
	r = drain_device(rs);
	if (r < 0)
		return r;
	return invalidate_before_restore(rs);
}

/* Leave the statistics for the resumed system, then jump into it. */
static int
resume_restore(struct resume *rs)
{
	struct image_header *h = &rs->h;
	int r;

	resume_phase(rs, RESUME_PHASE_RESTORE);
	if (rs->o->verbose)
		progress_print_phases(rs->what, phase_names, rs->o->times,
				      RESUME_PHASE_RESTORE);
	h->stats.resumed_at = (uint64_t)time(NULL);
	h->stats.read_usec = (uint64_t)(rs->o->times[RESUME_PHASE_READ] * 1e6);
	h->stats.pages_restored = rs->pages;
	h->stats.stored_bytes_read = rs->in.bytes_read;
	rs->o->stats = h->stats;
	if (image_header_set_stats(rs->hdr, rs->hdr_len, &h->stats) == 0)
		plugin_rewrite_header(rs->writer, rs->hdr, rs->hdr_len);
	progress_print_summary(rs->what, h->page_count, h->page_size,
			       h->stored_bytes, clock_now() - rs->t0);
	r = rs->snap->ops->atomic_restore(rs->snap);
	resume_phase(rs, RESUME_PHASE_RESTORE);
	/* With the kernel we only get here when the restore failed. */
	if (r < 0) {
		log_error_errno(r, "the restore failed: %m");
		return r == -EPERM ? refuse(rs, REFUSAL_CORRUPT) : r;
	}
	printf("resume: %" PRIu64 " pages restored and verified\n",
	       rs->snap->pages_verified);
	return 0;
}

bool
resume_left_resumable_image(const struct resume_options *o, int r)
{
	if (o->mode != RESUME_RESTORE || !o->image_left)
		return false;
	if (r == EXIT_REFUSED)
		return o->refusal != REFUSAL_CORRUPT;
	return r < 0;
}

/* A refusal, said once: what became of the pages and of the image
 * (given_back: the writer's refused() is about to take its storage). */
static void
say_refused(const struct resume *rs, bool given_back)
{
	const char *image = rs->o->mode != RESUME_RESTORE ? "" :
		rs->gone ? "; the image was invalidated" :
		given_back && rs->o->stale_root ? "; the stale image can never be resumed: its storage goes back to the system" :
		given_back ? "; the damaged image can never be resumed: its storage goes back to the system" :
		"; the image was left as it was";

	if (!rs->snap || rs->pages == 0)
		log_error("image refused: nothing was handed to the snapshot device%s",
			  image);
	else
		log_error("image refused: nothing was restored (the %" PRIu64 " %s handed to the snapshot device %s dropped with it)%s",
			  rs->pages, rs->pages == 1 ? "page" : "pages",
			  rs->pages == 1 ? "is" : "are", image);
}

/* The one cleanup path. */
static int
resume_end(struct resume *rs, int r)
{
	bool give_back;

	if (r == RESUME_DONE)
		r = 0;
	if (r != EXIT_REFUSED)
		rs->o->refusal = REFUSAL_NONE;
	rs->o->image_left = rs->found && !rs->gone;
	rs->o->pages_handed = rs->pages;
	rs->o->restored = r == 0 && rs->snap && rs->snap->restored;
	/* Only an image that can never be resumed gives its storage back
	 * here (unless its invalidation did already); for one the right
	 * kernel or key could still resume, the caller decides (keep it
	 * and power off, or discard it). */
	give_back = r == EXIT_REFUSED && rs->o->refusal == REFUSAL_CORRUPT &&
		    rs->o->mode == RESUME_RESTORE && !rs->gone;
	if (r == EXIT_REFUSED && rs->o->mode != RESUME_INSPECT)
		say_refused(rs, give_back && rs->writer->writer.refused);
	/* Workers started after the freeze must be gone before the thaw
	 * (thaw_processes warns about them otherwise). */
	pool_stop(&rs->pool);
	/* Closed without the restore, the device drops every page it was
	 * given: the same as if none had been. */
	if (rs->frozen) {
		pool_wait_threads_gone();
		rs->snap->ops->unfreeze(rs->snap);
	}
	snapshot_close(rs->snap);
	rs->snap = NULL;
	if (give_back)
		plugin_refused(rs->writer);
	stream_in_free(&rs->in);
	pool_free(&rs->pool);
	/* The image info and its binding stay valid until cleanup() (ABI). */
	registry_cleanup(&rs->s->reg, 1);
	chain_release(&rs->c);
	if (rs->got)
		registry_put(&rs->s->reg);
	image_header_clear(&rs->h);
	free(rs->hdr);
	return r;
}

int
resume_run(struct torpor_session *s, struct resume_options *o)
{
	struct resume rs = {
		.s = s,
		.o = o,
		.writer = s->reg.active_writer,
		.what = o->mode == RESUME_VERIFY ? "verify" : "resume",
		.t0 = clock_now(),
		.phase = RESUME_PHASE_HEADER,
	};
	double age = proc_process_age();
	int r;

	rs.phase_t0 = rs.t0;
	memset(o->times, 0, sizeof(o->times));
	o->times[RESUME_PHASE_START] = age > 0 ? age : 0;
	o->refusal = REFUSAL_NONE;
	o->header_valid = false;
	o->stale_root = false;
	o->other_kernel = false;
	o->wrong_kernel = false;
	memset(&o->stats, 0, sizeof(o->stats));
	r = resume_find(&rs);
	if (r == 0)
		r = resume_read_header(&rs);
	if (r == 0)
		r = resume_check(&rs);
	if (r == 0)
		r = resume_rebuild_chain(&rs);
	if (r == 0 && o->mode == RESUME_INSPECT)
		r = RESUME_DONE;
	if (r == 0)
		r = check_stored_bytes(&rs);
	if (r == 0)
		r = resume_prepare(&rs);
	if (r == 0)
		resume_phase(&rs, RESUME_PHASE_READ);
	if (r == 0 && o->mode == RESUME_RESTORE)
		r = resume_freeze(&rs);
	if (r == 0)
		r = resume_stream(&rs);
	if (r == 0 && o->mode == RESUME_VERIFY && rs.test_image)
		r = refuse_test_image(&rs);
	if (r == 0 && o->mode == RESUME_VERIFY) {
		print_verified(&rs);
		r = RESUME_DONE;
	}
	if (r == 0)
		r = resume_restore(&rs);
	/* The phase running when the run stopped (the restore's own time
	 * was taken when it returned). */
	if (rs.phase != RESUME_PHASE_RESTORE)
		resume_phase(&rs, rs.phase);
	return resume_end(&rs, r);
}
