/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "plugin-names.h"

bool
plugin_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool
plugin_name_valid(const char *s, size_t len)
{
	size_t i;

	if (!s || len == 0 || len > TORPOR_PLUGIN_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!plugin_name_char(s[i]))
			return false;
	return true;
}

const char *
plugin_type_name(enum torpor_plugin_type t)
{
	switch (t) {
	case TORPOR_PLUGIN_FILTER:
		return "filter";
	case TORPOR_PLUGIN_WRITER:
		return "writer";
	case TORPOR_PLUGIN_MISC:
		return "misc";
	}
	return "?";
}
