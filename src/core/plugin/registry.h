/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin registry: Suspend2's module core (seeds 002-010) over
 * dlopen-loaded plugins.  Every plugin is on the plugin list; filters and
 * writers are also on their own ordered lists.  The order of the filter list
 * is the order of the chain at hibernation.
 */
#ifndef TORPOR_REGISTRY_H
#define TORPOR_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <torpor/plugin.h>

/* One registered plugin. */
struct plugin_entry {
	/* The plugin's struct, copied: ops is what every kind has, valid
	 * whatever the kind; filter, writer and misc are the whole struct of
	 * the kind ops.type names, and only that one may be used (the calls
	 * in plugin-call.c check). */
	union {
		struct torpor_plugin ops;
		struct torpor_filter filter;
		struct torpor_writer writer;
		struct torpor_misc misc;
	};
	void *dl;			/* dlopen handle, NULL for built-ins */
	int fd;				/* the file dl was opened from (loader only) */
	char *path;			/* file it came from, NULL for built-ins */
	struct torpor_config_key *keys;	/* ops.config_keys, copied by the loader */
	bool disabled;			/* skipped by every list walk */
	bool dying;			/* being unloaded: references refused */
	bool initialised;		/* initialise() succeeded, no cleanup yet */
	unsigned refs;			/* references taken by registry_get() */

	/* list links, owned by the registry */
	struct plugin_entry *next_plugin, *prev_plugin;
	struct plugin_entry *next_typed, *prev_typed;	/* filters or writers */
};

struct registry {
	struct plugin_entry *plugins_head, *plugins_tail;
	struct plugin_entry *filters_head, *filters_tail;
	struct plugin_entry *writers_head, *writers_tail;
	unsigned n_plugins, n_filters, n_writers;
	struct plugin_entry *active_writer;
	/* Why hibernation is disabled (NULL: it is not). */
	char disabled_reason[160];
};

void registry_init(struct registry *r);


/* Append e to the plugin list and to its type's list.  -EBUSY when a plugin
 * of that name is registered, -EINVAL (with a message naming the plugin)
 * for an invalid type. */
int registry_register(struct registry *r, struct plugin_entry *e);

/* Remove e from every list.  Unregistering the active writer clears it and
 * disables hibernation, recording why in disabled_reason. */
void registry_unregister(struct registry *r, struct plugin_entry *e);

/* Move e to the tail of its lists (resume rebuilds the recorded order). */
void registry_move_tail(struct registry *r, struct plugin_entry *e);

/* Make e the active writer (NULL: none); clears disabled_reason. */
void registry_set_active_writer(struct registry *r, struct plugin_entry *e);

/* Whether hibernation is possible: an active writer and no reason against. */
bool registry_can_hibernate(const struct registry *r);

/* initialise(starting_cycle) on every enabled plugin, in plugin-list order.
 * The first failure stops, is logged naming the plugin, and the plugins
 * already initialised are cleaned up before the error is returned. */
int registry_initialise(struct registry *r, int starting_cycle);

/* cleanup(finishing_cycle) on every enabled, initialised plugin. */
void registry_cleanup(struct registry *r, int finishing_cycle);

/* NULL -> first enabled filter; a filter -> next enabled filter; after the
 * last filter (or with no filter) -> the active writer. */
struct plugin_entry *registry_next_filter(struct registry *r,
					  struct plugin_entry *cur);

/* Take a reference on every plugin; if one cannot be taken (it is dying)
 * the references already taken are dropped and -EBUSY returned. */
int registry_get(struct registry *r);
void registry_put(struct registry *r);

/* Bytes enabled plugins need in the image header (sum of storage_needed). */
size_t registry_header_storage(const struct registry *r);

/* The registered plugin of that name, or NULL. */
struct plugin_entry *registry_find(const struct registry *r, const char *name);

/* Append each enabled plugin's debug text into buf (size bytes, always
 * NUL-terminated, never written past).  When it does not all fit the text
 * ends with a visible truncation mark.  Returns the length written. */
size_t registry_debug_info(const struct registry *r, char *buf, size_t size);

/* Memory enabled plugins need, in pages, rounded up. */
size_t registry_memory_needed(const struct registry *r, size_t page_size);

#endif
