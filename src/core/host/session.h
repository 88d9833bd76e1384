/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What every program sets up first: the configuration, the plugins found in
 * the plugin directory, and the host services pointing at them.
 */
#ifndef TORPOR_SESSION_H
#define TORPOR_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "registry.h"

/* Exit statuses shared by torpor-resume and torpor verify (doc/design.md,
 * "Resume"). */
#define EXIT_REFUSED 2

struct torpor_session {
	struct torpor_config *config;
	struct registry reg;
	const char *plugin_dir;
	bool plugins_loaded;
};

/*
 * Read the configuration (config_path, or the default file, which may be
 * missing) and load every plugin of the plugin directory (plugin_dir, else
 * the configuration's, else the built-in one).  The configured writer is
 * required to load; with require_filters the configured filters are too.
 * Plugin sections are then checked against the plugins' declared keys.
 */
int session_open(struct torpor_session *s, const char *config_path,
		 const char *plugin_dir, bool require_filters);

/* Only the configuration (for commands that need no plugin). */
int session_open_config(struct torpor_session *s, const char *config_path);

/*
 * Arrange the registry for hibernation: the configured filters enabled in
 * the configured order, every other filter and writer disabled, the
 * configured writer active.  Misc plugins stay enabled.  A configured name
 * that is not a filter / writer is a configuration error (-EINVAL).
 */
int session_arrange_hibernate(struct torpor_session *s);

/* Enable only the configured writer (resume, verify, invalidate). */
int session_arrange_writer_only(struct torpor_session *s);

void session_close(struct torpor_session *s);

/* With the writer arranged: make sure no resumable image remains on it
 * (initialise, invalidate, clean up).  Logs failures. */
int session_invalidate(struct torpor_session *s);

/* The longest --wait-device, as torpor(8) and torpor-resume(8) say. */
#define SESSION_MAX_WAIT_SECONDS 3600u

/* --wait-device SECONDS: 0 to SESSION_MAX_WAIT_SECONDS.  Logs a wrong
 * value, -EINVAL. */
int session_parse_wait(const char *text, unsigned *ret_seconds);

/* A look for the writer's storage: a session of its own, the writer's
 * initialise() and find().  Returns what find() returns, or the first
 * error; quiet: nothing is logged. */
int session_probe_storage(const char *config_path, const char *plugin_dir,
			  bool quiet);

/*
 * Wait up to seconds for the configured writer's storage, which may appear
 * a moment after boot (udev, a USB disk, a LUKS volume being unlocked):
 * quietly opens a session and asks the writer's find() every 250 ms while
 * it fails with ENOENT or ENODEV.  A device that is there costs no wait.
 * Returns the last find(): 1 an image is there, 0 none, -errno (-ENOENT,
 * -ENODEV: it never appeared).  Logs a notice when it waits.
 */
int session_wait_for_storage(const char *config_path, const char *plugin_dir,
			     unsigned seconds);

/* Worker threads for the pool: [torpor] threads, or one per online CPU
 * (0, the filters on the calling thread, when there is one). */
unsigned session_threads(const struct torpor_session *s);

/*
 * The pool's threads for chain c: [torpor] threads, lowered (with a notice)
 * to keep the pool under POOL_MEMORY_BUDGET and, with fixed more bytes,
 * within half of what this process may still take.  *room gets that
 * (memroom_available(); 0: unknown) and limit names it: a cgroup's
 * directory, or "the system's free memory".
 */
struct chain;
unsigned session_pool_threads(const struct torpor_session *s,
			      const struct chain *c, uint64_t fixed,
			      uint64_t *room, char *limit, size_t limit_size);

#endif
