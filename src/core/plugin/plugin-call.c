/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "log.h"
#include "plugin-call.h"
#include "plugin-names.h"

/* Method m of e's kind struct, or NULL when e is of another kind: the
 * kind structs share their storage in plugin_entry, so a writer's field
 * must never be read as a filter's. */
#define FILTER_METHOD(e, m) \
	((e)->ops.type == TORPOR_PLUGIN_FILTER ? (e)->filter.m : NULL)
#define WRITER_METHOD(e, m) \
	((e)->ops.type == TORPOR_PLUGIN_WRITER ? (e)->writer.m : NULL)
#define MISC_METHOD(e, m) \
	((e)->ops.type == TORPOR_PLUGIN_MISC ? (e)->misc.m : NULL)

static const char *
name_of(const struct plugin_entry *e)
{
	return e->ops.name ? e->ops.name : "(unnamed)";
}

/* The one message of a failed call: "writer 'raw' cannot read its header
 * (read_header): Bad message".  Returns r. */
static int __attribute__((format(printf, 4, 5)))
failed(const struct plugin_entry *e, const char *method, int r,
       const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return log_error_errno(r, "%s '%s' %s (%s): %m",
			       plugin_type_name(e->ops.type), name_of(e),
			       what, method);
}

/* A required method the loader should have refused to load without. */
static int
missing(const struct plugin_entry *e, const char *method)
{
	return failed(e, method, -ENOSYS, "lacks a required method");
}

int
plugin_load(const struct plugin_entry *e, const struct torpor_host *host)
{
	return e->ops.load ? e->ops.load(host) : 0;
}

void
plugin_unload(const struct plugin_entry *e)
{
	if (e->ops.unload)
		e->ops.unload();
}

int
plugin_initialise(const struct plugin_entry *e, int starting_cycle)
{
	int r = e->ops.initialise ? e->ops.initialise(starting_cycle) : 0;

	return r < 0 ? failed(e, "initialise", r, "did not initialise") : 0;
}

void
plugin_cleanup(const struct plugin_entry *e, int finishing_cycle)
{
	if (e->ops.cleanup)
		e->ops.cleanup(finishing_cycle);
}

int
plugin_start_stream(const struct plugin_entry *e,
		    const struct torpor_image_info *info)
{
	int (*fn)(const struct torpor_image_info *info) =
		FILTER_METHOD(e, start_stream) ? e->filter.start_stream :
						 WRITER_METHOD(e, start_stream);
	int r = fn ? fn(info) : 0;

	return r < 0 ? failed(e, "start_stream", r,
			      "could not start the image stream") : 0;
}

size_t
plugin_memory_needed(const struct plugin_entry *e)
{
	return e->ops.memory_needed ? e->ops.memory_needed() : 0;
}

size_t
plugin_storage_needed(const struct plugin_entry *e)
{
	return e->ops.storage_needed ? e->ops.storage_needed() : 0;
}

int
plugin_save_config(const struct plugin_entry *e, uint8_t *buf, size_t size)
{
	int r;

	if (!e->ops.save_config)
		return 0;
	r = e->ops.save_config(buf, size);
	if (r < 0)
		return failed(e, "save_config", r,
			      "could not save its configuration");
	if ((size_t)r > size)
		return failed(e, "save_config", -EOVERFLOW,
			      "wrote %d bytes, past its %zu bytes of header storage",
			      r, size);
	return r;
}

int
plugin_load_config(const struct plugin_entry *e, const uint8_t *buf,
		   size_t len)
{
	int r;

	if (!e->ops.load_config)
		return len == 0 ? 0 : failed(e, "load_config", -EBADMSG,
			"saved a configuration it cannot load");
	r = e->ops.load_config(buf, len);
	return r < 0 ? failed(e, "load_config", r,
			      "cannot use its saved configuration") : 0;
}

int
plugin_print_debug_info(const struct plugin_entry *e, char *buf, size_t size)
{
	return e->ops.print_debug_info ? e->ops.print_debug_info(buf, size) :
					 -EOPNOTSUPP;
}

size_t
plugin_max_encoded_size(const struct plugin_entry *e, size_t in_len)
{
	return FILTER_METHOD(e, max_encoded_size) ?
	       e->filter.max_encoded_size(in_len) : 0;
}

uint32_t
plugin_expected_ratio(const struct plugin_entry *e)
{
	return FILTER_METHOD(e, expected_ratio) ?
	       e->filter.expected_ratio() : 1000;
}

int
plugin_thread_init(const struct plugin_entry *e, void **ret_state)
{
	int r;

	*ret_state = NULL;
	if (!FILTER_METHOD(e, thread_init))
		return 0;
	r = e->filter.thread_init(ret_state);
	return r < 0 ? failed(e, "thread_init", r, "could not set up a thread") : 0;
}

void
plugin_thread_free(const struct plugin_entry *e, void *state)
{
	if (FILTER_METHOD(e, thread_free) && state)
		e->filter.thread_free(state);
}

typedef int (*chunk_method)(void *state, const struct torpor_chunk_info *info,
			    const uint8_t *in, size_t in_len, uint8_t *out,
			    size_t out_size, size_t *ret_len);

/* encode() or decode() of one chunk.  Their output must fit out_size;
 * encode()'s must not be empty, and decode()'s overflowing it means the
 * input was corrupt. */
static int
run_chunk(const struct plugin_entry *e, bool encode, void *state,
	  const struct torpor_chunk_info *info, const uint8_t *in,
	  size_t in_len, uint8_t *out, size_t out_size, size_t *ret_len)
{
	chunk_method fn = encode ? FILTER_METHOD(e, encode) :
				   FILTER_METHOD(e, decode);
	const char *method = encode ? "encode" : "decode";
	size_t len = 0;
	int r;

	if (!fn)
		return missing(e, method);
	r = fn(state, info, in, in_len, out, out_size, &len);
	if (r >= 0 && encode && (len == 0 || len > out_size))
		return failed(e, method, -EIO,
			      "produced %zu bytes for chunk %llu (bound %zu)",
			      len, (unsigned long long)info->sequence, out_size);
	if (r >= 0 && len > out_size)
		r = -EBADMSG;
	if (r == -EBADMSG && !encode)
		return failed(e, method, r,
			      "refused chunk %llu: corrupt or tampered data",
			      (unsigned long long)info->sequence);
	if (r < 0)
		return failed(e, method, r, "failed on chunk %llu",
			      (unsigned long long)info->sequence);
	*ret_len = len;
	return 0;
}

int
plugin_encode(const struct plugin_entry *e, void *state,
	      const struct torpor_chunk_info *info,
	      const uint8_t *in, size_t in_len,
	      uint8_t *out, size_t out_size, size_t *ret_len)
{
	return run_chunk(e, true, state, info, in, in_len, out, out_size,
			 ret_len);
}

int
plugin_decode(const struct plugin_entry *e, void *state,
	      const struct torpor_chunk_info *info,
	      const uint8_t *in, size_t in_len,
	      uint8_t *out, size_t out_size, size_t *ret_len)
{
	return run_chunk(e, false, state, info, in, in_len, out, out_size,
			 ret_len);
}

int
plugin_reserve(const struct plugin_entry *e, uint64_t expected_bytes)
{
	int r;

	if (!WRITER_METHOD(e, reserve))
		return missing(e, "reserve");
	r = e->writer.reserve(expected_bytes);
	if (r < 0 && r != -ENOSPC)
		return failed(e, "reserve", r, "could not reserve %llu MiB",
			      (unsigned long long)(expected_bytes >> 20));
	return r < 0 ? r : 0;
}

int
plugin_write(const struct plugin_entry *e, const void *buf, size_t len)
{
	int r;

	if (!WRITER_METHOD(e, write))
		return missing(e, "write");
	r = e->writer.write(buf, len);
	return r < 0 ? failed(e, "write", r, "could not write %zu bytes",
			      len) : 0;
}

int
plugin_commit(const struct plugin_entry *e, const void *header, size_t len)
{
	int r;

	if (!WRITER_METHOD(e, commit))
		return missing(e, "commit");
	r = e->writer.commit(header, len);
	return r < 0 ? failed(e, "commit", r, "could not commit the image") : 0;
}

void
plugin_abort(const struct plugin_entry *e)
{
	if (WRITER_METHOD(e, abort))
		e->writer.abort();
}

int
plugin_find(const struct plugin_entry *e)
{
	int r;

	if (!WRITER_METHOD(e, find))
		return missing(e, "find");
	r = e->writer.find();
	return r < 0 ? failed(e, "find", r, "cannot look for an image") : !!r;
}

int
plugin_read_header(const struct plugin_entry *e, void *buf, size_t size,
		   size_t *ret_len)
{
	int r;

	if (!WRITER_METHOD(e, read_header))
		return missing(e, "read_header");
	r = e->writer.read_header(buf, size, ret_len);
	if (r >= 0 && *ret_len > size)
		r = -EMSGSIZE;
	if (r == -EBADMSG || r == -EMSGSIZE || r == -ENODATA)
		return r;
	return r < 0 ? failed(e, "read_header", r, "cannot read its header") : 0;
}

int
plugin_read(const struct plugin_entry *e, uint64_t offset, void *buf,
	    size_t len)
{
	int r;

	if (!WRITER_METHOD(e, read))
		return missing(e, "read");
	r = e->writer.read(offset, buf, len);
	if (r < 0 && r != -ENODATA)
		return failed(e, "read", r,
			      "cannot read %zu bytes at stream offset %llu",
			      len, (unsigned long long)offset);
	return r < 0 ? r : 0;
}

int
plugin_invalidate(const struct plugin_entry *e)
{
	int r;

	if (!WRITER_METHOD(e, invalidate))
		return missing(e, "invalidate");
	r = e->writer.invalidate();
	return r < 0 ? failed(e, "invalidate", r,
			      "could not invalidate the image") : 0;
}

int
plugin_consume(const struct plugin_entry *e, const uint8_t uuid[16])
{
	int r;

	if (!WRITER_METHOD(e, consume))
		return plugin_invalidate(e);
	r = e->writer.consume(uuid);
	return r < 0 ? failed(e, "consume", r,
			      "could not invalidate the image") : 0;
}

int
plugin_read_consumed(const struct plugin_entry *e, const uint8_t uuid[16],
		     void *buf, size_t size, size_t *ret_len)
{
	int r;

	if (!WRITER_METHOD(e, read_consumed))
		return -EOPNOTSUPP;
	r = e->writer.read_consumed(uuid, buf, size, ret_len);
	if (r >= 0 && *ret_len > size)
		r = -EMSGSIZE;
	return r < 0 ? r : 0;
}

int
plugin_rewrite_header(const struct plugin_entry *e, const void *header,
		      size_t len)
{
	int r = WRITER_METHOD(e, rewrite_header) ?
		e->writer.rewrite_header(header, len) : 0;

	return r < 0 ? failed(e, "rewrite_header", r,
			      "could not record the resume statistics") : 0;
}

void
plugin_refused(const struct plugin_entry *e)
{
	if (WRITER_METHOD(e, refused))
		e->writer.refused();
}

int
plugin_free_space(const struct plugin_entry *e, uint64_t *ret_bytes)
{
	if (!WRITER_METHOD(e, free_space))
		return -EOPNOTSUPP;
	return e->writer.free_space(ret_bytes);
}

int
plugin_resume_args(const struct plugin_entry *e, char *buf, size_t size)
{
	int r;

	if (!WRITER_METHOD(e, resume_args))
		return -EOPNOTSUPP;
	r = e->writer.resume_args(buf, size);
	return r < 0 ? failed(e, "resume_args", r,
			      "cannot name the image's location") : r;
}

int
plugin_frozen(const struct plugin_entry *e)
{
	int r;

	if (!WRITER_METHOD(e, frozen))
		return 0;
	r = e->writer.frozen();
	return r < 0 ? failed(e, "frozen", r, "refused the hibernation after the freeze") : 0;
}

int
plugins_sleep_event(const struct registry *r, int event, const char *action)
{
	bool pre = event == TORPOR_SLEEP_PRE;
	const struct plugin_entry *e;
	int r1;

	for (e = pre ? r->plugins_head : r->plugins_tail; e;
	     e = pre ? e->next_plugin : e->prev_plugin) {
		if (e->disabled || !MISC_METHOD(e, sleep_event))
			continue;
		r1 = e->misc.sleep_event(event, action);
		if (r1 < 0) {
			failed(e, "sleep_event", r1, pre ?
			       "refused the hibernation before the freeze" :
			       "failed after the thaw");
			if (pre)
				return r1;
		}
	}
	return 0;
}
