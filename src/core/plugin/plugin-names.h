/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The words the core uses for plugins, once: the name rule of
 * include/torpor/plugin.h and the name of each plugin type.
 */
#ifndef TORPOR_PLUGIN_NAMES_H
#define TORPOR_PLUGIN_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include <torpor/plugin.h>

/* c may appear in a plugin name: [a-z0-9-]. */
bool plugin_name_char(char c);

/* s[0..len) is a plugin name: [a-z0-9-]{1,TORPOR_PLUGIN_NAME_MAX}. */
bool plugin_name_valid(const char *s, size_t len);

/* "filter", "writer", "misc"; "?" for a type the ABI does not know. */
const char *plugin_type_name(enum torpor_plugin_type t);

#endif
