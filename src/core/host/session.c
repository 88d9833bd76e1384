/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "image-format.h"
#include "loader.h"
#include "log.h"
#include "memroom.h"
#include "plugin-call.h"
#include "plugin-names.h"
#include "pool.h"
#include "session.h"

unsigned
session_threads(const struct torpor_session *s)
{
	unsigned cpus;

	if (s->config->threads)
		return s->config->threads;
	/* With one CPU the filters run on the cycle's own thread: a worker
	 * would add only thread switches, and its stack and buffers to the
	 * image (340 pages in the VM suite's perf case). */
	cpus = pool_default_threads();
	return cpus > 1 ? cpus : 0;
}

unsigned
session_pool_threads(const struct torpor_session *s, const struct chain *c,
		     uint64_t fixed, uint64_t *room, char *limit,
		     size_t limit_size)
{
	unsigned asked = session_threads(s), t;

	*room = memroom_available(limit, limit_size);
	if (!limit[0])
		snprintf(limit, limit_size, "the system's free memory");
	t = pool_threads_within(c, asked, fixed, *room);
	if (t < asked)
		log_notice("worker threads: %u instead of %u: the pool stays under %u MiB and within half of what %s leaves (%" PRIu64 " MiB)",
			   t, asked, POOL_MEMORY_BUDGET >> 20, limit, *room >> 20);
	return t;
}

int
session_open_config(struct torpor_session *s, const char *config_path)
{
	int r;

	memset(s, 0, sizeof(*s));
	registry_init(&s->reg);
	r = config_load(config_path, config_path == NULL, &s->config);
	if (r < 0)
		return r;
	host_set_config(s->config);
	host_set_registry(&s->reg);
	host_set_snapshot_kind(host_kind_of_spec(s->config->snapshot));
	return host_init_crypto();
}

int
session_open(struct torpor_session *s, const char *config_path,
	     const char *plugin_dir, bool require_filters)
{
	const char *required[IMAGE_MAX_CHAIN + 1];
	size_t n = 0, i;
	int r;

	r = session_open_config(s, config_path);
	if (r < 0)
		return r;
	s->plugin_dir = plugin_dir ? plugin_dir :
		s->config->plugin_dir ? s->config->plugin_dir :
		loader_default_dir();
	if (require_filters)
		for (i = 0; i < s->config->n_filters && n < IMAGE_MAX_CHAIN; i++)
			required[n++] = s->config->filters[i];
	if (s->config->writer)
		required[n++] = s->config->writer;
	/* Each plugin's section is checked before its load() reads it. */
	loader_set_config(s->config);
	r = loader_load_all(&s->reg, s->plugin_dir, required, n, host_get());
	s->plugins_loaded = true;
	if (r < 0)
		return r;
	return config_check_plugins(s->config, &s->reg);
}

/* The plugin a [torpor] key (filters or writer) names, of the type that
 * key wants; a refusal is said at the key's line, as a key error is. */
static int
find_typed(struct torpor_session *s, const char *name,
	   enum torpor_plugin_type type, struct plugin_entry **ret)
{
	struct plugin_entry *e = registry_find(&s->reg, name);
	char place[PATH_MAX + 64];

	config_key_place(s->config, CONFIG_CORE_SECTION,
			 type == TORPOR_PLUGIN_WRITER ? "writer" : "filters",
			 place, sizeof(place));
	if (!e)
		return log_error_errno(-ENOENT,
			"%s: plugin '%s' is not installed in %s", place, name,
			s->plugin_dir);
	if (e->ops.type != type)
		return log_error_errno(-EINVAL, "%s: '%s' is a %s, not a %s",
			place, name, plugin_type_name(e->ops.type),
			plugin_type_name(type));
	*ret = e;
	return 0;
}

static void
disable_typed(struct torpor_session *s)
{
	struct plugin_entry *e;

	for (e = s->reg.plugins_head; e; e = e->next_plugin)
		if (e->ops.type != TORPOR_PLUGIN_MISC)
			e->disabled = true;
}

int
session_arrange_writer_only(struct torpor_session *s)
{
	struct plugin_entry *w;
	int r;

	disable_typed(s);
	if (!s->config->writer) {
		registry_set_active_writer(&s->reg, NULL);
		return log_error_errno(-ENODEV,
			"%s: no writer is configured ([torpor] writer=)",
			s->config->path ? s->config->path : "configuration");
	}
	r = find_typed(s, s->config->writer, TORPOR_PLUGIN_WRITER, &w);
	if (r < 0)
		return r;
	w->disabled = false;
	registry_set_active_writer(&s->reg, w);
	return 0;
}

int
session_arrange_hibernate(struct torpor_session *s)
{
	size_t i;
	int r;

	r = session_arrange_writer_only(s);
	if (r < 0)
		return r;
	for (i = 0; i < s->config->n_filters; i++) {
		struct plugin_entry *f;

		r = find_typed(s, s->config->filters[i], TORPOR_PLUGIN_FILTER, &f);
		if (r < 0)
			return r;
		f->disabled = false;
		/* Suspend2's move-to-tail puts the list in configured order. */
		registry_move_tail(&s->reg, f);
	}
	return 0;
}

int
session_invalidate(struct torpor_session *s)
{
	struct plugin_entry *w = s->reg.active_writer;
	int r;

	if (!w)
		return log_error_errno(-ENODEV, "no writer to invalidate an image on");
	r = registry_initialise(&s->reg, 1);
	if (r < 0)
		return r;
	r = plugin_invalidate(w);
	registry_cleanup(&s->reg, 1);
	return r;
}

int
session_parse_wait(const char *text, unsigned *ret_seconds)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-' ||
	    v > SESSION_MAX_WAIT_SECONDS)
		return log_error_errno(-EINVAL,
			"--wait-device '%s': expected seconds, 0 to %u", text,
			SESSION_MAX_WAIT_SECONDS);
	*ret_seconds = (unsigned)v;
	return 0;
}

int
session_probe_storage(const char *config_path, const char *plugin_dir,
		      bool quiet)
{
	int level = log_get_max_level();
	struct torpor_session s;
	int r;

	if (quiet)
		log_set_max_level(TORPOR_LOG_ERR - 1);
	r = session_open(&s, config_path, plugin_dir, false);
	if (r >= 0)
		r = session_arrange_writer_only(&s);
	if (r >= 0)
		r = registry_initialise(&s.reg, 1);
	if (r >= 0) {
		r = plugin_find(s.reg.active_writer);
		registry_cleanup(&s.reg, 1);
	}
	session_close(&s);
	log_set_max_level(level);
	return r;
}

int
session_wait_for_storage(const char *config_path, const char *plugin_dir,
			 unsigned seconds)
{
	const unsigned step_ms = 250, limit_ms = seconds * 1000u;
	unsigned waited_ms;
	int r;

	for (waited_ms = 0;; waited_ms += step_ms) {
		r = session_probe_storage(config_path, plugin_dir, true);
		if (r != -ENOENT && r != -ENODEV) {
			if (waited_ms > 0)
				log_notice("the storage device is there after %u ms",
					   waited_ms);
			return r;
		}
		if (waited_ms >= limit_ms) {
			if (limit_ms > 0)
				log_warning("the storage device did not appear within %u s",
					    seconds);
			return r;
		}
		if (waited_ms == 0)
			log_notice("the storage device is not there yet; waiting up to %u s for it",
				   seconds);
		poll(NULL, 0, step_ms);
	}
}

void
session_close(struct torpor_session *s)
{
	if (s->plugins_loaded)
		loader_unload_all(&s->reg);
	loader_set_config(NULL);
	config_free(s->config);
	s->config = NULL;
	host_set_config(NULL);
	host_set_registry(NULL);
}
