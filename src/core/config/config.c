/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration as loaded: made with its defaults, freed, and looked
 * up (a key's value, where the file sets it, a plugin's key and default).
 * Reading the file is config-file.c's, the [torpor] keys config-keys.c's,
 * the checks of plugin sections config-check.c's, the dump config-dump.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config-internal.h"

void
config_free_filters(char **filters, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(filters[i]);
	free(filters);
}

void
config_free(struct torpor_config *c)
{
	size_t i;

	if (!c)
		return;
	free(c->path);
	config_free_filters(c->filters, c->n_filters);
	free(c->writer);
	free(c->snapshot);
	free(c->plugin_dir);
	free(c->group);
	free(c->state_dir);
	free(c->initramfs);
	for (i = 0; i < c->n_entries; i++) {
		free(c->entries[i].section);
		free(c->entries[i].key);
		free(c->entries[i].value);
	}
	free(c->entries);
	for (i = 0; i < c->n_sections; i++)
		free(c->sections[i].name);
	free(c->sections);
	free(c);
}

const struct config_entry *
config_find_entry(const struct torpor_config *c, const char *section,
		  const char *key)
{
	size_t i;

	if (!c)
		return NULL;
	for (i = 0; i < c->n_entries; i++)
		if (strcmp(c->entries[i].section, section) == 0 &&
		    strcmp(c->entries[i].key, key) == 0)
			return &c->entries[i];
	return NULL;
}

const char *
config_get(const struct torpor_config *c, const char *section,
	   const char *key)
{
	const struct config_entry *e;

	if (!section || !key)
		return NULL;
	e = config_find_entry(c, section, key);
	return e ? e->value : NULL;
}

const char *
config_key_place(const struct torpor_config *c, const char *section,
		 const char *key, char *buf, size_t size)
{
	const struct config_entry *e = config_find_entry(c, section, key);
	const char *path = c && c->path ? c->path : "configuration";

	if (e)
		snprintf(buf, size, "%s:%u: [%s] key '%s'", path, e->line,
			 section, key);
	else
		snprintf(buf, size, "%s", path);
	return buf;
}

const char *
config_key_naming(const struct torpor_config *c, const char *name)
{
	size_t i;

	if (!c || !name)
		return NULL;
	if (c->writer && strcmp(c->writer, name) == 0)
		return "writer";
	for (i = 0; i < c->n_filters; i++)
		if (strcmp(c->filters[i], name) == 0)
			return "filters";
	return NULL;
}

const struct torpor_config_key *
config_find_key(const struct torpor_plugin *p, const char *key)
{
	const struct torpor_config_key *k;

	for (k = p->config_keys; k && k->name; k++)
		if (strcmp(k->name, key) == 0)
			return k;
	return NULL;
}

const char *
config_get_for(const struct torpor_config *c, const struct torpor_plugin *p,
	       const char *key)
{
	const struct torpor_config_key *k;
	const char *v;

	if (!p || !p->name || !key)
		return NULL;
	v = config_get(c, p->name, key);
	if (v)
		return v;
	k = config_find_key(p, key);
	return k ? k->default_value : NULL;
}

bool
config_section_seen_before(const struct torpor_config *c, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (strcmp(c->entries[j].section, c->entries[i].section) == 0)
			return true;
	return false;
}
