/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor plugins: what the loader found, for the CLI and torpord alike.
 */
#include <stdlib.h>

#include "json.h"
#include "plugin-call.h"
#include "plugin-names.h"
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
