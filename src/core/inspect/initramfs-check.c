/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The initramfs check before hibernating (initramfs-check.h).  The
 * initramfs hooks copy torpor-resume, the plugins, /etc/torpor/torpor.conf
 * and the key files (initramfs/): this looks for each in the initramfs the
 * next boot loads, and compares the copied configuration's resume location
 * with the one the image is about to be written to.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "device-names.h"
#include "dm-stack.h"
#include "elf-needed.h"
#include "initramfs-check.h"
#include "initramfs-list.h"
#include "loader.h"
#include "log.h"
#include "snapshot.h"
#include "sysroot.h"
#include "write-all.h"

/* Where torpor-resume reads its configuration, without the "/". */
#define CONF_IN_INITRAMFS	(TORPOR_DEFAULT_CONFIG + 1)

/* The files a filter reads at resume, by the mode it is configured in:
 * the plugins know them, the ABI has no way to say them. */
static const struct key_file_rule {
	const char *plugin, *mode_key, *mode, *path_key;
} key_file_rules[] = {
	{ "crypt", "mode", "sealed", "private_key" },
	{ "crypt", "mode", "keyfile", "key_file" },
};

#define N_RULES	(sizeof(key_file_rules) / sizeof(key_file_rules[0]))
/* initramfs-tools' cryptroot unlocks the mappings named here, no others. */
#define CRYPTTAB_IN_INITRAMFS	"cryptroot/crypttab"
#define MAX_CAPTURES	(2 + N_RULES)

struct check {
	struct torpor_session *s;
	const struct initramfs_check_options *o;
	const char *path;		/* the initramfs */
	const char *release;		/* its kernel's, when auto found it */
	struct initramfs_listing l;
	struct initramfs_capture captures[MAX_CAPTURES];
	struct torpor_config *conf;	/* the initramfs's torpor.conf */
	unsigned problems;
};

/* One thing the next boot would lack: an error, or with --force a
 * warning. */
static void __attribute__((format(printf, 2, 3)))
problem(struct check *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->problems++;
	if (c->o->force)
		log_warning("initramfs %s: %s", c->path, msg);
	else
		log_error("initramfs %s: %s", c->path, msg);
}

static bool
same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static const char *
or_unset(const char *v)
{
	return v ? v : "(not set)";
}

/* The rule's path key when plugin p is configured in the rule's mode. */
static const char *
rule_path(const struct torpor_config *conf, const struct plugin_entry *p,
	  const struct key_file_rule *rule)
{
	if (strcmp(p->ops.name, rule->plugin) != 0 ||
	    !same(config_get_for(conf, &p->ops, rule->mode_key), rule->mode))
		return NULL;
	return config_get_for(conf, &p->ops, rule->path_key);
}

/* Which key files to read out of the initramfs: those this system's
 * configuration names. */
static void
want_captures(struct check *c)
{
	const struct torpor_config *conf = c->s->config;
	size_t i, j, n = 0;

	c->captures[n++].name = CONF_IN_INITRAMFS;
	c->captures[n++].name = CRYPTTAB_IN_INITRAMFS;
	for (i = 0; i < conf->n_filters; i++) {
		struct plugin_entry *p = registry_find(&c->s->reg, conf->filters[i]);

		for (j = 0; p && j < N_RULES && n < MAX_CAPTURES; j++) {
			const char *path = rule_path(conf, p, &key_file_rules[j]);

			if (path && path[0] == '/')
				c->captures[n++].name = path + 1;
		}
	}
	c->l.captures = c->captures;
	c->l.n_captures = n;
}

static struct initramfs_capture *
captured(struct check *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->l.n_captures; i++)
		if (strcmp(c->captures[i].name, name) == 0)
			return &c->captures[i];
	return NULL;
}

/* The copied torpor.conf, parsed as torpor-resume will parse it. */
static int
load_copied_config(struct check *c)
{
	struct initramfs_capture *cap = captured(c, CONF_IN_INITRAMFS);
	char path[64];
	int fd, r;

	if (!cap->data) {
		problem(c, "it has no /%s (or one larger than %u bytes)",
			CONF_IN_INITRAMFS, INITRAMFS_MAX_CAPTURE);
		return -ENOENT;
	}
	fd = memfd_create("torpor.conf-in-initramfs", MFD_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "cannot hold the initramfs's torpor.conf: %m");
	r = write_all(fd, cap->data, cap->len);
	if (r < 0) {
		log_error_errno(r, "cannot hold the initramfs's torpor.conf: %m");
		close(fd);
		return r;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = config_load(path, false, &c->conf);
	close(fd);
	if (r < 0)
		problem(c, "its /%s cannot be read (the errors above name its lines)",
			CONF_IN_INITRAMFS);
	return r;
}

static void
check_resume_program(struct check *c)
{
	size_t i;

	for (i = 0; i < c->l.n_entries; i++) {
		const char *slash = strrchr(c->l.entries[i].name, '/');
		const char *base = slash ? slash + 1 : c->l.entries[i].name;

		if (strcmp(base, "torpor-resume") == 0 &&
		    !S_ISDIR(c->l.entries[i].mode))
			return;
	}
	problem(c, "it has no torpor-resume");
}

/* Every plugin of the chain where the copied configuration loads them. */
static void
check_plugins(struct check *c)
{
	const struct torpor_config *conf = c->s->config;
	const char *dir = c->conf && c->conf->plugin_dir ? c->conf->plugin_dir :
			  loader_default_dir();
	char name[PATH_MAX];
	size_t i;

	for (i = 0; i <= conf->n_filters; i++) {
		const char *p = i < conf->n_filters ? conf->filters[i] : conf->writer;

		if (!p)
			continue;
		snprintf(name, sizeof(name), "%s/%s.so", dir, p);
		if (!initramfs_find(&c->l, name))
			problem(c, "it has no plugin '%s' (%s)", p, name);
	}
}

/* Whether an entry of that file name (in any directory) is there. */
static bool
has_file_named(const struct check *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->l.n_entries; i++) {
		const char *slash = strrchr(c->l.entries[i].name, '/');

		if (strcmp(slash ? slash + 1 : c->l.entries[i].name, name) == 0 &&
		    !S_ISDIR(c->l.entries[i].mode))
			return true;
	}
	return false;
}

/* The libraries each plugin of the chain links (its file here says
 * which): a plugin without them fails to load at resume, and dlopen()'d
 * modules are where generators miss them. */
static void
check_libraries(struct check *c)
{
	const struct torpor_config *conf = c->s->config;
	struct elf_needed *need = malloc(sizeof(*need));
	size_t i, j;

	for (i = 0; need && i <= conf->n_filters; i++) {
		const char *name = i < conf->n_filters ? conf->filters[i] : conf->writer;
		const struct plugin_entry *p = name ? registry_find(&c->s->reg, name) : NULL;

		if (!p || !p->path || elf_needed(p->path, need) < 0)
			continue;
		for (j = 0; j < need->n; j++)
			if (!has_file_named(c, need->names[j]))
				problem(c, "it has no %s, which plugin '%s' links", need->names[j], name);
	}
	free(need);
}

/* The copied configuration must name the writer and every key of it that
 * this system's names: the image goes there. */
static void
check_location(struct check *c)
{
	const struct torpor_config *conf = c->s->config;
	const struct plugin_entry *w = conf->writer ?
		registry_find(&c->s->reg, conf->writer) : NULL;
	const struct torpor_config_key *k;

	if (!c->conf)
		return;
	if (!same(c->conf->writer, conf->writer)) {
		problem(c, "its torpor.conf names writer %s, this system's %s",
			or_unset(c->conf->writer), or_unset(conf->writer));
		return;
	}
	for (k = w ? w->ops.config_keys : NULL; k && k->name; k++) {
		const char *here = config_get_for(conf, &w->ops, k->name);
		const char *there = config_get_for(c->conf, &w->ops, k->name);

		if (!same(here, there))
			problem(c, "its torpor.conf has [%s] %s = %s, this system's %s",
				w->ops.name, k->name, or_unset(there),
				or_unset(here));
	}
}

/* The image's device: the writer's [device], else the filesystem of its
 * [path] (the file writer); 0 when neither names a block device. */
static dev_t
image_device(const struct torpor_config *conf, const struct plugin_entry *w)
{
	const char *spec = config_get_for(conf, &w->ops, "device");
	const char *path = config_get_for(conf, &w->ops, "path");
	char dev[PATH_MAX];
	struct stat st;

	if (spec && *spec && bd_resolve(spec, dev, sizeof(dev)) == 0 &&
	    stat(dev, &st) == 0 && S_ISBLK(st.st_mode))
		return st.st_rdev;
	if (path && *path && stat(path, &st) == 0 && major(st.st_dev) != 0)
		return st.st_dev;
	return 0;
}

/* Whether a line of the captured crypttab starts with the word name. */
static bool
crypttab_names(const struct initramfs_capture *cap, const char *name)
{
	size_t n = strlen(name), i = 0;

	while (i < cap->len) {
		const uint8_t *line = cap->data + i;
		const uint8_t *end = memchr(line, '\n', cap->len - i);
		size_t len = end ? (size_t)(end - line) : cap->len - i;

		if (len > n && memcmp(line, name, n) == 0 &&
		    (line[n] == ' ' || line[n] == '\t'))
			return true;
		i += len + 1;
	}
	return false;
}

/* What unlocks and activates the image's device before torpor-resume
 * runs: cryptsetup for a dm-crypt mapping under it (and, with
 * initramfs-tools, that mapping in cryptroot's crypttab: cryptroot
 * unlocks no other), lvm for an LVM volume. */
static void
check_unlock(struct check *c)
{
	const struct torpor_config *conf = c->s->config;
	const struct plugin_entry *w = conf->writer ?
		registry_find(&c->s->reg, conf->writer) : NULL;
	const struct initramfs_capture *tab = captured(c, CRYPTTAB_IN_INITRAMFS);
	struct bd_dm_stack st;
	dev_t dev = w ? image_device(conf, w) : 0;
	unsigned i;

	if (!dev)
		return;
	bd_dm_stack(sysroot(), dev, &st);
	if (st.n_crypt && !has_file_named(c, "cryptsetup") &&
	    !has_file_named(c, "systemd-cryptsetup"))
		problem(c, "it has no cryptsetup, and the image's device lies in the dm-crypt mapping %s: install cryptsetup-initramfs (initramfs-tools), or add dracut's crypt module",
			st.crypt[0]);
	for (i = 0; tab && tab->data && i < st.n_crypt; i++)
		if (!crypttab_names(tab, st.crypt[i]))
			problem(c, "its /%s does not unlock %s, which holds the image's device: add the option initramfs to that line of /etc/crypttab",
				CRYPTTAB_IN_INITRAMFS, st.crypt[i]);
	if (st.n_lvm && !has_file_named(c, "lvm"))
		problem(c, "it has no lvm, and the image's device is the LVM volume %s: install lvm2 (initramfs-tools), or add dracut's lvm module",
			st.lvm[0]);
}

/* Whether the copy of a key file holds what the file here holds. */
static bool
same_content(const struct initramfs_capture *cap, const char *path)
{
	uint8_t buf[INITRAMFS_MAX_CAPTURE / 16];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	bool same_bytes;

	if (fd < 0)
		return true;	/* nothing here to compare with */
	n = read(fd, buf, sizeof(buf));
	close(fd);
	same_bytes = n < 0 || ((size_t)n == cap->len &&
			       memcmp(buf, cap->data, cap->len) == 0);
	explicit_bzero(buf, sizeof(buf));	/* a key */
	return same_bytes;
}

static void
check_key_file(struct check *c, const struct plugin_entry *p,
	       const struct key_file_rule *rule)
{
	const char *path = rule_path(c->s->config, p, rule);
	struct initramfs_capture *cap;

	if (!path)
		return;
	if (!same(path, rule_path(c->conf, p, rule)))
		problem(c, "its torpor.conf does not name %s as [%s] %s in mode %s",
			path, p->ops.name, rule->path_key, rule->mode);
	cap = path[0] == '/' ? captured(c, path + 1) : NULL;
	if (!cap || !cap->data)
		problem(c, "it has no %s ([%s] %s)", path, p->ops.name,
			rule->path_key);
	else if (!same_content(cap, path))
		problem(c, "its copy of %s differs from this system's", path);
}

static void
check_key_files(struct check *c)
{
	const struct torpor_config *conf = c->s->config;
	size_t i, j;

	if (!c->conf)
		return;
	for (i = 0; i < conf->n_filters; i++) {
		struct plugin_entry *p = registry_find(&c->s->reg, conf->filters[i]);

		for (j = 0; p && j < N_RULES; j++)
			check_key_file(c, p, &key_file_rules[j]);
	}
}

/* The generator's command that rebuilds the initramfs at path, for the
 * kernel release when auto found it (update-initramfs -u alone rebuilds
 * the newest kernel's, which may not be the one running). */
static void
fix_for(const char *path, const char *release, char *buf, size_t size)
{
	char *copy = strdup(path);
	const char *base = copy ? basename(copy) : "";

	if (strncmp(base, "initramfs-", 10) == 0)
		snprintf(buf, size, "dracut -f%s%s", release ? " --kver " : "",
			 release ? release : "");
	else if (strncmp(base, "initrd.img-", 11) == 0)
		snprintf(buf, size, "update-initramfs -u%s%s",
			 release ? " -k " : "", release ? release : "");
	else
		snprintf(buf, size, "update-initramfs -u or dracut -f");
	free(copy);
}

/* auto: the running kernel's initramfs of either generator. */
static int
find_initramfs(const struct initramfs_check_options *o, char *buf, size_t size,
	       char *release, size_t release_size)
{
	const char *boot = o->boot_dir ? o->boot_dir : "/boot";
	struct utsname u;
	int i;

	if (!o->release && uname(&u) < 0)
		return -errno;
	snprintf(release, release_size, "%s", o->release ? o->release : u.release);
	for (i = 0; i < 2; i++) {
		if (i == 0)	/* initramfs-tools */
			snprintf(buf, size, "%s/initrd.img-%s", boot, release);
		else		/* dracut */
			snprintf(buf, size, "%s/initramfs-%s.img", boot, release);
		if (access(buf, F_OK) == 0)
			return 0;
	}
	snprintf(buf, size, "%s/initrd.img-%s or %s/initramfs-%s.img", boot,
		 release, boot, release);
	return -ENOENT;
}

static int
verdict(struct check *c)
{
	char fix[128];

	if (c->problems == 0) {
		log_info("initramfs %s holds what a resume needs", c->path);
		return 0;
	}
	if (c->o->force) {
		log_warning("hibernating anyway (--force): the next boot may not resume this image");
		return 0;
	}
	fix_for(c->path, c->release, fix, sizeof(fix));
	log_error("the next boot could not resume this image: rebuild the initramfs (%s), or hibernate with --force",
		  fix);
	return -ESTALE;
}

static int
check_listed(struct check *c)
{
	char why[256];
	int r;

	want_captures(c);
	r = initramfs_list(c->path, &c->l, why, sizeof(why));
	if (r < 0)
		problem(c, "it %s", why);
	else {
		log_debug("initramfs %s: %zu entries", c->path, c->l.n_entries);
		check_resume_program(c);
		/* Without a copied configuration: the built-in directory. */
		load_copied_config(c);
		check_plugins(c);
		check_libraries(c);
		check_unlock(c);
		if (c->conf) {
			check_location(c);
			check_key_files(c);
		}
	}
	r = verdict(c);
	initramfs_listing_clear(&c->l);
	config_free(c->conf);
	return r;
}

int
initramfs_check(struct torpor_session *s,
		const struct initramfs_check_options *o)
{
	const char *key = s->config->initramfs ? s->config->initramfs :
			  CONFIG_INITRAMFS_AUTO;
	bool sim = snapshot_spec_kind(s->config->snapshot) == TORPOR_SNAPSHOT_SIM;
	struct check c = { .s = s, .o = o };
	char path[PATH_MAX], release[sizeof(((struct utsname *)0)->release)];

	if (strcmp(key, CONFIG_INITRAMFS_NONE) == 0)
		return 0;
	if (strcmp(key, CONFIG_INITRAMFS_AUTO) != 0) {
		c.path = key;
		return check_listed(&c);
	}
	/* The simulated source resumes through torpor-resume run by hand:
	 * no boot is involved. */
	if (sim && !o->required)
		return 0;
	if (find_initramfs(o, path, sizeof(path), release, sizeof(release)) < 0) {
		if (o->force) {
			log_warning("no initramfs found (%s): hibernating anyway (--force)", path);
			return 0;
		}
		log_error("no initramfs of the running kernel found (%s): the next boot may not run torpor-resume.  Set [torpor] initramfs = PATH to the one the boot loader loads, or initramfs = none when the resume runs without one; or hibernate with --force",
			  path);
		return -ESTALE;
	}
	c.path = path;
	c.release = release;
	return check_listed(&c);
}
