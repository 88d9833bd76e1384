/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin registry: Suspend2's module core (register, unregister, move to
 * tail, initialise / cleanup, next filter, get / put, header storage, find,
 * debug info, memory needed) over plugin_entry objects.
 *
 * Two intrusive doubly linked lists run through every entry: the plugin
 * list (every plugin) and a typed list (the filter list or the writer list;
 * misc plugins are on the plugin list only).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "plugin-call.h"
#include "registry.h"

/* Appended, within the bound, when the debug text did not all fit. */
#define TRUNCATION_MARK "...[truncated]"

/* Which list of each entry a walk uses. */
enum link_kind {
	LINK_PLUGIN,
	LINK_TYPED,
};

static struct plugin_entry **
link_next(struct plugin_entry *e, enum link_kind k)
{
	return k == LINK_PLUGIN ? &e->next_plugin : &e->next_typed;
}

static struct plugin_entry **
link_prev(struct plugin_entry *e, enum link_kind k)
{
	return k == LINK_PLUGIN ? &e->prev_plugin : &e->prev_typed;
}

static void
list_append(struct plugin_entry **head, struct plugin_entry **tail,
	    struct plugin_entry *e, enum link_kind k)
{
	*link_next(e, k) = NULL;
	*link_prev(e, k) = *tail;
	if (*tail)
		*link_next(*tail, k) = e;
	else
		*head = e;
	*tail = e;
}

static void
list_remove(struct plugin_entry **head, struct plugin_entry **tail,
	    struct plugin_entry *e, enum link_kind k)
{
	struct plugin_entry *next = *link_next(e, k), *prev = *link_prev(e, k);

	if (prev)
		*link_next(prev, k) = next;
	else
		*head = next;
	if (next)
		*link_prev(next, k) = prev;
	else
		*tail = prev;
	*link_next(e, k) = NULL;
	*link_prev(e, k) = NULL;
}

/* The head and tail of e's typed list; false for misc plugins. */
static bool
typed_list(struct registry *r, const struct plugin_entry *e,
	   struct plugin_entry ***ret_head, struct plugin_entry ***ret_tail,
	   unsigned **ret_count)
{
	switch (e->ops.type) {
	case TORPOR_PLUGIN_FILTER:
		*ret_head = &r->filters_head;
		*ret_tail = &r->filters_tail;
		*ret_count = &r->n_filters;
		return true;
	case TORPOR_PLUGIN_WRITER:
		*ret_head = &r->writers_head;
		*ret_tail = &r->writers_tail;
		*ret_count = &r->n_writers;
		return true;
	default:
		return false;
	}
}

static bool
is_registered(const struct registry *r, const struct plugin_entry *e)
{
	const struct plugin_entry *p;

	for (p = r->plugins_head; p; p = p->next_plugin)
		if (p == e)
			return true;
	return false;
}

static const char *
entry_name(const struct plugin_entry *e)
{
	return e->ops.name ? e->ops.name : "(unnamed)";
}

void
registry_init(struct registry *r)
{
	memset(r, 0, sizeof(*r));
}

int
registry_register(struct registry *r, struct plugin_entry *e)
{
	struct plugin_entry **head, **tail;
	unsigned *count;

	if (!e->ops.name) {
		log_error("a plugin without a name was ignored");
		return -EINVAL;
	}
	if (registry_find(r, e->ops.name))
		return -EBUSY;

	switch (e->ops.type) {
	case TORPOR_PLUGIN_FILTER:
	case TORPOR_PLUGIN_WRITER:
	case TORPOR_PLUGIN_MISC:
		break;
	default:
		log_error("plugin '%s' has an invalid type (%d); it was ignored",
			  e->ops.name, (int)e->ops.type);
		return -EINVAL;
	}

	if (typed_list(r, e, &head, &tail, &count)) {
		list_append(head, tail, e, LINK_TYPED);
		(*count)++;
	} else {
		e->next_typed = e->prev_typed = NULL;
	}
	list_append(&r->plugins_head, &r->plugins_tail, e, LINK_PLUGIN);
	r->n_plugins++;
	return 0;
}

void
registry_unregister(struct registry *r, struct plugin_entry *e)
{
	struct plugin_entry **head, **tail;
	unsigned *count;

	/* Unregistering twice (or an entry that never got in) must not
	 * corrupt the lists. */
	if (!is_registered(r, e))
		return;

	if (typed_list(r, e, &head, &tail, &count)) {
		list_remove(head, tail, e, LINK_TYPED);
		(*count)--;
	}
	list_remove(&r->plugins_head, &r->plugins_tail, e, LINK_PLUGIN);
	r->n_plugins--;

	if (r->active_writer == e) {
		/* Without its writer no image can be written: say why, so
		 * that `torpor status` can show it. */
		r->active_writer = NULL;
		snprintf(r->disabled_reason, sizeof(r->disabled_reason),
			 "active writer '%s' was unloaded", entry_name(e));
	}
}

void
registry_move_tail(struct registry *r, struct plugin_entry *e)
{
	struct plugin_entry **head, **tail;
	unsigned *count;

	if (!is_registered(r, e))
		return;
	if (typed_list(r, e, &head, &tail, &count)) {
		list_remove(head, tail, e, LINK_TYPED);
		list_append(head, tail, e, LINK_TYPED);
	}
	list_remove(&r->plugins_head, &r->plugins_tail, e, LINK_PLUGIN);
	list_append(&r->plugins_head, &r->plugins_tail, e, LINK_PLUGIN);
}

void
registry_set_active_writer(struct registry *r, struct plugin_entry *e)
{
	r->active_writer = e;
	r->disabled_reason[0] = '\0';
}

bool
registry_can_hibernate(const struct registry *r)
{
	return r->active_writer && !r->disabled_reason[0];
}

/*
 * Clean up the enabled, initialised entries from last back to the head of
 * the plugin list.  Tearing down in the reverse order of set-up lets a
 * plugin rely on what was set up before it until its own cleanup().
 */
static void
cleanup_reverse(struct plugin_entry *last, int finishing_cycle)
{
	struct plugin_entry *e;

	for (e = last; e; e = e->prev_plugin) {
		if (e->disabled || !e->initialised)
			continue;
		plugin_cleanup(e, finishing_cycle);
		e->initialised = false;
	}
}

int
registry_initialise(struct registry *r, int starting_cycle)
{
	struct plugin_entry *e;
	int ret;

	for (e = r->plugins_head; e; e = e->next_plugin) {
		/* Already initialised (the resume side sets up some filters
		 * itself): never initialise twice. */
		if (e->disabled || e->initialised)
			continue;
		ret = plugin_initialise(e, starting_cycle);
		if (ret < 0)
			goto fail;
		/* Without an initialise() the plugin is ready as it is; its
		 * cleanup() is still owed. */
		e->initialised = true;
	}
	return 0;

fail:
	/* A failed initialise leaves nothing initialised, so the caller has
	 * nothing to undo; the newest is cleaned up first. */
	cleanup_reverse(r->plugins_tail, starting_cycle);
	return ret;
}

void
registry_cleanup(struct registry *r, int finishing_cycle)
{
	cleanup_reverse(r->plugins_tail, finishing_cycle);
}

struct plugin_entry *
registry_next_filter(struct registry *r, struct plugin_entry *cur)
{
	struct plugin_entry *e;

	if (!cur)
		e = r->filters_head;
	else if (cur->ops.type == TORPOR_PLUGIN_FILTER && is_registered(r, cur))
		e = cur->next_typed;
	else
		/* The writer ends the chain: nothing comes after it. */
		return NULL;

	for (; e; e = e->next_typed)
		if (!e->disabled)
			return e;
	return r->active_writer;
}

int
registry_get(struct registry *r)
{
	struct plugin_entry *e, *p;

	for (e = r->plugins_head; e; e = e->next_plugin) {
		if (e->dying) {
			/* All or nothing: drop what this call took. */
			for (p = r->plugins_head; p != e; p = p->next_plugin)
				p->refs--;
			return -EBUSY;
		}
		e->refs++;
	}
	return 0;
}

void
registry_put(struct registry *r)
{
	struct plugin_entry *e;

	for (e = r->plugins_head; e; e = e->next_plugin)
		if (e->refs > 0)
			e->refs--;
}

static size_t
add_saturating(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t
registry_header_storage(const struct registry *r)
{
	const struct plugin_entry *e;
	size_t bytes = 0;

	for (e = r->plugins_head; e; e = e->next_plugin)
		if (!e->disabled)
			bytes = add_saturating(bytes, plugin_storage_needed(e));
	return bytes;
}

struct plugin_entry *
registry_find(const struct registry *r, const char *name)
{
	struct plugin_entry *e;

	if (!name)
		return NULL;
	for (e = r->plugins_head; e; e = e->next_plugin)
		if (e->ops.name && strcmp(e->ops.name, name) == 0)
			return e;
	return NULL;
}

/*
 * Debug text is assembled in buf[0..*len) with room for `cap` characters
 * (size - 1, leaving the NUL).  Returns false once something did not fit.
 */
static bool
append_text(char *buf, size_t cap, size_t *len, const char *text, size_t n)
{
	size_t room = cap - *len;

	if (n > room) {
		memcpy(buf + *len, text, room);
		*len = cap;
		return false;
	}
	memcpy(buf + *len, text, n);
	*len += n;
	return true;
}

size_t
registry_debug_info(const struct registry *r, char *buf, size_t size)
{
	const struct plugin_entry *e;
	size_t cap, len = 0, scratch_size;
	char *scratch = NULL;
	bool fits = true;

	if (!buf || size == 0)
		return 0;
	cap = size - 1;

	/* Each plugin writes into a scratch buffer one character larger than
	 * the room left: if it fills that, its text did not fit. */
	scratch_size = cap + 2;
	scratch = malloc(scratch_size);
	if (!scratch) {
		buf[0] = '\0';
		return 0;
	}

	for (e = r->plugins_head; e && fits; e = e->next_plugin) {
		const char *name = entry_name(e);
		size_t after = len + strlen(name) + 2;	/* "NAME: " */
		size_t room = after <= cap ? cap - after + 2 : 2;
		int n;

		if (e->disabled)
			continue;
		scratch[0] = '\0';
		n = plugin_print_debug_info(e, scratch, room);
		if (n == -EOPNOTSUPP)
			continue;

		fits = append_text(buf, cap, &len, name, strlen(name)) &&
		       append_text(buf, cap, &len, ": ", 2);
		if (!fits)
			break;

		if (n < 0)
			n = snprintf(scratch, cap - len + 2,
				     "(no debug info: %s)", strerror(-n));
		if (n < 0)
			n = 0;
		/* Never trust a plugin's count beyond the buffer it got. */
		if ((size_t)n > cap - len + 1)
			n = (int)(cap - len + 1);
		n = (int)strnlen(scratch, (size_t)n);

		fits = append_text(buf, cap, &len, scratch, (size_t)n);
		if (fits && (n == 0 || scratch[n - 1] != '\n'))
			fits = append_text(buf, cap, &len, "\n", 1);
	}
	free(scratch);

	if (!fits) {
		size_t mark = strlen(TRUNCATION_MARK);

		/* The mark goes at the very end, over text if need be. */
		if (mark > cap)
			mark = cap;
		len = cap - mark;
		memcpy(buf + len, TRUNCATION_MARK, mark);
		len += mark;
	}
	buf[len] = '\0';
	return len;
}

size_t
registry_memory_needed(const struct registry *r, size_t page_size)
{
	const struct plugin_entry *e;
	size_t bytes = 0;

	if (page_size == 0)
		return 0;
	for (e = r->plugins_head; e; e = e->next_plugin)
		if (!e->disabled)
			bytes = add_saturating(bytes, plugin_memory_needed(e));
	return bytes / page_size + (bytes % page_size != 0);
}
