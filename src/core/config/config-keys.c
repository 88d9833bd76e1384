/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The [torpor] keys: one table drives their defaults, parsing, checking,
 * messages and the dump.  A value is first checked against the key's
 * declaration (config_check_value(), as a plugin's would be), then by
 * the key's own setter.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config-internal.h"
#include "plugin-names.h"
#include "snapshot-spec.h"

/* s[0..len) as a plugin name; on failure a reason that quotes it. */
static int
check_plugin_name(const char *s, size_t len, char *reason, size_t reason_size)
{
	if (plugin_name_valid(s, len))
		return 0;
	snprintf(reason, reason_size,
		 "'%.*s' is not a plugin name ([a-z0-9-], 1 to %d characters)",
		 len > 64 ? 64 : (int)len, s, TORPOR_PLUGIN_NAME_MAX);
	return -EINVAL;
}

/*
 * Split a filters value: names separated by commas and/or blanks.  Each
 * must be a valid plugin name, and none may appear twice.
 */
static int
parse_filters(const char *value, char ***ret, size_t *ret_n, char *reason,
	      size_t reason_size)
{
	char **list = NULL;
	size_t n = 0, i;
	const char *p = value;

	for (;;) {
		const char *start;
		size_t len;
		char **grown;

		while (*p == ',' || config_is_blank(*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != ',' && !config_is_blank(*p))
			p++;
		len = (size_t)(p - start);
		if (check_plugin_name(start, len, reason, reason_size) < 0)
			goto invalid;
		for (i = 0; i < n; i++)
			if (strlen(list[i]) == len &&
			    memcmp(list[i], start, len) == 0) {
				snprintf(reason, reason_size,
					 "filter '%s' is listed twice", list[i]);
				goto invalid;
			}
		grown = realloc(list, (n + 1) * sizeof(*list));
		if (!grown)
			goto nomem;
		list = grown;
		list[n] = strndup(start, len);
		if (!list[n])
			goto nomem;
		n++;
	}
	*ret = list;
	*ret_n = n;
	return 0;

invalid:
	config_free_filters(list, n);
	return -EINVAL;
nomem:
	config_free_filters(list, n);
	return -ENOMEM;
}

struct core_key {
	/* Name, type, bounds, choices, default and help.  A value is first
	 * checked by config_check_value(), as a plugin's would be. */
	struct torpor_config_key decl;
	/* An empty value means "not set": set() gets NULL. */
	bool optional;
	/* Where set() and show() find the field in struct torpor_config. */
	size_t offset;
	/* Store a value config_check_value() accepted, after the checks
	 * of its own; on a bad value write a reason.  -EINVAL, -ENOMEM. */
	int (*set)(struct torpor_config *c, const struct core_key *k,
		   const char *value, char *reason, size_t reason_size);
	/* The value as the file would spell it, in buf or static; NULL
	 * when not set. */
	const char *(*show)(const struct torpor_config *c,
			    const struct core_key *k, char *buf, size_t size);
};

static void *
field_of(const struct torpor_config *c, const struct core_key *k)
{
	return (char *)c + k->offset;
}

static int
replace_string(char **slot, const char *value)
{
	char *copy = NULL;

	if (value && !(copy = strdup(value)))
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

static int
set_filters(struct torpor_config *c, const struct core_key *k,
	    const char *value, char *reason, size_t reason_size)
{
	char **list;
	size_t n;
	int r;

	r = parse_filters(value, &list, &n, reason, reason_size);
	if (r < 0)
		return r;
	config_free_filters(c->filters, c->n_filters);
	c->filters = list;
	c->n_filters = n;
	return 0;
}

static const char *
show_filters(const struct torpor_config *c, const struct core_key *k,
	     char *buf, size_t size)
{
	size_t used = 0, i;

	buf[0] = '\0';
	for (i = 0; i < c->n_filters; i++)
		config_append_name(buf, size, &used, " ", c->filters[i]);
	return buf;
}

static int
set_plugin_name(struct torpor_config *c, const struct core_key *k,
		const char *value, char *reason, size_t reason_size)
{
	int r;

	if (value) {
		r = check_plugin_name(value, strlen(value), reason,
				      reason_size);
		if (r < 0)
			return r;
	}
	return replace_string(field_of(c, k), value);
}

static int
set_directory(struct torpor_config *c, const struct core_key *k,
	      const char *value, char *reason, size_t reason_size)
{
	if (value && !config_is_absolute_path(value)) {
		snprintf(reason, reason_size, "'%s' is not an absolute path",
			 value);
		return -EINVAL;
	}
	return replace_string(field_of(c, k), value);
}

/* A group's name as groupadd accepts it; whether it exists is torpord's
 * to check, where it is used. */
static int
set_group(struct torpor_config *c, const struct core_key *k,
	  const char *value, char *reason, size_t reason_size)
{
	size_t i;

	for (i = 0; value && value[i]; i++)
		if (!(isalnum((unsigned char)value[i]) || value[i] == '_' ||
		      value[i] == '.' || (value[i] == '-' && i > 0)) ||
		    i >= 32) {
			snprintf(reason, reason_size,
				 "'%s' is not a group name", value);
			return -EINVAL;
		}
	return replace_string(field_of(c, k), value);
}

/* An absolute path to a snapshot device, or a spec of the sim. */
static int
set_snapshot(struct torpor_config *c, const struct core_key *k,
	     const char *value, char *reason, size_t reason_size)
{
	uint64_t size, seed;
	bool named;
	int r;

	if (snapshot_spec_kind(value) == TORPOR_SNAPSHOT_SIM) {
		r = snapshot_spec_parse(value, &size, &seed, &named);
		if (r < 0) {
			snprintf(reason, reason_size, "'%s': %s", value,
				 snapshot_spec_strerror(r));
			return -EINVAL;
		}
	} else if (!config_is_absolute_path(value)) {
		snprintf(reason, reason_size,
			 "'%s' is neither an absolute path nor "
			 "sim[:SIZE[:SEED]]", value);
		return -EINVAL;
	}
	return replace_string(field_of(c, k), value);
}

/* auto, none, or the absolute path of an initramfs. */
static int
set_initramfs(struct torpor_config *c, const struct core_key *k,
	      const char *value, char *reason, size_t reason_size)
{
	if (strcmp(value, CONFIG_INITRAMFS_AUTO) != 0 &&
	    strcmp(value, CONFIG_INITRAMFS_NONE) != 0 &&
	    !config_is_absolute_path(value)) {
		snprintf(reason, reason_size,
			 "'%s' is neither auto, none nor an absolute path",
			 value);
		return -EINVAL;
	}
	return replace_string(field_of(c, k), value);
}

static const char *
show_string(const struct torpor_config *c, const struct core_key *k,
	    char *buf, size_t size)
{
	return *(char *const *)field_of(c, k);
}

/* An INT key whose bounds fit in unsigned (checked already). */
static int
set_unsigned(struct torpor_config *c, const struct core_key *k,
	     const char *value, char *reason, size_t reason_size)
{
	uint64_t v;

	/* Digits only: the core's numbers take no sign, not even "-0". */
	if (config_parse_u64(value, &v) < 0) {
		snprintf(reason, reason_size, "'%s' is not a number", value);
		return -EINVAL;
	}
	*(unsigned *)field_of(c, k) = (unsigned)v;
	return 0;
}

static const char *
show_unsigned(const struct torpor_config *c, const struct core_key *k,
	      char *buf, size_t size)
{
	snprintf(buf, size, "%u", *(const unsigned *)field_of(c, k));
	return buf;
}

static const char *const after_names[] = {
	[CONFIG_AFTER_POWEROFF] = "poweroff",
	[CONFIG_AFTER_REBOOT] = "reboot",
	[CONFIG_AFTER_SUSPEND] = "suspend",
	NULL,
};

int
config_after_from_name(const char *name)
{
	int i = name ? config_choice_index(after_names, name) : -1;

	return i < 0 ? -EINVAL : i;
}

static const char *const power_off_names[] = {
	[CONFIG_POWER_OFF_PLATFORM] = "platform",
	[CONFIG_POWER_OFF_SHUTDOWN] = "shutdown",
	NULL,
};

static const char *const write_thread_names[] = {
	[CONFIG_WRITE_THREAD_AUTO] = "auto",
	[CONFIG_WRITE_THREAD_NO] = "no",
	[CONFIG_WRITE_THREAD_YES] = "yes",
	NULL,
};

/* An ENUM key stored as an int (an enum of the config) at its offset: the
 * index of the value in the key's choices. */
_Static_assert(sizeof(enum config_after) == sizeof(int) &&
	       sizeof(enum config_power_off) == sizeof(int) &&
	       sizeof(enum config_write_thread) == sizeof(int),
	       "enum keys are stored as int");
static int
set_choice(struct torpor_config *c, const struct core_key *k,
	   const char *value, char *reason, size_t reason_size)
{
	*(int *)field_of(c, k) = config_choice_index(k->decl.choices, value);
	return 0;
}

static const char *
show_choice(const struct torpor_config *c, const struct core_key *k,
	    char *buf, size_t size)
{
	return k->decl.choices[*(const int *)field_of(c, k)];
}

static int
set_image_size(struct torpor_config *c, const struct core_key *k,
	       const char *value, char *reason, size_t reason_size)
{
	c->has_image_size = value != NULL;
	c->image_size = 0;
	if (value && config_parse_size(value, &c->image_size) < 0)
		return -EINVAL;
	return 0;
}

static int
set_hibernate_delay(struct torpor_config *c, const struct core_key *k,
		    const char *value, char *reason, size_t reason_size)
{
	c->has_hibernate_delay = value != NULL;
	c->hibernate_delay = 0;
	return value ? set_unsigned(c, k, value, reason, reason_size) : 0;
}

static const char *
show_hibernate_delay(const struct torpor_config *c, const struct core_key *k,
		     char *buf, size_t size)
{
	return c->has_hibernate_delay ? show_unsigned(c, k, buf, size) : NULL;
}

/* Bytes with the largest suffix that keeps them exact. */
static const char *
show_image_size(const struct torpor_config *c, const struct core_key *k,
		char *buf, size_t size)
{
	static const char suffixes[] = "KMGT";
	uint64_t v = c->image_size;
	int i = 0;

	if (!c->has_image_size)
		return NULL;
	while (v && suffixes[i] && v % 1024 == 0) {
		v /= 1024;
		i++;
	}
	snprintf(buf, size, "%" PRIu64 "%.*s", v, i ? 1 : 0,
		 i ? &suffixes[i - 1] : "");
	return buf;
}

#define FIELD(f)	offsetof(struct torpor_config, f)

/* In the order `torpor config` prints them. */
static const struct core_key core_keys[] = {
	{ .decl = { .name = "filters", .type = TORPOR_CONFIG_STRING,
		    .default_value = "",
		    .help = "filter plugins, in hibernate order" },
	  .offset = FIELD(filters),
	  .set = set_filters, .show = show_filters },
	{ .decl = { .name = "writer", .type = TORPOR_CONFIG_STRING,
		    .help = "the writer plugin that stores the image" },
	  .optional = true, .offset = FIELD(writer),
	  .set = set_plugin_name, .show = show_string },
	{ .decl = { .name = "threads", .type = TORPOR_CONFIG_INT,
		    .min = 0, .max = CONFIG_MAX_THREADS,
		    .default_value = "0",
		    .help = "worker threads; 0: one per online CPU, none "
			    "with one CPU" },
	  .offset = FIELD(threads),
	  .set = set_unsigned, .show = show_unsigned },
	{ .decl = { .name = "after", .type = TORPOR_CONFIG_ENUM,
		    .choices = after_names, .default_value = "poweroff",
		    .help = "what the machine does once the image is "
			    "written" },
	  .offset = FIELD(after),
	  .set = set_choice, .show = show_choice },
	{ .decl = { .name = "power_off", .type = TORPOR_CONFIG_ENUM,
		    .choices = power_off_names, .default_value = "platform",
		    .help = "how to switch off: the platform's hibernation "
			    "state (ACPI S4), else a plain power-off; or "
			    "shutdown: always the plain one" },
	  .offset = FIELD(power_off),
	  .set = set_choice, .show = show_choice },
	{ .decl = { .name = "write_thread", .type = TORPOR_CONFIG_ENUM,
		    .choices = write_thread_names, .default_value = "auto",
		    .help = "hibernation writes the image on a thread of its "
			    "own while the next buffer is filled (yes), "
			    "in turn with the filling (no), or yes when more "
			    "than one CPU is online (auto)" },
	  .offset = FIELD(write_thread),
	  .set = set_choice, .show = show_choice },
	{ .decl = { .name = "snapshot", .type = TORPOR_CONFIG_STRING,
		    .default_value = SNAPSHOT_DEFAULT_SPEC,
		    .help = "the snapshot device, or sim[:SIZE[:SEED]]" },
	  .offset = FIELD(snapshot),
	  .set = set_snapshot, .show = show_string },
	{ .decl = { .name = "plugin_dir", .type = TORPOR_CONFIG_STRING,
		    .help = "where plugins are loaded from; not set: the "
			    "built-in directory" },
	  .optional = true, .offset = FIELD(plugin_dir),
	  .set = set_directory, .show = show_string },
	{ .decl = { .name = "state_dir", .type = TORPOR_CONFIG_STRING,
		    .help = "where the figures of the last cycle are kept; "
			    "not set: the built-in directory" },
	  .optional = true, .offset = FIELD(state_dir),
	  .set = set_directory, .show = show_string },
	{ .decl = { .name = "chunk_pages", .type = TORPOR_CONFIG_INT,
		    .min = 1, .max = CONFIG_MAX_CHUNK_PAGES,
		    .default_value = "32",
		    .help = "pages per chunk" },
	  .offset = FIELD(chunk_pages),
	  .set = set_unsigned, .show = show_unsigned },
	{ .decl = { .name = "image_size", .type = TORPOR_CONFIG_SIZE,
		    .help = "the image size to ask the kernel for; not set: "
			    "the kernel's choice" },
	  .optional = true, .offset = FIELD(image_size),
	  .set = set_image_size, .show = show_image_size },
	{ .decl = { .name = "group", .type = TORPOR_CONFIG_STRING,
		    .help = "a group whose members may ask torpord to "
			    "hibernate, reload, verify and invalidate; not "
			    "set: root only" },
	  .optional = true, .offset = FIELD(group),
	  .set = set_group, .show = show_string },
	{ .decl = { .name = "initramfs", .type = TORPOR_CONFIG_STRING,
		    .default_value = CONFIG_INITRAMFS_AUTO,
		    .help = "the initramfs the next boot loads, checked "
			    "before hibernating: auto (the running kernel's "
			    "in /boot), none (not checked) or a path" },
	  .offset = FIELD(initramfs),
	  .set = set_initramfs, .show = show_string },
	{ .decl = { .name = "hibernate_delay", .type = TORPOR_CONFIG_INT,
		    .min = 0, .max = CONFIG_MAX_HIBERNATE_DELAY,
		    .help = "seconds torpor suspend-then-hibernate stays in "
			    "RAM before it hibernates; not set: systemd's "
			    "HibernateDelaySec=, else 2 hours" },
	  .optional = true, .offset = FIELD(hibernate_delay),
	  .set = set_hibernate_delay, .show = show_hibernate_delay },
};

#define N_CORE_KEYS	(sizeof(core_keys) / sizeof(core_keys[0]))

static const struct core_key *
find_core_key(const char *name)
{
	size_t i;

	for (i = 0; i < N_CORE_KEYS; i++)
		if (strcmp(core_keys[i].decl.name, name) == 0)
			return &core_keys[i];
	return NULL;
}

/* Check and store one value of k; NULL (an optional key): not set. */
static int
set_core_key(struct torpor_config *c, const struct core_key *k,
	     const char *value, char *reason, size_t reason_size)
{
	int r;

	if (k->optional && value && !*value)
		value = NULL;
	if (value) {
		r = config_check_value(&k->decl, value, reason, reason_size);
		if (r < 0)
			return r;
	}
	return k->set(c, k, value, reason, reason_size);
}

/* Apply one [torpor] key; on a bad value write a reason. */
int
config_core_apply(struct torpor_config *c, const char *key,
		  const char *value, char *reason, size_t reason_size)
{
	const struct core_key *k = find_core_key(key);
	size_t used, i;

	if (k)
		return set_core_key(c, k, value, reason, reason_size);
	used = (size_t)snprintf(reason, reason_size, "unknown key (known: ");
	for (i = 0; i < N_CORE_KEYS; i++)
		config_append_name(reason, reason_size, &used,
				   i ? ", " : "", core_keys[i].decl.name);
	config_append_name(reason, reason_size, &used, "", ")");
	return -EINVAL;
}

/* Every key at its declared default; a key without one is not set. */
struct torpor_config *
config_new_default(void)
{
	struct torpor_config *c = calloc(1, sizeof(*c));
	char reason[CONFIG_REASON_MAX];
	size_t i;

	if (!c)
		return NULL;
	for (i = 0; i < N_CORE_KEYS; i++) {
		const struct core_key *k = &core_keys[i];

		if (k->decl.default_value &&
		    set_core_key(c, k, k->decl.default_value, reason,
				 sizeof(reason)) < 0) {
			config_free(c);
			return NULL;
		}
	}
	return c;
}

void
config_core_dump(const struct torpor_config *c, FILE *f)
{
	char buf[1024];
	size_t i;

	fprintf(f, "[%s]\n", CONFIG_CORE_SECTION);
	for (i = 0; i < N_CORE_KEYS; i++) {
		const struct core_key *k = &core_keys[i];

		config_dump_key(f, k->decl.name, k->show(c, k, buf, sizeof(buf)),
				config_find_entry(c, CONFIG_CORE_SECTION,
						  k->decl.name) != NULL,
				k->decl.help);
	}
}
