/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `torpor config`: the effective configuration, every key with its value
 * or default and help, written so that it reads back as a configuration.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config-internal.h"

/*
 * One key of the dump.  Markers go on comment lines of their own so that
 * the output reads back as a configuration file.
 */
void
config_dump_key(FILE *f, const char *key, const char *value, bool from_file,
		const char *help)
{
	if (help)
		fprintf(f, "# %s\n", help);
	if (!value) {
		fprintf(f, "# not set\n#%s =\n", key);
		return;
	}
	if (!from_file)
		fprintf(f, "# default\n");
	fprintf(f, "%s =%s%s\n", key, *value ? " " : "", value);
}

static void
dump_plugin(const struct torpor_config *c, const struct torpor_plugin *p,
	    FILE *f)
{
	const struct torpor_config_key *k;
	size_t i;

	fprintf(f, "\n[%s]\n", p->name);
	for (k = p->config_keys; k && k->name; k++) {
		const char *v = config_get(c, p->name, k->name);

		config_dump_key(f, k->name, v ? v : k->default_value,
				v != NULL, k->help);
	}
	for (i = 0; i < c->n_entries; i++) {
		const struct config_entry *e = &c->entries[i];

		if (strcmp(e->section, p->name) == 0 && !config_find_key(p, e->key))
			fprintf(f, "# not a key of this plugin\n%s = %s\n",
				e->key, e->value);
	}
}

void
config_dump(const struct torpor_config *c, const struct registry *r, FILE *f)
{
	const struct plugin_entry *p;
	size_t i, j;

	if (!c || !f)
		return;
	fprintf(f, "# torpor configuration: %s\n",
		c->path ? c->path : "built-in defaults");
	config_core_dump(c, f);

	for (p = r ? r->plugins_head : NULL; p; p = p->next_plugin) {
		bool in_file = false;

		if (!p->ops.name)
			continue;
		for (i = 0; i < c->n_entries && !in_file; i++)
			in_file = strcmp(c->entries[i].section, p->ops.name) == 0;
		if (in_file || (p->ops.config_keys && p->ops.config_keys->name))
			dump_plugin(c, &p->ops, f);
	}

	/* Sections of the file that no registered plugin claims. */
	for (i = 0; i < c->n_entries; i++) {
		const struct config_entry *e = &c->entries[i];

		if (strcmp(e->section, CONFIG_CORE_SECTION) == 0 ||
		    config_section_seen_before(c, i) ||
		    (r && registry_find(r, e->section)))
			continue;
		fprintf(f, "\n[%s]\n", e->section);
		if (r)
			fprintf(f, "# no plugin of this name is loaded\n");
		for (j = i; j < c->n_entries; j++)
			if (strcmp(c->entries[j].section, e->section) == 0)
				fprintf(f, "%s = %s\n", c->entries[j].key,
					c->entries[j].value);
	}
}
