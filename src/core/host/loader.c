/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Loading plugins: dlopen a NAME.so, check what it declares against the ABI
 * before any of its methods runs (except its entry point), then load() and
 * register it.  Every refusal is one log line that names the file.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "torpor-build.h"

#include "config.h"
#include "loader.h"
#include "log.h"
#include "owner.h"
#include "plugin-call.h"
#include "plugin-names.h"

#define PLUGIN_SUFFIX ".so"

/* The configuration whose plugin sections are checked before load(). */
static const struct torpor_config *loader_config;

const char *
loader_default_dir(void)
{
	return TORPOR_PLUGINDIR;
}

void
loader_set_config(const struct torpor_config *c)
{
	loader_config = c;
}

/* Log the one refusal line and return r. */
static int
refuse(int level, const char *path, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
refuse(int level, const char *path, int r, const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	log_full(level, NULL, "plugin %s refused: %s", path, reason);
	return r;
}

static int
refuse_unsafe(int level, const char *path, const char *what,
	      const char *where, const struct stat *st)
{
	return refuse(level, path, -EPERM,
		      "%s %s is not owned by root or is writable by others (mode %04o, uid %u)",
		      what, where, (unsigned)(st->st_mode & 07777),
		      (unsigned)st->st_uid);
}

/*
 * Open the canonical path real (absolute, no symbolic link in it) one
 * component at a time from "/", never following a link, and check every
 * directory on the way and the file at its end with owner_root_only().  Returns
 * the descriptor of the last component (a directory when want_dir).  The
 * descriptors, not the names, are what is used afterwards, so nothing can
 * be swapped in between the check and the use.
 */
static int
open_checked(const char *real, bool want_dir, int level, const char *path)
{
	char *copy = strdup(real), *part, *save = NULL;
	int fd, next, r = 0;
	struct stat st;

	if (!copy)
		return refuse(level, path, -ENOMEM, "out of memory");
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !owner_root_only(&st)) {
		r = fd < 0 ? -errno : refuse_unsafe(level, path, "directory", "/", &st);
		goto out;
	}
	for (part = strtok_r(copy, "/", &save); part;
	     part = strtok_r(NULL, "/", &save)) {
		bool last = !save || !*save;
		int flags = O_CLOEXEC | O_NOFOLLOW |
			    (last && !want_dir ? O_RDONLY : O_PATH | O_DIRECTORY);

		next = openat(fd, part, flags);
		if (next < 0) {
			r = refuse(level, path, -errno, "cannot open %s: %m", real);
			goto out;
		}
		close(fd);
		fd = next;
		if (fstat(fd, &st) < 0 || !owner_root_only(&st)) {
			r = refuse_unsafe(level, path,
					  last && !want_dir ? "file" : "directory",
					  real, &st);
			goto out;
		}
	}
out:
	free(copy);
	if (r < 0 && fd >= 0)
		close(fd);
	return r < 0 ? r : fd;
}

/*
 * Open the plugin file once and return its descriptor.  As root, a plugin
 * runs with every privilege: the directory it was named in and the file
 * (after symbolic links) must be owned by root and writable by nobody
 * else, and so must every directory above them up to "/".  A relative
 * plugin directory is refused as root.
 */
static int
open_plugin_file(const char *dir, const char *path, int level)
{
	char *real_dir = NULL, *real = NULL;
	struct stat st;
	int fd, r;

	if (geteuid() != 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return refuse(level, path, -errno, "%m");
		goto regular;
	}
	if (dir[0] != '/')
		return refuse(level, path, -EPERM,
			      "the plugin directory %s is not an absolute path", dir);
	real_dir = realpath(dir, NULL);
	real = real_dir ? realpath(path, NULL) : NULL;
	if (!real) {
		r = refuse(level, path, -errno, "%m");
		goto out;
	}
	r = open_checked(real_dir, true, level, path);
	if (r < 0)
		goto out;
	close(r);
	fd = open_checked(real, false, level, path);
	free(real_dir);
	free(real);
	if (fd < 0)
		return fd;
regular:
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(level, path, -EINVAL, "not a regular file");
	}
	return fd;
out:
	free(real_dir);
	free(real);
	return r;
}

/* The end of member m of struct kind. */
#define KIND_END(kind, m) \
	(offsetof(struct kind, m) + sizeof(((struct kind *)0)->m))

/* Copy n bytes, at most the core's size of the struct, into dst. */
#define COPY_KIND(dst, src, n) \
	memcpy(&(dst), (src), (n) < sizeof(dst) ? (n) : sizeof(dst))

/*
 * Copy the struct that p begins, of the kind p->type says, into e: as much
 * of it as both sides know; the rest stays zero (absent).
 */
static void
copy_kind(struct plugin_entry *e, const struct torpor_plugin *p)
{
	switch (p->type) {
	case TORPOR_PLUGIN_FILTER:
		COPY_KIND(e->filter, p, p->struct_size);
		break;
	case TORPOR_PLUGIN_WRITER:
		COPY_KIND(e->writer, p, p->struct_size);
		break;
	case TORPOR_PLUGIN_MISC:
		COPY_KIND(e->misc, p, p->struct_size);
		break;
	}
}

/*
 * The smallest struct a plugin of its kind may hand over: up to the last
 * method its kind requires (decode for a filter, invalidate for a writer),
 * or what every kind has for misc.  Later optional methods of a shorter
 * struct read as NULL.
 */
static size_t
min_struct_size(enum torpor_plugin_type type)
{
	switch (type) {
	case TORPOR_PLUGIN_FILTER:
		return KIND_END(torpor_filter, decode);
	case TORPOR_PLUGIN_WRITER:
		return KIND_END(torpor_writer, invalidate);
	default:
		return sizeof(struct torpor_plugin);
	}
}

/* Which required method of e's kind is missing, or NULL when none is. */
static const char *
missing_method(const struct plugin_entry *e)
{
	const struct torpor_filter *f = &e->filter;
	const struct torpor_writer *w = &e->writer;

	if (e->ops.type == TORPOR_PLUGIN_FILTER) {
		if (!f->max_encoded_size)
			return "max_encoded_size";
		if (!f->encode)
			return "encode";
		if (!f->decode)
			return "decode";
	} else if (e->ops.type == TORPOR_PLUGIN_WRITER) {
		if (!w->reserve)
			return "reserve";
		if (!w->write)
			return "write";
		if (!w->commit)
			return "commit";
		if (!w->find)
			return "find";
		if (!w->read_header)
			return "read_header";
		if (!w->read)
			return "read";
		if (!w->invalidate)
			return "invalidate";
	}
	return NULL;
}

/* The size of a config key in ABI 2, the smallest the core accepts. */
#define CONFIG_KEY_V2_SIZE \
	(offsetof(struct torpor_config_key, help) + \
	 sizeof(((struct torpor_config_key *)0)->help))

/* More keys than any section needs: a missing terminator is refused. */
#define MAX_CONFIG_KEYS 128

/*
 * Copy the plugin's config keys, laid out with its own element size, into
 * an array of the core's struct (fields the plugin does not know are
 * zero), so that the key struct may grow.
 */
static int
copy_config_keys(struct torpor_plugin *ops, const char *path, int level,
		 struct torpor_config_key **ret)
{
	const uint8_t *src = (const uint8_t *)ops->config_keys;
	size_t stride = ops->config_key_size, n, copy;
	struct torpor_config_key *keys;

	*ret = NULL;
	if (!src)
		return 0;
	if (stride < CONFIG_KEY_V2_SIZE)
		return refuse(level, path, -EINVAL,
			      "config key size %zu is smaller than ABI 2's %zu",
			      stride, (size_t)CONFIG_KEY_V2_SIZE);
	for (n = 0; ((const struct torpor_config_key *)(src + n * stride))->name; n++)
		if (n == MAX_CONFIG_KEYS)
			return refuse(level, path, -E2BIG,
				      "more than %d config keys (no terminating entry?)",
				      MAX_CONFIG_KEYS);
	keys = calloc(n + 1, sizeof(*keys));
	if (!keys)
		return refuse(level, path, -ENOMEM, "out of memory");
	copy = stride < sizeof(*keys) ? stride : sizeof(*keys);
	for (size_t i = 0; i < n; i++)
		memcpy(&keys[i], src + i * stride, copy);
	ops->config_keys = keys;
	*ret = keys;
	return 0;
}

/* The checks of what every kind has: version, size, kind. */
static int
check_declaration(const struct torpor_plugin *p, const char *path, int level)
{
	int type;

	/* Only abi_version, which every ABI puts first, is read before the
	 * version is known to be this one. */
	if (p->abi_version < TORPOR_PLUGIN_ABI_OLDEST)
		return refuse(level, path, -EPROTO,
			      "built for plugin ABI %u; this torpor loads ABI %d: rebuild it against torpor-plugin %s",
			      p->abi_version, TORPOR_PLUGIN_ABI_VERSION,
			      TORPOR_VERSION_STRING);
	if (p->abi_version > TORPOR_PLUGIN_ABI_VERSION)
		return refuse(level, path, -EPROTO,
			      "built for plugin ABI %u, newer than this torpor's ABI %d",
			      p->abi_version, TORPOR_PLUGIN_ABI_VERSION);
	/* type is needed to know how big the struct must be. */
	if (p->struct_size < sizeof(struct torpor_plugin))
		return refuse(level, path, -EINVAL,
			      "plugin struct too small (%u bytes)", p->struct_size);
	type = (int)p->type;
	if (type != TORPOR_PLUGIN_FILTER && type != TORPOR_PLUGIN_WRITER &&
	    type != TORPOR_PLUGIN_MISC)
		return refuse(level, path, -EINVAL, "invalid plugin type %d",
			      type);
	/* A filter that does not know every method of this ABI could let
	 * data past it (plaintext on disk for an encryption filter). */
	if (type == TORPOR_PLUGIN_FILTER &&
	    p->abi_version != TORPOR_PLUGIN_ABI_VERSION)
		return refuse(level, path, -EPROTO,
			      "filter ABI version %u, this core needs exactly %d",
			      p->abi_version, TORPOR_PLUGIN_ABI_VERSION);
	if (p->struct_size < min_struct_size(p->type))
		return refuse(level, path, -EINVAL,
			      "plugin struct too small for its type (%u bytes, need %zu)",
			      p->struct_size, min_struct_size(p->type));
	return 0;
}

/*
 * Check the plugin's declaration and copy the struct of its kind into e
 * (with its config keys).  Only the first fields are read before
 * struct_size says how much more there is.
 */
static int
check_plugin(const struct torpor_plugin *p, const char *name,
	     const char *path, int level, struct plugin_entry *e)
{
	const char *missing;
	int r;

	r = check_declaration(p, path, level);
	if (r < 0)
		return r;
	copy_kind(e, p);

	if (!e->ops.name)
		return refuse(level, path, -EINVAL, "the plugin has no name");
	if (!plugin_name_valid(e->ops.name, strlen(e->ops.name)))
		return refuse(level, path, -EINVAL,
			      "invalid plugin name '%.64s' (allowed: [a-z0-9-]{1,%d})",
			      e->ops.name, TORPOR_PLUGIN_NAME_MAX);
	if (strcmp(e->ops.name, name) != 0)
		return refuse(level, path, -EINVAL,
			      "the plugin calls itself '%s', its file is named '%s'",
			      e->ops.name, name);
	if (e->ops.type == TORPOR_PLUGIN_FILTER && !e->ops.built_for)
		return refuse(level, path, -EPROTO,
			      "the filter does not say which torpor it was built for (use TORPOR_FILTER_REGISTER)");
	missing = missing_method(e);
	if (missing)
		return refuse(level, path, -EINVAL,
			      "required method %s is missing", missing);
	return copy_config_keys(&e->ops, path, level, &e->keys);
}

static void
entry_free(struct plugin_entry *e)
{
	if (!e)
		return;
	if (e->dl)
		dlclose(e->dl);
	if (e->fd >= 0)
		close(e->fd);
	free(e->keys);
	free(e->path);
	free(e);
}

/* The checks before anything of the file runs: a plain name, not loaded
 * already, and the file opened once as open_plugin_file() says. */
static int
check_file(struct registry *r, const char *dir, const char *name,
	   const char *path, int level)
{
	/* The name becomes a path: refuse anything but a plain name. */
	if (!(name && plugin_name_valid(name, strlen(name))))
		return refuse(level, path, -EINVAL,
			      "invalid plugin name (allowed: [a-z0-9-]{1,%d})",
			      TORPOR_PLUGIN_NAME_MAX);
	if (registry_find(r, name))
		return refuse(level, path, -EBUSY,
			      "a plugin named '%s' is already loaded", name);
	return open_plugin_file(dir, path, level);
}

/*
 * dlopen the file open on *fd through /proc/self/fd (never its name
 * again).  The dynamic loader knows objects by the name they were opened
 * under: when an object is still resident under this descriptor's name
 * (one that was unloaded but could not be unmapped), the file is moved to
 * another descriptor first, so that dlopen cannot hand back the other
 * object.  The descriptor stays open while the plugin is loaded.
 */
static void *
dlopen_fd(int *fd)
{
	char fd_path[64];
	void *stale;
	int next;

	for (int tries = 0; tries < 16; tries++) {
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", *fd);
		stale = dlopen(fd_path, RTLD_NOW | RTLD_NOLOAD);
		if (!stale)
			return dlopen(fd_path, RTLD_NOW | RTLD_LOCAL);
		dlclose(stale);
		next = fcntl(*fd, F_DUPFD_CLOEXEC, *fd + 1);
		if (next < 0)
			return NULL;
		close(*fd);
		*fd = next;
	}
	return NULL;
}

/* dlopen the checked file through its descriptor and call its entry
 * point. */
static int
open_plugin(int *fd, const char *path, int level, void **ret_dl,
	    const struct torpor_plugin **ret_p)
{
	torpor_plugin_entry_fn entry;
	const char *err;
	void *dl;

	(void)dlerror();
	dl = dlopen_fd(fd);
	if (!dl) {
		err = dlerror();
		return refuse(level, path, -ENOEXEC, "dlopen failed: %s",
			      err ? err : "unknown error");
	}
	(void)dlerror();
	*(void **)&entry = dlsym(dl, TORPOR_PLUGIN_ENTRY_NAME);
	err = dlerror();
	if (err || !entry) {
		/* err lives in the loader's buffer, until dlclose(). */
		int r = refuse(level, path, -ENOEXEC, "no entry point %s: %s",
			       TORPOR_PLUGIN_ENTRY_NAME,
			       err ? err : "symbol is NULL");

		dlclose(dl);
		return r;
	}
	*ret_p = entry();
	if (!*ret_p) {
		dlclose(dl);
		return refuse(level, path, -ENOEXEC,
			      "entry point returned no plugin");
	}
	*ret_dl = dl;
	return 0;
}

/* Register e, then load() it: registered first, so that load() can read
 * its own section's typed values through the host (found by name). */
static int
register_and_load(struct registry *r, struct plugin_entry *e,
		  const char *path, const struct torpor_host *host, int level)
{
	int ret;

	ret = registry_register(r, e);
	if (ret < 0)
		return refuse(level, path, ret, "cannot register: %s",
			      strerror(-ret));
	ret = plugin_load(e, host);
	if (ret < 0) {
		registry_unregister(r, e);
		return refuse(level, path, ret, "load() failed: %s",
			      strerror(-ret));
	}
	return 0;
}

/*
 * The plugin's section of the configuration, checked against the keys it
 * declares before its load() can read a value: a bad value is told as
 * FILE:LINE by the core, never by the plugin.  A bad section is an error
 * of the configuration, whether the plugin is required or not.
 */
static int
check_section(const struct plugin_entry *e, const char *path,
	      bool *config_bad)
{
	if (config_check_section(loader_config, &e->ops) < 0) {
		*config_bad = true;
		return refuse(TORPOR_LOG_ERR, path, -EINVAL,
			      "its section [%s] of %s is not valid",
			      e->ops.name, loader_config->path ?
			      loader_config->path : "the configuration");
	}
	return 0;
}

static int
load_one(struct registry *r, const char *dir, const char *name,
	 const struct torpor_host *host, int level,
	 struct plugin_entry **ret, bool *config_bad)
{
	const struct torpor_plugin *p;
	struct plugin_entry *e = NULL;
	char *path = NULL;
	void *dl = NULL;
	int ret_r, fd = -1;

	if (asprintf(&path, "%s/%s%s", dir, name ? name : "",
		     PLUGIN_SUFFIX) < 0)
		return log_error_errno(-ENOMEM, "out of memory");
	fd = check_file(r, dir, name, path, level);
	if (fd < 0) {
		ret_r = fd;
		goto fail;
	}
	ret_r = open_plugin(&fd, path, level, &dl, &p);
	if (ret_r < 0)
		goto fail;
	e = calloc(1, sizeof(*e));
	if (!e) {
		ret_r = refuse(level, path, -ENOMEM, "out of memory");
		goto fail;
	}
	ret_r = check_plugin(p, name, path, level, e);
	if (ret_r >= 0)
		ret_r = check_section(e, path, config_bad);
	if (ret_r < 0)
		goto fail;
	ret_r = register_and_load(r, e, path, host, level);
	if (ret_r < 0)
		goto fail;

	e->dl = dl;
	e->fd = fd;
	e->path = path;
	log_debug("loaded plugin %s from %s", name, path);
	if (ret)
		*ret = e;
	return 0;

fail:
	if (e)
		free(e->keys);
	free(e);
	if (dl)
		dlclose(dl);
	if (fd >= 0)
		close(fd);
	free(path);
	return ret_r;
}

int
loader_load(struct registry *r, const char *dir, const char *name,
	    const struct torpor_host *host, int level,
	    struct plugin_entry **ret)
{
	bool config_bad = false;

	return load_one(r, dir, name, host, level, ret, &config_bad);
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The NAME of every NAME.so in dir, sorted. */
static int
list_plugin_files(const char *dir, char ***ret_names, size_t *ret_n)
{
	char **names = NULL, **tmp;
	size_t n = 0, alloc = 0, i;
	struct dirent *de;
	DIR *d;
	int r = 0;

	d = opendir(dir);
	if (!d)
		return -errno;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		size_t len = strlen(de->d_name), slen = strlen(PLUGIN_SUFFIX);

		if (de->d_name[0] == '.' || len <= slen ||
		    strcmp(de->d_name + len - slen, PLUGIN_SUFFIX) != 0)
			continue;
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			tmp = realloc(names, alloc * sizeof(*names));
			if (!tmp) {
				r = -ENOMEM;
				goto fail;
			}
			names = tmp;
		}
		names[n] = strndup(de->d_name, len - slen);
		if (!names[n]) {
			r = -ENOMEM;
			goto fail;
		}
		n++;
	}
	if (errno) {
		r = -errno;
		goto fail;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), compare_names);
	*ret_names = names;
	*ret_n = n;
	return 0;

fail:
	closedir(d);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static bool
name_in(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (list[i] && strcmp(list[i], name) == 0)
			return true;
	return false;
}

/* A required plugin with no file in dir: said at the [torpor] key that
 * names it, as a key error is, when the configuration does. */
static void
say_missing(const char *dir, const char *name)
{
	const char *key = config_key_naming(loader_config, name);
	char place[PATH_MAX + 64];

	if (!key) {
		log_error("plugin %s/%s%s is required by the configuration but does not exist",
			  dir, name, PLUGIN_SUFFIX);
		return;
	}
	config_key_place(loader_config, CONFIG_CORE_SECTION, key, place,
			 sizeof(place));
	log_error("%s: plugin '%s' is not installed: the plugin directory %s "
		  "has no %s%s", place, name, dir, name, PLUGIN_SUFFIX);
}

int
loader_load_all(struct registry *r, const char *dir,
		const char *const *required, size_t n_required,
		const struct torpor_host *host)
{
	char **names = NULL;
	size_t n = 0, i;
	int first = 0, ret;

	ret = list_plugin_files(dir, &names, &n);
	if (ret < 0)
		return log_error_errno(ret,
				       "cannot read the plugin directory %s: %m",
				       dir);

	for (i = 0; i < n; i++) {
		bool req = name_in(names[i], required, n_required);
		bool config_bad = false;

		ret = load_one(r, dir, names[i], host,
			       req ? TORPOR_LOG_ERR : TORPOR_LOG_WARNING,
			       NULL, &config_bad);
		if (ret < 0 && (req || config_bad) && first == 0)
			first = ret;
	}

	for (i = 0; i < n_required; i++) {
		/* Report a missing required plugin once, however often the
		 * configuration names it. */
		if (!required[i] ||
		    name_in(required[i], (const char *const *)names, n) ||
		    name_in(required[i], required, i))
			continue;
		say_missing(dir, required[i]);
		if (first == 0)
			first = -ENOENT;
	}

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return first;
}

int
loader_unload(struct registry *r, struct plugin_entry *e)
{
	if (!e)
		return 0;
	if (e->refs > 0)
		return -EBUSY;
	/* Refuse new references while it goes away. */
	e->dying = true;
	plugin_unload(e);
	registry_unregister(r, e);
	/* Only what the loader allocated is freed; a built-in entry (no
	 * file) belongs to whoever registered it. */
	if (e->path)
		entry_free(e);
	return 0;
}

void
loader_unload_all(struct registry *r)
{
	/* Newest first, the reverse of loading. */
	while (r->plugins_tail) {
		struct plugin_entry *e = r->plugins_tail;

		e->refs = 0;
		loader_unload(r, e);
	}
}
