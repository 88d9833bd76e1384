/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "json.h"
#include "names.h"
#include "plugin-call.h"
#include "status.h"

/* Bound of what plugins say about themselves (seed 009's debug buffer). */
#define DEBUG_INFO_MAX 16384

/* Every plugin's own status, through the registry, into a bounded buffer
 * (the caller frees it); NULL when there is no memory. */
static char *
plugins_debug_info(const struct registry *reg)
{
	char *info = malloc(DEBUG_INFO_MAX);

	if (info)
		registry_debug_info(reg, info, DEBUG_INFO_MAX);
	return info;
}

static void
print_status_json(const struct torpor_config *c, FILE *out, const char *reason,
		  int found, const char *info)
{
	size_t i;

	fprintf(out, "{\"config\": ");
	json_write_string(out, c->path);
	fprintf(out, ", \"snapshot\": ");
	json_write_string(out, c->snapshot);
	fprintf(out, ", \"writer\": ");
	json_write_string(out, c->writer);
	fprintf(out, ", \"filters\": [");
	for (i = 0; i < c->n_filters; i++) {
		fprintf(out, "%s", i ? ", " : "");
		json_write_string(out, c->filters[i]);
	}
	fprintf(out, "], \"can_hibernate\": %s, \"disabled_reason\": ",
		reason ? "false" : "true");
	json_write_string(out, reason ? reason : "");
	fprintf(out, ", \"image_present\": %s, \"debug_info\": ",
		found > 0 ? "true" : found == 0 ? "false" : "null");
	json_write_string(out, info ? info : "");
	fprintf(out, "}\n");
}

static void
print_status_text(const struct torpor_config *c, FILE *out, const char *reason,
		  int found, const char *info)
{
	size_t i;

	fprintf(out, "config:     %s\n", c->path ? c->path : "(defaults)");
	fprintf(out, "snapshot:   %s\n", c->snapshot);
	fprintf(out, "writer:     %s\n", c->writer ? c->writer : "(none)");
	fprintf(out, "filters:   ");
	for (i = 0; i < c->n_filters; i++)
		fprintf(out, " %s", c->filters[i]);
	fprintf(out, "%s\n", c->n_filters ? "" : " (none)");
	fprintf(out, "hibernate:  %s%s\n", reason ? "disabled: " : "possible",
		reason ? reason : "");
	fprintf(out, "image:      %s\n", found > 0 ? "a resumable image is stored" :
		found == 0 ? "none" : "unknown (the writer cannot look)");
	if (info && info[0])
		fprintf(out, "plugins:\n%s", info);
}

int
status_report(struct torpor_session *s, FILE *out, bool json)
{
	struct plugin_entry *w;
	const char *reason = NULL;
	char *info = NULL;
	int found = -1;

	if (session_arrange_hibernate(s) < 0)
		reason = "the configuration names a plugin that cannot be used";
	else if (!registry_can_hibernate(&s->reg))
		reason = s->reg.disabled_reason;
	w = s->reg.active_writer;
	if (w && registry_initialise(&s->reg, 1) >= 0) {
		found = plugin_find(w);
		info = plugins_debug_info(&s->reg);
		registry_cleanup(&s->reg, 1);
	}
	if (json)
		print_status_json(s->config, out, reason, found, info);
	else
		print_status_text(s->config, out, reason, found, info);
	free(info);
	return reason ? 1 : 0;
}

static void
print_plugin_json(FILE *out, const struct plugin_entry *e, bool first)
{
	fprintf(out, "%s\n  {\"name\": ", first ? "" : ",");
	json_write_string(out, e->ops.name);
	fprintf(out, ", \"type\": \"%s\", \"description\": ",
		plugin_type_name(e->ops.type));
	json_write_string(out, e->ops.description);
	fprintf(out, ", \"abi_version\": %u, \"built_for\": ", e->ops.abi_version);
	json_write_string(out, e->ops.built_for);
	fprintf(out, ", \"path\": ");
	json_write_string(out, e->path);
	fprintf(out, "}");
}

static void
print_plugin_line(FILE *out, const struct plugin_entry *e)
{
	fprintf(out, "%-10s %-7s abi %u  %s\n", e->ops.name,
		plugin_type_name(e->ops.type), e->ops.abi_version,
		e->ops.description ? e->ops.description : "");
	if (e->ops.built_for)
		fprintf(out, "           built for torpor %s\n", e->ops.built_for);
}

void
plugins_report(struct torpor_session *s, FILE *out, bool json)
{
	char *info = plugins_debug_info(&s->reg);
	struct plugin_entry *e;

	if (json) {
		fprintf(out, "{\"plugin_dir\": ");
		json_write_string(out, s->plugin_dir);
		fprintf(out, ", \"plugins\": [");
	}
	for (e = s->reg.plugins_head; e; e = e->next_plugin) {
		if (json)
			print_plugin_json(out, e, e == s->reg.plugins_head);
		else
			print_plugin_line(out, e);
	}
	if (json) {
		fprintf(out, "%s], \"debug_info\": ", s->reg.plugins_head ? "\n" : "");
		json_write_string(out, info ? info : "");
		fprintf(out, "}\n");
	} else if (!s->reg.plugins_head) {
		fprintf(out, "no plugins found in %s\n", s->plugin_dir);
	} else if (info && info[0]) {
		fprintf(out, "\nstatus:\n%s", info);
	}
	free(info);
}
