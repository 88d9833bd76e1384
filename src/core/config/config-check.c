/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin sections checked against the plugins loaded: a section
 * naming no plugin, a key its plugin does not declare, a value that does
 * not fit the key's type.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config-internal.h"
#include "log.h"

static void
append_key_names(char *buf, size_t size, const struct torpor_plugin *p)
{
	const struct torpor_config_key *k;
	size_t used = 0;

	buf[0] = '\0';
	for (k = p->config_keys; k && k->name; k++)
		config_append_name(buf, size, &used, ", ", k->name);
}

static const char *
config_path_of(const struct torpor_config *c)
{
	return c->path ? c->path : "configuration";
}

/* Check entry e against the keys of its plugin p; log a bad one. */
static int
check_plugin_entry(const struct torpor_config *c,
		   const struct config_entry *e, const struct torpor_plugin *p)
{
	const struct torpor_config_key *k = config_find_key(p, e->key);
	const char *path = config_path_of(c);
	char reason[CONFIG_REASON_MAX], names[160];

	if (!k) {
		append_key_names(names, sizeof(names), p);
		if (names[0])
			log_error("%s:%u: [%s] key '%s': not a key of plugin "
				  "'%s' (known: %s)", path, e->line,
				  e->section, e->key, e->section, names);
		else
			log_error("%s:%u: [%s] key '%s': plugin '%s' takes no "
				  "keys", path, e->line, e->section, e->key,
				  e->section);
		return -EINVAL;
	}
	if (config_check_value(k, e->value, reason, sizeof(reason)) < 0) {
		log_error("%s:%u: [%s] key '%s': %s (%s)", path, e->line,
			  e->section, e->key, reason,
			  config_type_name(k->type));
		return -EINVAL;
	}
	return 0;
}

int
config_check_section(const struct torpor_config *c,
		     const struct torpor_plugin *p)
{
	size_t i;
	int ret = 0;

	if (!c || !p || !p->name)
		return 0;
	for (i = 0; i < c->n_entries; i++)
		if (strcmp(c->entries[i].section, p->name) == 0 &&
		    check_plugin_entry(c, &c->entries[i], p) < 0)
			ret = -EINVAL;
	return ret;
}

static bool
section_has_entries(const struct torpor_config *c, const char *section)
{
	size_t i;

	for (i = 0; i < c->n_entries; i++)
		if (strcmp(c->entries[i].section, section) == 0)
			return true;
	return false;
}

/* A section header naming no plugin, with no key under it (a section with
 * keys is told about at its first key). */
static int
check_empty_sections(const struct torpor_config *c, const struct registry *r)
{
	size_t i, j;
	int ret = 0;

	for (i = 0; i < c->n_sections; i++) {
		const struct config_section *s = &c->sections[i];
		bool seen = false;

		for (j = 0; j < i && !seen; j++)
			seen = strcmp(c->sections[j].name, s->name) == 0;
		if (seen || strcmp(s->name, CONFIG_CORE_SECTION) == 0 ||
		    (r && registry_find(r, s->name)) ||
		    section_has_entries(c, s->name))
			continue;
		log_error("%s:%u: [%s]: no plugin named '%s' is loaded",
			  config_path_of(c), s->line, s->name, s->name);
		ret = -EINVAL;
	}
	return ret;
}

int
config_check_plugins(const struct torpor_config *c, const struct registry *r)
{
	size_t i;
	int ret;

	if (!c)
		return 0;
	ret = check_empty_sections(c, r);
	for (i = 0; i < c->n_entries; i++) {
		const struct config_entry *e = &c->entries[i];
		const struct plugin_entry *p;

		if (strcmp(e->section, CONFIG_CORE_SECTION) == 0)
			continue;
		p = r ? registry_find(r, e->section) : NULL;
		if (!p) {
			/* One message per section, not per key. */
			if (!config_section_seen_before(c, i))
				log_error("%s:%u: [%s] key '%s': no plugin "
					  "named '%s' is loaded",
					  config_path_of(c), e->line,
					  e->section, e->key, e->section);
			ret = -EINVAL;
			continue;
		}
		if (check_plugin_entry(c, e, &p->ops) < 0)
			ret = -EINVAL;
	}
	return ret;
}
