/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading plugins from the plugin directory into the registry. */
#ifndef TORPOR_LOADER_H
#define TORPOR_LOADER_H

#include <stdbool.h>

#include "registry.h"

/* The built-in plugin directory (meson option plugindir). */
const char *loader_default_dir(void);

/*
 * The configuration whose section of each plugin is checked, as
 * config_check_section() does, after the plugin's declaration is read and
 * before its load() runs (NULL: none).  A plugin with a bad section is
 * refused, and loader_load_all() fails for it even when it is not
 * required: the configuration is wrong.
 */
struct torpor_config;
void loader_set_config(const struct torpor_config *c);

/*
 * Load dir/NAME.so: dlopen(RTLD_NOW | RTLD_LOCAL), check the ABI version
 * (exact for filters, not newer for the others), the struct size, the name
 * ([a-z0-9-]{1,31}, equal to NAME), the methods its type requires and,
 * when running as root, that the file and the directory are owned by root
 * and not group- or world-writable, and the plugin's configuration section
 * (loader_set_config()).  Then register it and call load(host).
 * Every refusal logs one line naming the file and the reason (at level
 * `level`) and returns a negative errno; nothing stays loaded.
 */
int loader_load(struct registry *r, const char *dir, const char *name,
		const struct torpor_host *host, int level,
		struct plugin_entry **ret);

/*
 * Load every NAME.so in dir, in name order.  A plugin named in required[]
 * (n_required entries) that cannot load is an error (logged as one, and the
 * first such error is returned after trying them all); any other broken
 * plugin is a warning and is skipped.  A required name with no file is an
 * error too.
 */
int loader_load_all(struct registry *r, const char *dir,
		    const char *const *required, size_t n_required,
		    const struct torpor_host *host);

/* Unregister and dlclose e.  -EBUSY while references are held. */
int loader_unload(struct registry *r, struct plugin_entry *e);

/* Unload everything (references are ignored: the program is ending). */
void loader_unload_all(struct registry *r);

#endif
