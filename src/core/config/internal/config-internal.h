/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of the configuration share and nobody else sees: the
 * small helpers of its values (config-value.c), its lookups (config.c),
 * the [torpor] key table's entry points (config-keys.c) and the dump's
 * line (config-dump.c).
 */
#ifndef TORPOR_CONFIG_INTERNAL_H
#define TORPOR_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"

/* The room of a reason a check writes. */
#define CONFIG_REASON_MAX 256

/* config-value.c */
bool config_is_blank(char ch);
bool config_is_absolute_path(const char *s);
/* "string", "integer", ... for messages. */
const char *config_type_name(enum torpor_config_type t);
/* Append name to the list in buf, after sep unless it is the first
 * (bounded; *used is the list's length, 0 for an empty buf). */
void config_append_name(char *buf, size_t size, size_t *used,
			const char *sep, const char *name);
/* Index of value in the NULL-terminated list, or -1. */
int config_choice_index(const char *const *choices, const char *value);

/* config.c */
void config_free_filters(char **filters, size_t n);
/* The entry of [section] key, or NULL. */
const struct config_entry *config_find_entry(const struct torpor_config *c,
					     const char *section,
					     const char *key);
/* Whether entry i's section had an entry before it. */
bool config_section_seen_before(const struct torpor_config *c, size_t i);

/* config-keys.c */
/* Apply one [torpor] key as read; on a bad value write a reason.
 * -EINVAL, -ENOMEM. */
int config_core_apply(struct torpor_config *c, const char *key,
		      const char *value, char *reason, size_t reason_size);
/* The [torpor] section of the dump. */
void config_core_dump(const struct torpor_config *c, FILE *f);

/* config-dump.c */
/* One key of the dump, its help and whether it is a default. */
void config_dump_key(FILE *f, const char *key, const char *value,
		     bool from_file, const char *help);

#endif
