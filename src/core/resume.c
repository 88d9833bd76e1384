/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "chain.h"
#include "host.h"
#include "log.h"
#include "pool.h"
#include "resume.h"
#include "snapshot.h"
#include "stream.h"

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

/* A quarter of the available memory may hold the stored stream between the
 * checking pass and the restoring pass; otherwise it is read twice. */
static uint64_t
cache_limit(void)
{
	return session_meminfo("MemAvailable") / 4;
}

static enum resume_refusal refusal;

static int
refuse(enum resume_refusal why)
{
	refusal = why;
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

static int
check_kernel(const struct torpor_session *s, const struct image_header *h)
{
	struct snapshot probe = {
		.kind = host_kind_of_spec(s->config->snapshot),
	};
	char release[65];
	struct utsname u;
	int r;

	r = snapshot_running_release(&probe, release, sizeof(release));
	if (r < 0)
		return log_error_errno(r, "cannot tell the running kernel's release: %m");
	if (strcmp(release, h->kernel_release) != 0) {
		log_error("image refused: it was written by kernel %s, this is kernel %s; boot %s to resume it",
			  h->kernel_release, release, h->kernel_release);
		return refuse(REFUSAL_ELSEWHERE);
	}
	if (probe.kind == TORPOR_SNAPSHOT_KERNEL && uname(&u) == 0 &&
	    strcmp(u.version, h->kernel_version) != 0) {
		log_error("image refused: it was written by kernel %s build '%s', this is build '%s'",
			  h->kernel_release, h->kernel_version, u.version);
		return refuse(REFUSAL_ELSEWHERE);
	}
	return 0;
}

/* The codes a plugin uses to say "this image is not acceptable". */
static bool
is_refusal(int r)
{
	return r == -EBADMSG || r == -EKEYREJECTED || r == -ENOKEY ||
	       r == -EPROTONOSUPPORT || r == -EKEYREVOKED || r == -EPERM;
}

static int
rebuild_chain(struct torpor_session *s, const struct image_header *h)
{
	struct plugin_entry *e;
	uint32_t i;
	int r;

	for (e = s->reg.filters_head; e; e = e->next_typed)
		e->disabled = true;
	for (i = 0; i < h->n_chain; i++) {
		const struct image_chain_entry *ce = &h->chain[i];
		bool last = i + 1 == h->n_chain;

		e = registry_find(&s->reg, ce->name);
		if (last) {
			if (ce->type != TORPOR_PLUGIN_WRITER || !e ||
			    e != s->reg.active_writer) {
				log_error("image refused: it was written by writer '%s', the configured writer is '%s'",
					  ce->name, s->reg.active_writer->ops.name);
				return refuse(REFUSAL_ELSEWHERE);
			}
		} else {
			if (ce->type != TORPOR_PLUGIN_FILTER) {
				log_error("image refused: chain position %u ('%s') is not a filter",
					  i, ce->name);
				return refuse(REFUSAL_CORRUPT);
			}
			if (!e || e->ops.type != TORPOR_PLUGIN_FILTER) {
				log_error("image refused: it needs filter '%s' (chain position %u), which is not installed in %s",
					  ce->name, i, s->plugin_dir);
				return refuse(REFUSAL_ELSEWHERE);
			}
			e->disabled = false;
			/* Suspend2's move-to-tail reproduces the recorded order. */
			registry_move_tail(&s->reg, e);
		}
		if (e->ops.load_config) {
			r = e->ops.load_config(ce->blob, ce->blob_len);
			if (r < 0) {
				log_error_errno(r, "image refused: plugin '%s' cannot use its saved configuration: %m",
						ce->name);
				return is_refusal(r) ? refuse(classify(r)) : r;
			}
		} else if (ce->blob_len) {
			log_error("image refused: plugin '%s' saved a configuration it cannot load",
				  ce->name);
			return refuse(REFUSAL_CORRUPT);
		}
		if (!last && !e->initialised) {
			r = e->ops.initialise ? e->ops.initialise(1) : 0;
			if (r < 0) {
				log_error_errno(r, "plugin '%s' did not initialise: %m", ce->name);
				return is_refusal(r) ? refuse(classify(r)) : r;
			}
			/* As registry_initialise(): without an initialise()
			 * the plugin's cleanup() is still owed. */
			e->initialised = true;
		}
	}
	return 0;
}

struct restore_ctx {
	struct snapshot *snap;
	struct plugin_entry *writer;
	uint64_t pages;
	bool *gone;		/* the image has been invalidated */
	bool kernel_refused;	/* before invalidation: header mismatch */
};

/* The kernel checks the image's header page when it is asked for the next
 * page: once two pages are in, this kernel accepts the image. */
#define RESTORE_CHECKED_PAGES 2

/* From here on a failure must never be retried at the next boot. */
static int
invalidate_before_restore(struct restore_ctx *rc)
{
	int r;

	if (*rc->gone)
		return 0;
	r = rc->writer->ops.invalidate();
	if (r < 0)
		return log_error_errno(r, "could not invalidate the image before restoring it; not resuming: %m");
	*rc->gone = true;
	return 0;
}

static int
restore_pages(void *ctx, const uint8_t *pages, size_t len)
{
	struct restore_ctx *rc = ctx;
	size_t off;

	for (off = 0; off < len; off += rc->snap->page_size) {
		ssize_t k = rc->snap->ops->write_page(rc->snap, pages + off);

		if (k < 0 && !*rc->gone && k == -EPERM) {
			rc->kernel_refused = true;
			return log_error_errno((int)k,
				"image refused: the kernel does not accept its header (page %" PRIu64 "): it was written on a machine with another memory size, CPU or kernel build",
				rc->pages);
		}
		if (k < 0)
			return log_error_errno((int)k, "the snapshot device refused page %" PRIu64 ": %m",
					       rc->pages);
		if (k == 0)
			return log_error_errno(-EPERM, "the snapshot device says the image is complete after %" PRIu64 " pages",
					       rc->pages);
		rc->pages++;
		if (rc->pages == RESTORE_CHECKED_PAGES) {
			int r = invalidate_before_restore(rc);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int
read_header(struct plugin_entry *writer, struct image_header *h,
	    uint8_t **ret_buf, size_t *ret_len)
{
	uint8_t *buf = malloc(IMAGE_MAX_HEADER);
	char err[200];
	size_t len = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = writer->ops.read_header(buf, IMAGE_MAX_HEADER, &len);
	if (r < 0) {
		free(buf);
		if (r == -EBADMSG || r == -EMSGSIZE || r == -ENODATA) {
			log_error_errno(r, "image refused: writer '%s' cannot read its header: %m",
					writer->ops.name);
			return refuse(REFUSAL_CORRUPT);
		}
		return log_error_errno(r, "writer '%s' cannot read the image header: %m",
				       writer->ops.name);
	}
	r = image_header_parse(buf, len, h, err, sizeof(err));
	if (r < 0) {
		free(buf);
		log_error("image refused: header: %s", err);
		return refuse(REFUSAL_CORRUPT);
	}
	*ret_buf = buf;
	*ret_len = len;
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

int
resume_run(struct torpor_session *s, struct resume_options *o)
{
	struct plugin_entry *writer = s->reg.active_writer;
	const char *what = o->mode == RESUME_VERIFY ? "verify" : "resume";
	struct image_header h;
	struct chain c;
	struct pool pool;
	bool pool_up = false;
	struct stream_in in;
	struct snapshot *snap = NULL;
	struct restore_ctx rc = { 0 };
	uint8_t *hdr = NULL;
	size_t hdr_len = 0;
	bool got = false, frozen = false, refused = false;
	bool found = false, gone = false;
	double t0 = session_now();
	int r;

	memset(&h, 0, sizeof(h));
	memset(&c, 0, sizeof(c));
	memset(&in, 0, sizeof(in));
	refusal = REFUSAL_NONE;
	o->refusal = REFUSAL_NONE;
	o->image_left = false;

	r = registry_get(&s->reg);
	if (r < 0)
		return log_error_errno(r, "a plugin is being unloaded; try again");
	got = true;
	r = registry_initialise(&s->reg, 1);
	if (r < 0)
		goto out;

	r = writer->ops.find();
	if (r < 0) {
		log_error_errno(r, "writer '%s' cannot look for an image: %m",
				writer->ops.name);
		goto out;
	}
	if (r == 0) {
		printf("%s: no image found\n", what);
		r = 0;
		goto out;
	}
	found = true;
	if (o->noresume && o->mode == RESUME_RESTORE) {
		r = writer->ops.invalidate();
		gone = r >= 0;
		if (r < 0)
			log_error_errno(r, "noresume: could not discard the image: %m");
		else
			printf("%s: noresume given: image discarded, booting normally\n", what);
		goto out;
	}

	r = read_header(writer, &h, &hdr, &hdr_len);
	if (r != 0)
		goto out_refused;
	if (h.page_size != (uint32_t)sysconf(_SC_PAGESIZE)) {
		log_error("image refused: its page size is %u, this system's is %ld",
			  h.page_size, sysconf(_SC_PAGESIZE));
		r = refuse(REFUSAL_ELSEWHERE);
		goto out_refused;
	}
	if ((h.flags & IMAGE_FLAG_TEST) && o->mode == RESUME_RESTORE) {
		/* Its system thawed and went on running after writing it. */
		log_error("image refused: it was written by `torpor hibernate --test`, whose system kept running; restoring it would corrupt the filesystems");
		r = refuse(REFUSAL_CORRUPT);
		goto out_refused;
	}
	r = check_kernel(s, &h);
	if (r != 0)
		goto out_refused;
	r = rebuild_chain(s, &h);
	if (r != 0)
		goto out_refused;
	r = chain_setup(&c, &s->reg, h.page_size, h.chunk_pages);
	if (r < 0)
		goto out;
	if (c.n_filters + 1 != h.n_chain) {
		log_error("image refused: the rebuilt chain has %zu filters, the header %u",
			  c.n_filters, h.n_chain - 1);
		r = refuse(REFUSAL_CORRUPT);
		goto out_refused;
	}
	r = chain_start_stream(&c, &h);
	if (r < 0) {
		r = is_refusal(r) ? refuse(classify(r)) : r;
		goto out_refused;
	}
	r = pool_init(&pool, &c, POOL_DECODE, session_threads(s));
	if (r < 0)
		goto out;
	pool_up = true;
	r = stream_in_init(&in, writer, h.stored_bytes,
			   o->mode == RESUME_VERIFY ? 0 : cache_limit());
	if (r < 0)
		goto out;

	/* Pass 1: every chunk read, checked and decoded before anything is
	 * changed or handed to the kernel. */
	r = stream_decode_all(&c, &pool, &in, &h, NULL, NULL);
	if (r < 0) {
		if (r == -EBADMSG) {
			r = refuse(REFUSAL_CORRUPT);
			goto out_refused;
		}
		goto out;
	}
	if (o->mode == RESUME_VERIFY) {
		session_print_summary(what, h.page_count, h.page_size,
				   h.stored_bytes, session_now() - t0);
		printf("verify: image is intact: %" PRIu64 " chunks, chain", h.chunk_count);
		for (uint32_t i = 0; i < h.n_chain; i++)
			printf(" %s", h.chain[i].name);
		printf("\n");
		r = 0;
		goto out;
	}

	/* The freezer stops every task but the one that asks for the
	 * freeze, our worker threads included: they are started again once
	 * user space is frozen (threads created then are not frozen). */
	pool_free(&pool);
	pool_up = false;
	r = snapshot_open(s->config->snapshot, SNAPSHOT_MODE_RESUME, &snap);
	if (r < 0)
		goto out;
	r = snap->ops->freeze(snap);
	if (r < 0) {
		log_error_errno(r, "could not freeze user space: %m");
		goto out;
	}
	frozen = true;
	r = pool_init(&pool, &c, POOL_DECODE, session_threads(s));
	if (r < 0)
		goto out;
	pool_up = true;
	stream_in_rewind(&in);
	rc.snap = snap;
	rc.writer = writer;
	rc.gone = &gone;
	/* The image is invalidated once the kernel has accepted its header
	 * (restore_pages), so that an image for another machine
	 * configuration is kept, and nothing is ever restored twice. */
	r = stream_decode_all(&c, &pool, &in, &h, restore_pages, &rc);
	if (r >= 0)
		r = invalidate_before_restore(&rc);
	if (r < 0) {
		if (rc.kernel_refused)
			r = refuse(REFUSAL_ELSEWHERE);
		else if (r == -EBADMSG || r == -EPERM)
			r = refuse(REFUSAL_CORRUPT);
		goto out;
	}
	if (rc.pages != h.page_count) {
		r = log_error_errno(-EIO, "handed %" PRIu64 " of %" PRIu64 " pages",
				    rc.pages, h.page_count);
		goto out;
	}
	if (writer->ops.rewrite_header) {
		h.stats.resumed_at = (uint64_t)time(NULL);
		h.stats.read_usec = (uint64_t)((session_now() - t0) * 1e6);
		h.stats.pages_restored = rc.pages;
		h.stats.stored_bytes_read = in.bytes_read;
		if (image_header_set_stats(hdr, hdr_len, &h.stats) == 0)
			writer->ops.rewrite_header(hdr, hdr_len);
	}
	session_print_summary(what, h.page_count, h.page_size, h.stored_bytes,
			   session_now() - t0);
	r = snap->ops->atomic_restore(snap);
	/* With the kernel we only get here when the restore failed. */
	if (r < 0) {
		log_error_errno(r, "the restore failed: %m");
		r = r == -EPERM ? refuse(REFUSAL_CORRUPT) : r;
		goto out;
	}
	printf("resume: %" PRIu64 " pages restored and verified\n",
	       snap->pages_verified);
	r = 0;
	goto out;

out_refused:
	refused = r == EXIT_REFUSED;
	if (refused)
		log_error("image refused: nothing was handed to the snapshot device%s",
			  o->mode == RESUME_RESTORE ? "; the image was left as it was" : "");
out:
	o->refusal = r == EXIT_REFUSED ? refusal : REFUSAL_NONE;
	o->image_left = found && !gone;
	/* Only an image that can never be resumed gives its storage back
	 * here; for one the right kernel or key could still resume, the
	 * caller decides (keep it and power off, or discard it). */
	if (refused && refusal == REFUSAL_CORRUPT && o->mode == RESUME_RESTORE &&
	    writer->ops.refused)
		writer->ops.refused();
	if (frozen)
		snap->ops->unfreeze(snap);
	snapshot_close(snap);
	stream_in_free(&in);
	if (pool_up)
		pool_free(&pool);
	/* The image info and its binding stay valid until cleanup() (ABI). */
	registry_cleanup(&s->reg, 1);
	chain_release(&c);
	if (got)
		registry_put(&s->reg);
	image_header_clear(&h);
	free(hdr);
	return r;
}
