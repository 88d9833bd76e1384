/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every call from the core into a plugin, in one place.
 *
 * Each function dispatches by the plugin's kind (a method of another
 * kind's struct reads as absent) and checks that the method exists: an
 * absent optional method gives the default plugin.h documents for it, an
 * absent required one is -ENOSYS.  It checks what the ABI promises about the result (encode()
 * stays within its bound, save_config() within its buffer) and logs a
 * failure once, naming the plugin and the method; callers decide what to
 * do and do not log it again.  The answers the ABI documents as answers,
 * not failures, are returned without a word for the caller to turn into
 * its own decision: read()'s -ENODATA (the stream ends there),
 * read_header()'s -EBADMSG, -EMSGSIZE and -ENODATA (no readable image
 * there) and reserve()'s -ENOSPC (the writer says "need X MiB, Y MiB
 * free" itself).
 * load() failures are the loader's to report, at the level it chose.
 */
#ifndef TORPOR_PLUGIN_CALL_H
#define TORPOR_PLUGIN_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* Any plugin. */
int plugin_load(const struct plugin_entry *e, const struct torpor_host *host);
void plugin_unload(const struct plugin_entry *e);
int plugin_initialise(const struct plugin_entry *e, int starting_cycle);
void plugin_cleanup(const struct plugin_entry *e, int finishing_cycle);
/* A filter's or a writer's start_stream(); absent (and for misc): 0. */
int plugin_start_stream(const struct plugin_entry *e,
			const struct torpor_image_info *info);
/* Absent: 0. */
size_t plugin_memory_needed(const struct plugin_entry *e);
size_t plugin_storage_needed(const struct plugin_entry *e);
/* Absent: 0 bytes written.  More than size is -EOVERFLOW. */
int plugin_save_config(const struct plugin_entry *e, uint8_t *buf,
		       size_t size);
/* Absent: 0 for an empty configuration, -EBADMSG for a saved one that
 * the plugin cannot load. */
int plugin_load_config(const struct plugin_entry *e, const uint8_t *buf,
		       size_t len);
/* Absent: -EOPNOTSUPP.  A failure is not logged: the caller shows it in
 * the text it assembles. */
int plugin_print_debug_info(const struct plugin_entry *e, char *buf,
			    size_t size);

/* Filters. */
size_t plugin_max_encoded_size(const struct plugin_entry *e, size_t in_len);
/* Stored bytes per 1000 input bytes; absent: 1000. */
uint32_t plugin_expected_ratio(const struct plugin_entry *e);
/* Absent: no state (*ret_state = NULL). */
int plugin_thread_init(const struct plugin_entry *e, void **ret_state);
void plugin_thread_free(const struct plugin_entry *e, void *state);
/* A result of 0 bytes or more than out_size is -EIO. */
int plugin_encode(const struct plugin_entry *e, void *state,
		  const struct torpor_chunk_info *info,
		  const uint8_t *in, size_t in_len,
		  uint8_t *out, size_t out_size, size_t *ret_len);
/* A result of more than out_size is -EBADMSG. */
int plugin_decode(const struct plugin_entry *e, void *state,
		  const struct torpor_chunk_info *info,
		  const uint8_t *in, size_t in_len,
		  uint8_t *out, size_t out_size, size_t *ret_len);

/* Writers. */
int plugin_reserve(const struct plugin_entry *e, uint64_t expected_bytes);
int plugin_write(const struct plugin_entry *e, const void *buf, size_t len);
int plugin_commit(const struct plugin_entry *e, const void *header,
		  size_t len);
void plugin_abort(const struct plugin_entry *e);
int plugin_find(const struct plugin_entry *e);
int plugin_read_header(const struct plugin_entry *e, void *buf, size_t size,
		       size_t *ret_len);
int plugin_read(const struct plugin_entry *e, uint64_t offset, void *buf,
		size_t len);
int plugin_invalidate(const struct plugin_entry *e);
/* Absent: plugin_invalidate(). */
int plugin_consume(const struct plugin_entry *e, const uint8_t uuid[16]);
/* Absent: -EOPNOTSUPP.  Not logged: the caller says what it ignores. */
int plugin_read_consumed(const struct plugin_entry *e, const uint8_t uuid[16],
			 void *buf, size_t size, size_t *ret_len);
/* A writer's frozen() (optional): user space is frozen, the snapshot not
 * yet taken.  Absent: 0. */
int plugin_frozen(const struct plugin_entry *e);
/* Absent: 0 (nothing is recorded). */
int plugin_rewrite_header(const struct plugin_entry *e, const void *header,
			  size_t len);
void plugin_refused(const struct plugin_entry *e);
/* Absent: -EOPNOTSUPP.  A failure is not logged (status shows it). */
int plugin_free_space(const struct plugin_entry *e, uint64_t *ret_bytes);
/* Absent: -EOPNOTSUPP. */
int plugin_resume_args(const struct plugin_entry *e, char *buf, size_t size);

/* sleep_event() of every enabled misc plugin that has one, in plugin-list order
 * (reversed for TORPOR_SLEEP_POST).  PRE stops at the first failure and
 * returns it; POST logs failures and goes on. */
int plugins_sleep_event(const struct registry *r, int event,
			const char *action);

#endif
