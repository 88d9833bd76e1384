/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin loader against the test-only plugins of tests/unit/plugins
 * (TORPOR_TEST_PLUGINDIR): one good filter that records its calls, one good
 * writer, and one plugin per way of being refused.  The plugins torpor ships
 * (TORPOR_BUILD_PLUGINDIR) must all load too.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gcrypt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "capture.h"
#include "crc32c.h"
#include "fake-host.h"
#include "host.h"
#include "loader.h"
#include "plugin-call.h"
#include "log.h"
#include "unit.h"

/* ---- a minimal host: logging forwarded, the rest trivial or unset ---- */

static void
host_log(int level, const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_fullv(level, plugin, fmt, ap);
	va_end(ap);
}

static const char *
host_config_get(const char *section, const char *key)
{
	return NULL;
}

static void *
host_secure_alloc(size_t size)
{
	return calloc(1, size);
}

static void
host_secure_free(void *p, size_t size)
{
	if (p)
		explicit_bzero(p, size);
	free(p);
}

static int
host_ask_passphrase(const char *prompt, char *buf, size_t size)
{
	return -ENOKEY;
}

static int
host_snapshot_kind(void)
{
	return TORPOR_SNAPSHOT_SIM;
}

static int
host_swap_set_area(uint32_t kernel_dev, uint64_t offset)
{
	return -EOPNOTSUPP;
}

static int64_t
host_swap_avail(void)
{
	return -EOPNOTSUPP;
}

static int64_t
host_swap_alloc_page(void)
{
	return -EOPNOTSUPP;
}

static int
host_swap_free_pages(void)
{
	return -EOPNOTSUPP;
}

static int
host_config_number(const char *section, const char *key, int64_t *ret)
{
	/* The core's own service, over this test's registry. */
	return host_get()->config_number(section, key, ret);
}

static const struct torpor_host host_methods = {
	.log = host_log,
	.config_get = host_config_get,
	.secure_alloc = host_secure_alloc,
	.secure_free = host_secure_free,
	.ask_passphrase = host_ask_passphrase,
	.snapshot_kind = host_snapshot_kind,
	.swap_set_area = host_swap_set_area,
	.swap_avail = host_swap_avail,
	.swap_alloc_page = host_swap_alloc_page,
	.swap_free_pages = host_swap_free_pages,
	.crc32c = crc32c,
	.config_number = host_config_number,
};

/* host_methods, and fake_host_init()'s stand-ins for the rest. */
static struct torpor_host host;

/* ---- helpers ---- */

static struct registry reg;
static char trace_path[] = "/tmp/torpor-loader-trace-XXXXXX";

static const char *
env_dir(const char *var)
{
	const char *dir = getenv(var);

	ck_assert_msg(dir && *dir, "%s is not set (run through meson test)",
		      var);
	return dir;
}

static const char *
test_dir(void)
{
	return env_dir("TORPOR_TEST_PLUGINDIR");
}

static void
setup(void)
{
	int fd;

	fake_host_init(&host, &host_methods);
	registry_init(&reg);
	host_set_registry(&reg);
	log_set_max_level(TORPOR_LOG_NOTICE);
	strcpy(trace_path, "/tmp/torpor-loader-trace-XXXXXX");
	fd = mkstemp(trace_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	setenv("TORPOR_TEST_TRACE", trace_path, 1);
}

static void
teardown(void)
{
	loader_unload_all(&reg);
	loader_set_config(NULL);
	host_set_config(NULL);
	unsetenv("TORPOR_TEST_TRACE");
	unlink(trace_path);
	log_set_max_level(TORPOR_LOG_NOTICE);
}

static void
read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Lines of log that mention needle. */
static unsigned
count_lines_with(const char *log, const char *needle)
{
	const char *line = log;
	unsigned n = 0;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (memmem(line, len, needle, strlen(needle)))
			n++;
		line += len + (end ? 1 : 0);
	}
	return n;
}

/* Whether dir/name.so is still mapped in this process. */
static bool
still_loaded(const char *dir, const char *name)
{
	char path[4096];
	void *dl;

	snprintf(path, sizeof(path), "%s/%s.so", dir, name);
	dl = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!dl)
		return false;
	dlclose(dl);
	return true;
}

static void
copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in, out;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(in, 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	ck_assert_int_eq(n, 0);
	close(in);
	close(out);
	/* The umask must not decide the mode under test. */
	ck_assert_int_eq(chmod(to, mode), 0);
}

/* ---- loading good plugins ---- */

START_TEST(test_load_good_filter)
{
	struct plugin_entry *e = NULL;
	char info[128];
	const char *dir = test_dir();
	char path[4096];

	ck_assert_int_eq(loader_load(&reg, dir, "good-filter", &host,
				     TORPOR_LOG_ERR, &e), 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->ops.name, "good-filter");
	ck_assert_int_eq(e->ops.type, TORPOR_PLUGIN_FILTER);
	ck_assert_uint_eq(e->ops.abi_version, TORPOR_PLUGIN_ABI_VERSION);
	ck_assert_ptr_nonnull(e->filter.encode);
	ck_assert_ptr_nonnull(e->filter.decode);
	ck_assert_ptr_nonnull(e->dl);
	snprintf(path, sizeof(path), "%s/good-filter.so", dir);
	ck_assert_str_eq(e->path, path);
	ck_assert_ptr_eq(registry_find(&reg, "good-filter"), e);
	ck_assert_ptr_eq(reg.filters_head, e);
	ck_assert_uint_eq(reg.n_plugins, 1);

	/* load() ran, with the host. */
	ck_assert_int_gt(e->ops.print_debug_info(info, sizeof(info)), 0);
	ck_assert_str_eq(info, "calls=load");

	ck_assert(still_loaded(dir, "good-filter"));
	ck_assert_int_eq(loader_unload(&reg, e), 0);
	ck_assert_uint_eq(reg.n_plugins, 0);
	ck_assert_ptr_null(registry_find(&reg, "good-filter"));
	ck_assert(!still_loaded(dir, "good-filter"));
}
END_TEST

START_TEST(test_load_good_writer)
{
	struct plugin_entry *e = NULL;

	ck_assert_int_eq(loader_load(&reg, test_dir(), "good-writer", &host,
				     TORPOR_LOG_ERR, &e), 0);
	ck_assert_int_eq(e->ops.type, TORPOR_PLUGIN_WRITER);
	ck_assert_ptr_nonnull(e->writer.reserve);
	ck_assert_ptr_nonnull(e->writer.invalidate);
	ck_assert_ptr_eq(reg.writers_head, e);
	ck_assert_ptr_null(reg.filters_head);
	ck_assert_int_eq(e->writer.find(), 0);
}
END_TEST

START_TEST(test_call_order)
{
	struct plugin_entry *e;
	char got[1024];
	int round;

	/* Loaded, used and unloaded twice: every method in its place, and
	 * nothing of the first life leaks into the second. */
	for (round = 0; round < 2; round++) {
		char info[128];

		e = NULL;
		ck_assert_int_eq(loader_load(&reg, test_dir(), "good-filter",
					     &host, TORPOR_LOG_ERR, &e), 0);
		ck_assert_int_eq(registry_initialise(&reg, round == 0), 0);
		ck_assert(e->initialised);
		e->ops.print_debug_info(info, sizeof(info));
		ck_assert_str_eq(info, round == 0 ? "calls=load,initialise(1)" :
				 "calls=load,initialise(0)");
		registry_cleanup(&reg, round == 0);
		ck_assert_int_eq(loader_unload(&reg, e), 0);
	}
	read_file(trace_path, got, sizeof(got));
	ck_assert_str_eq(got,
			 "good-filter load\n"
			 "good-filter initialise(1)\n"
			 "good-filter cleanup(1)\n"
			 "good-filter unload\n"
			 "good-filter load\n"
			 "good-filter initialise(0)\n"
			 "good-filter cleanup(0)\n"
			 "good-filter unload\n");
}
END_TEST

START_TEST(test_old_writer_lacks_newer_methods)
{
	struct plugin_entry *e = NULL;

	/* old-writer's struct ends after invalidate(): the methods after it
	 * (rewrite_header, which would abort) read as absent. */
	ck_assert_int_eq(loader_load(&reg, test_dir(), "old-writer", &host,
				     TORPOR_LOG_ERR, &e), 0);
	ck_assert_int_eq(e->ops.type, TORPOR_PLUGIN_WRITER);
	ck_assert_ptr_nonnull(e->writer.invalidate);
	ck_assert_ptr_null(e->writer.rewrite_header);
	ck_assert_ptr_null(e->writer.refused);
	ck_assert_ptr_null(e->writer.resume_args);
}
END_TEST

START_TEST(test_config_keys_of_another_size)
{
	struct plugin_entry *e = NULL;
	const struct torpor_config_key *k;
	int64_t v = -1;

	/* wide-keys lays its keys out with a larger stride than the core's
	 * struct: the loader copies each into the core's layout. */
	ck_assert_int_eq(loader_load(&reg, test_dir(), "wide-keys", &host,
				     TORPOR_LOG_ERR, &e), 0);
	k = e->ops.config_keys;
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(k[0].name, "level");
	ck_assert_int_eq(k[0].type, TORPOR_CONFIG_INT);
	ck_assert_int_eq(k[0].max, 9);
	ck_assert_str_eq(k[1].name, "mode");
	ck_assert_str_eq(k[1].choices[1], "b");
	ck_assert_ptr_null(k[2].name);
	/* Typed values through the host: the declared defaults. */
	ck_assert_int_eq(host.config_number("wide-keys", "level", &v), 0);
	ck_assert_int_eq(v, 3);
	ck_assert_int_eq(host.config_number("wide-keys", "mode", &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(host.config_number("wide-keys", "nope", &v), -EINVAL);
}
END_TEST

START_TEST(test_old_misc_struct_is_cut)
{
	struct plugin_entry *e = NULL;

	/* old-misc declares a struct that ends with what every kind has:
	 * whatever lies past it must not be copied (its sleep_event() would
	 * abort). */
	ck_assert_int_eq(loader_load(&reg, test_dir(), "old-misc", &host,
				     TORPOR_LOG_ERR, &e), 0);
	ck_assert_int_eq(e->ops.type, TORPOR_PLUGIN_MISC);
	ck_assert_ptr_nonnull(e->ops.load);
	ck_assert_ptr_null(e->misc.sleep_event);
	ck_assert_str_eq(e->ops.name, "old-misc");
	ck_assert_int_eq(plugins_sleep_event(&reg, TORPOR_SLEEP_PRE,
					     "hibernate"), 0);
}
END_TEST

/* ---- refusals ---- */

struct refusal {
	const char *name;
	int error;
	const char *reason;	/* a word the one log line must hold */
};

#define ABI_2_REFUSED "built for plugin ABI 2; this torpor loads ABI 3: " \
	"rebuild it against torpor-plugin " TORPOR_VERSION_STRING

static const struct refusal refusals[] = {
	{ "bad-abi", -EPROTO, "newer than this torpor's ABI 3" },
	{ "abi-1-writer", -EPROTO, "built for plugin ABI 1" },
	/* ABI 2 had one struct for every kind: whatever the kind, the
	 * message says what to do. */
	{ "abi-2-filter", -EPROTO, ABI_2_REFUSED },
	{ "abi-2-writer", -EPROTO, ABI_2_REFUSED },
	{ "abi-2-misc", -EPROTO, ABI_2_REFUSED },
	{ "newer-writer", -EPROTO, "newer than this torpor's ABI 3" },
	{ "unversioned-filter", -EPROTO, "built for" },
	{ "no-encode", -EINVAL, "encode" },
	{ "no-invalidate", -EINVAL, "invalidate" },
	{ "misnamed", -EINVAL, "other-name" },
	{ "upper-name", -EINVAL, "Upper-Name" },
	{ "load-fails", -EIO, "load()" },
	{ "small-filter", -EINVAL, "too small" },
	{ "short-misc", -EINVAL, "too small" },
	{ "bad-type", -EINVAL, "type" },
	{ "no-entry", -ENOEXEC, TORPOR_PLUGIN_ENTRY_NAME },
	{ "does-not-exist", -ENOENT, "No such file" },
};

START_TEST(test_refused)
{
	const struct refusal *t = &refusals[_i];
	struct plugin_entry *sentinel = (struct plugin_entry *)&reg, *e;
	const char *dir = test_dir();
	char log[2048], path[4096];
	int r;

	e = sentinel;
	snprintf(path, sizeof(path), "%s/%s.so", dir, t->name);
	capture_start();
	r = loader_load(&reg, dir, t->name, &host, TORPOR_LOG_ERR, &e);
	capture_end(log, sizeof(log));

	ck_assert_msg(r == t->error, "%s: got %d, expected %d", t->name, r,
		      t->error);
	ck_assert_ptr_eq(e, sentinel);
	ck_assert_uint_eq(reg.n_plugins, 0);
	ck_assert_msg(capture_lines(log) == 1, "%s: not one line: '%s'",
		      t->name, log);
	ck_assert_msg(strstr(log, path), "%s: file not named: '%s'", t->name,
		      log);
	ck_assert_msg(strstr(log, t->reason), "%s: no '%s' in '%s'", t->name,
		      t->reason, log);
	ck_assert_msg(!still_loaded(dir, t->name), "%s stayed loaded",
		      t->name);
}
END_TEST

START_TEST(test_refused_bad_names)
{
	static const char *const names[] = {
		"../test-plugins/good-filter", "Good-filter", "good_filter",
		"", "a2345678901234567890123456789012",	/* 32 */
	};
	struct plugin_entry *e = NULL;
	char log[2048];
	size_t i;
	int r;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		capture_start();
		r = loader_load(&reg, test_dir(), names[i], &host,
				TORPOR_LOG_ERR, &e);
		capture_end(log, sizeof(log));
		ck_assert_msg(r == -EINVAL, "'%s': %d", names[i], r);
		ck_assert_uint_eq(capture_lines(log), 1);
		ck_assert_msg(strstr(log, "invalid plugin name"), "%s", log);
	}
	ck_assert_ptr_null(e);
	ck_assert_uint_eq(reg.n_plugins, 0);

	/* 31 characters is a valid name: this one just does not exist. */
	capture_start();
	r = loader_load(&reg, test_dir(), "a234567890123456789012345678901",
			&host, TORPOR_LOG_ERR, &e);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -ENOENT);
}
END_TEST

START_TEST(test_refusal_level)
{
	char log[2048];

	/* The caller's level decides: a warning is dropped at max level
	 * ERR, an error is not. */
	log_set_max_level(TORPOR_LOG_ERR);
	capture_start();
	ck_assert_int_lt(loader_load(&reg, test_dir(), "bad-abi", &host,
				     TORPOR_LOG_WARNING, NULL), 0);
	capture_end(log, sizeof(log));
	ck_assert_str_eq(log, "");
	capture_start();
	ck_assert_int_lt(loader_load(&reg, test_dir(), "bad-abi", &host,
				     TORPOR_LOG_ERR, NULL), 0);
	capture_end(log, sizeof(log));
	ck_assert_uint_eq(count_lines_with(log, "bad-abi.so"), 1);
}
END_TEST

START_TEST(test_refused_duplicate)
{
	struct plugin_entry *first = NULL, *second = NULL;
	char log[2048], info[128];

	ck_assert_int_eq(loader_load(&reg, test_dir(), "good-filter", &host,
				     TORPOR_LOG_ERR, &first), 0);
	capture_start();
	ck_assert_int_eq(loader_load(&reg, test_dir(), "good-filter", &host,
				     TORPOR_LOG_ERR, &second), -EBUSY);
	capture_end(log, sizeof(log));
	ck_assert_ptr_null(second);
	ck_assert_uint_eq(count_lines_with(log, "good-filter.so"), 1);
	ck_assert_uint_eq(reg.n_plugins, 1);
	/* The loaded one is untouched: load() ran once. */
	first->ops.print_debug_info(info, sizeof(info));
	ck_assert_str_eq(info, "calls=load");
}
END_TEST

START_TEST(test_refused_insecure)
{
	char tmpl[] = "/tmp/torpor-loader-XXXXXX", path[4096], log[2048];
	struct plugin_entry *e = NULL;
	pid_t pid;
	int r, status;

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(path, sizeof(path), "%s/good-filter.so", tmpl);
	{
		char from[4096];

		snprintf(from, sizeof(from), "%s/good-filter.so", test_dir());
		copy_file(from, path, 0666);
	}

	if (geteuid() != 0) {
		/* Only root refuses: a user's own plugins are the user's. */
		ck_assert_int_eq(loader_load(&reg, tmpl, "good-filter", &host,
					     TORPOR_LOG_ERR, &e), 0);
		loader_unload_all(&reg);
		fprintf(stderr, "test_refused_insecure: not root, the refusal of a world-writable plugin is not checked\n");
		goto out;
	}

	/* World-writable file. */
	capture_start();
	r = loader_load(&reg, tmpl, "good-filter", &host, TORPOR_LOG_ERR, &e);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EPERM);
	ck_assert_ptr_null(e);
	ck_assert_uint_eq(capture_lines(log), 1);
	ck_assert_msg(strstr(log, path) && strstr(log, "writable"), "%s", log);

	/* Group-writable file. */
	ck_assert_int_eq(chmod(path, 0664), 0);
	ck_assert_int_eq(loader_load(&reg, tmpl, "good-filter", &host,
				     TORPOR_LOG_ERR, &e), -EPERM);

	/* The same file, safe: it loads (the refusal was about the mode). */
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(loader_load(&reg, tmpl, "good-filter", &host,
				     TORPOR_LOG_ERR, &e), 0);
	loader_unload_all(&reg);

	/* Not owned by root. */
	ck_assert_int_eq(chown(path, 65534, 0), 0);
	ck_assert_int_eq(loader_load(&reg, tmpl, "good-filter", &host,
				     TORPOR_LOG_ERR, &e), -EPERM);
	ck_assert_int_eq(chown(path, 0, 0), 0);

	/* World-writable directory. */
	ck_assert_int_eq(chmod(tmpl, 0777), 0);
	capture_start();
	r = loader_load(&reg, tmpl, "good-filter", &host, TORPOR_LOG_ERR, &e);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EPERM);
	ck_assert_msg(strstr(log, path) && strstr(log, "directory"), "%s",
		      log);
	ck_assert_uint_eq(reg.n_plugins, 0);

	/* Without root privileges the check does not apply. */
	ck_assert_int_eq(chmod(path, 0666), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct registry r2;

		registry_init(&r2);
		if (setegid(65534) < 0 || seteuid(65534) < 0)
			_exit(3);
		if (loader_load(&r2, tmpl, "good-filter", &host,
				TORPOR_LOG_ERR, NULL) < 0)
			_exit(1);
		loader_unload_all(&r2);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "as a user the plugin did not load (status %d)", status);
	ck_assert_uint_eq(reg.n_plugins, 0);

	/* Symbolic links: both the directory named and the one that really
	 * holds the file must be safe. */
	{
		char safe[] = "/tmp/torpor-loader-safe-XXXXXX";
		char link[4096], target[4096];

		ck_assert_ptr_nonnull(mkdtemp(safe));
		snprintf(target, sizeof(target), "%s/good-filter.so", safe);
		snprintf(link, sizeof(link), "%s/good-filter.so", safe);

		/* unsafe dir -> file in a safe dir */
		ck_assert_int_eq(chmod(path, 0644), 0);
		ck_assert_int_eq(rename(path, target), 0);
		ck_assert_int_eq(symlink(target, path), 0);
		capture_start();
		r = loader_load(&reg, tmpl, "good-filter", &host,
				TORPOR_LOG_ERR, &e);
		capture_end(log, sizeof(log));
		ck_assert_int_eq(r, -EPERM);
		ck_assert_msg(strstr(log, tmpl), "%s", log);
		ck_assert_int_eq(chmod(tmpl, 0755), 0);
		ck_assert_int_eq(loader_load(&reg, tmpl, "good-filter", &host,
					     TORPOR_LOG_ERR, &e), 0);
		loader_unload_all(&reg);
		ck_assert_int_eq(unlink(path), 0);

		/* safe dir -> file in an unsafe dir */
		ck_assert_int_eq(rename(target, path), 0);
		ck_assert_int_eq(symlink(path, link), 0);
		ck_assert_int_eq(chmod(tmpl, 0777), 0);
		capture_start();
		r = loader_load(&reg, safe, "good-filter", &host,
				TORPOR_LOG_ERR, &e);
		capture_end(log, sizeof(log));
		ck_assert_int_eq(r, -EPERM);
		ck_assert_msg(strstr(log, tmpl), "%s", log);
		ck_assert_uint_eq(reg.n_plugins, 0);
		unlink(link);
		rmdir(safe);
	}
out:
	unlink(path);
	rmdir(tmpl);
}
END_TEST

START_TEST(test_refused_unsafe_parent)
{
	char parent[] = "/tmp/torpor-loader-parent-XXXXXX";
	char dir[2048], path[4096], from[4096], log[2048];
	struct plugin_entry *e = NULL;
	int r;

	/* A root-owned, safe plugin directory inside a directory a user
	 * owns: the user could rename it away and put their own in place. */
	ck_assert_ptr_nonnull(mkdtemp(parent));
	snprintf(dir, sizeof(dir), "%s/plugins", parent);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/good-filter.so", dir);
	snprintf(from, sizeof(from), "%s/good-filter.so", test_dir());
	copy_file(from, path, 0644);
	ck_assert_int_eq(chown(parent, 65534, 65534), 0);
	capture_start();
	r = loader_load(&reg, dir, "good-filter", &host, TORPOR_LOG_ERR, &e);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EPERM);
	ck_assert_msg(strstr(log, "directory") && strstr(log, "uid 65534"),
		      "%s", log);
	ck_assert_uint_eq(reg.n_plugins, 0);

	/* The same tree owned by root loads. */
	ck_assert_int_eq(chown(parent, 0, 0), 0);
	ck_assert_int_eq(loader_load(&reg, dir, "good-filter", &host,
				     TORPOR_LOG_ERR, &e), 0);
	loader_unload_all(&reg);

	/* A relative plugin directory is never loaded from as root. */
	ck_assert_int_eq(chdir(parent), 0);
	capture_start();
	r = loader_load(&reg, "plugins", "good-filter", &host,
			TORPOR_LOG_ERR, &e);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(chdir("/"), 0);
	ck_assert_int_eq(r, -EPERM);
	ck_assert_msg(strstr(log, "not an absolute path"), "%s", log);

	unlink(path);
	rmdir(dir);
	rmdir(parent);
}
END_TEST

/* ---- load_all ---- */

/* "a,b,c": the names of the registered plugins, in plugin-list order. */
static void
names(char *buf, size_t size)
{
	struct plugin_entry *e;

	buf[0] = '\0';
	for (e = reg.plugins_head; e; e = e->next_plugin) {
		if (buf[0])
			strncat(buf, ",", size - strlen(buf) - 1);
		strncat(buf, e->ops.name, size - strlen(buf) - 1);
	}
}

/* Every broken file of the test directory. */
static const char *const broken[] = {
	"abi-1-writer", "abi-2-filter", "abi-2-misc", "abi-2-writer",
	"bad-abi", "bad-type", "load-fails", "misnamed", "newer-writer",
	"no-encode", "no-entry", "no-invalidate", "short-misc", "small-filter",
	"unversioned-filter", "upper-name",
};
#define N_BROKEN (sizeof(broken) / sizeof(broken[0]))

START_TEST(test_load_all_unrequired_broken)
{
	static const char *const required[] = { "good-writer", "good-filter" };
	char log[8192], got[256], file[64];
	size_t i;

	capture_start();
	ck_assert_int_eq(loader_load_all(&reg, test_dir(), required, 2, &host),
			 0);
	capture_end(log, sizeof(log));
	/* The good ones load, in name order, whatever the others do. */
	names(got, sizeof(got));
	ck_assert_str_eq(got, "good-filter,good-writer,old-misc,old-writer,wide-keys");
	/* Each broken one is reported once. */
	for (i = 0; i < N_BROKEN; i++) {
		snprintf(file, sizeof(file), "/%s.so", broken[i]);
		ck_assert_msg(count_lines_with(log, file) == 1,
			      "%s not reported once: %s", file, log);
	}
	ck_assert_uint_eq(capture_lines(log), N_BROKEN);

	/* ... as warnings: none is left at max level ERR. */
	loader_unload_all(&reg);
	log_set_max_level(TORPOR_LOG_ERR);
	capture_start();
	ck_assert_int_eq(loader_load_all(&reg, test_dir(), required, 2, &host),
			 0);
	capture_end(log, sizeof(log));
	ck_assert_str_eq(log, "");
	ck_assert_uint_eq(reg.n_plugins, 5);
}
END_TEST

START_TEST(test_load_all_required_broken)
{
	static const char *const required[] = {
		"good-filter", "no-encode", "bad-abi", "good-writer",
	};
	char log[8192], got[256];
	int r;

	log_set_max_level(TORPOR_LOG_ERR);
	capture_start();
	r = loader_load_all(&reg, test_dir(), required, 4, &host);
	capture_end(log, sizeof(log));
	/* Every file is tried; the first error (in name order) comes back. */
	ck_assert_int_eq(r, -EPROTO);
	names(got, sizeof(got));
	ck_assert_str_eq(got, "good-filter,good-writer,old-misc,old-writer,wide-keys");
	/* The two required ones are errors, the others stay warnings. */
	ck_assert_uint_eq(count_lines_with(log, "/bad-abi.so"), 1);
	ck_assert_uint_eq(count_lines_with(log, "/no-encode.so"), 1);
	ck_assert_uint_eq(capture_lines(log), 2);
}
END_TEST

START_TEST(test_load_all_required_missing)
{
	static const char *const required[] = {
		"good-filter", "absent", "absent",
	};
	char log[8192];
	int r;

	log_set_max_level(TORPOR_LOG_ERR);
	capture_start();
	r = loader_load_all(&reg, test_dir(), required, 3, &host);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_uint_eq(count_lines_with(log, "absent"), 1);
	ck_assert_uint_eq(capture_lines(log), 1);
	ck_assert_ptr_nonnull(registry_find(&reg, "good-filter"));
	ck_assert_ptr_nonnull(registry_find(&reg, "good-writer"));
}
END_TEST

START_TEST(test_load_all_no_dir)
{
	char log[2048];
	int r;

	capture_start();
	r = loader_load_all(&reg, "/nonexistent/torpor-plugins", NULL, 0,
			    &host);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -ENOENT);
	ck_assert(strstr(log, "/nonexistent/torpor-plugins") != NULL);
	ck_assert_uint_eq(reg.n_plugins, 0);
}
END_TEST

START_TEST(test_shipped_plugins_load)
{
	const char *dir = env_dir("TORPOR_BUILD_PLUGINDIR");
	struct plugin_entry *e;
	char log[8192];
	int r;

	/* The programs hold libgcrypt for their whole life (they initialise
	 * it before loading plugins); so does this test.  Otherwise unloading
	 * crypt or checksum would take libgcrypt down with them, and its
	 * one-time allocations would look like leaks under valgrind. */
	ck_assert_ptr_nonnull(gcry_check_version(NULL));

	/* Every plugin torpor builds must pass its own loader. */
	capture_start();
	r = loader_load_all(&reg, dir, NULL, 0, &host);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, 0);
	ck_assert_msg(count_lines_with(log, "refused") == 0,
		      "a shipped plugin was refused: %s", log);
	/* Each has the required methods of its kind's struct. */
	for (e = reg.plugins_head; e; e = e->next_plugin)
		ck_assert_msg(e->ops.type == TORPOR_PLUGIN_FILTER ?
			      e->filter.encode != NULL :
			      e->ops.type == TORPOR_PLUGIN_WRITER ?
			      e->writer.invalidate != NULL :
			      e->misc.sleep_event != NULL, "%s", e->ops.name);
}
END_TEST

/* ---- the plugin's section, checked before its load() ---- */

/* Write text to a fresh file and load it as the configuration that the
 * loader and the host use. */
static struct torpor_config *
use_config(const char *text, char *path, size_t size)
{
	struct torpor_config *c = NULL;
	int fd;

	snprintf(path, size, "/tmp/torpor-loader-conf-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_int_eq(config_load(path, false, &c), 0);
	unlink(path);
	loader_set_config(c);
	host_set_config(c);
	return c;
}

/*
 * An out-of-range value of a shipped filter that reads its value in
 * load(): refused by the core with FILE:LINE before load() runs (the
 * plugin's own message, without a place, never appears), and the plugin
 * is not registered.
 */
static void
expect_section_refused(const char *name, const char *text, unsigned line,
		       const char *key, const char *plugin_message)
{
	const char *dir = env_dir("TORPOR_BUILD_PLUGINDIR");
	struct torpor_config *c;
	char path[64], log[4096], want[128];
	int r;

	ck_assert_ptr_nonnull(gcry_check_version(NULL));
	c = use_config(text, path, sizeof(path));
	capture_start();
	r = loader_load(&reg, dir, name, &host, TORPOR_LOG_ERR, NULL);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EINVAL);
	snprintf(want, sizeof(want), "%s:%u: [%s] key '%s'", path, line, name,
		 key);
	ck_assert_msg(strstr(log, want), "'%s' not in: %s", want, log);
	ck_assert_msg(!strstr(log, plugin_message),
		      "the plugin's load() ran: %s", log);
	ck_assert_ptr_null(registry_find(&reg, name));

	/* loader_load_all() fails for it, though nothing requires it. */
	capture_start();
	r = loader_load_all(&reg, dir, NULL, 0, &host);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_msg(strstr(log, want), "'%s' not in: %s", want, log);
	ck_assert_ptr_null(registry_find(&reg, name));
	loader_unload_all(&reg);
	loader_set_config(NULL);
	host_set_config(NULL);
	config_free(c);
}

/* A configured plugin with no file: said at the [torpor] key that names
 * it, with the directory searched, once however often it is named. */
START_TEST(test_load_all_configured_missing)
{
	static const char *const required[] = {
		"good-filter", "absent", "gone", "absent",
	};
	struct torpor_config *c;
	char path[64], log[8192], want[512];
	int r;

	c = use_config("[torpor]\nfilters = good-filter, absent\n"
		       "\nwriter = gone\n", path, sizeof(path));
	log_set_max_level(TORPOR_LOG_ERR);
	capture_start();
	r = loader_load_all(&reg, test_dir(), required, 4, &host);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -ENOENT);
	snprintf(want, sizeof(want), "%s:2: [torpor] key 'filters': plugin "
		 "'absent' is not installed: the plugin directory %s has no "
		 "absent.so\n", path, test_dir());
	ck_assert_msg(strstr(log, want), "'%s' not in: %s", want, log);
	snprintf(want, sizeof(want), "%s:4: [torpor] key 'writer': plugin "
		 "'gone' is not installed: the plugin directory %s has no "
		 "gone.so\n", path, test_dir());
	ck_assert_msg(strstr(log, want), "'%s' not in: %s", want, log);
	ck_assert_uint_eq(capture_lines(log), 2);
	loader_unload_all(&reg);
	loader_set_config(NULL);
	host_set_config(NULL);
	config_free(c);
}
END_TEST

START_TEST(test_section_checked_before_load)
{
	expect_section_refused("zlib", "[zlib]\nlevel = 0\n", 2, "level",
			       "not a deflate level");
	expect_section_refused("checksum",
			       "[torpor]\nthreads = 1\n[checksum]\n"
			       "algorithm = md5\n", 4, "algorithm",
			       "no valid value");
	expect_section_refused("zlib", "[zlib]\nlevel = 3\nspeed = 1\n", 3,
			       "speed", "not a deflate level");
}
END_TEST

START_TEST(test_good_section_reaches_load)
{
	const char *dir = env_dir("TORPOR_BUILD_PLUGINDIR");
	struct torpor_config *c;
	struct plugin_entry *e = NULL;
	char path[64], info[256];
	int64_t v = 0;

	c = use_config("[zlib]\nlevel = 9\n", path, sizeof(path));
	ck_assert_int_eq(loader_load(&reg, dir, "zlib", &host, TORPOR_LOG_ERR,
				     &e), 0);
	ck_assert_int_eq(host.config_number("zlib", "level", &v), 0);
	ck_assert_int_eq(v, 9);
	/* load() read the level through the host. */
	ck_assert_int_gt(e->ops.print_debug_info(info, sizeof(info)), 0);
	ck_assert_msg(strstr(info, "deflate level 9"), "%s", info);
	loader_unload_all(&reg);
	loader_set_config(NULL);
	host_set_config(NULL);
	config_free(c);
}
END_TEST

/* ---- unloading ---- */

START_TEST(test_unload_refused_while_referenced)
{
	struct plugin_entry *e = NULL;
	char got[1024];

	ck_assert_int_eq(loader_load(&reg, test_dir(), "good-filter", &host,
				     TORPOR_LOG_ERR, &e), 0);
	ck_assert_int_eq(registry_get(&reg), 0);
	ck_assert_int_eq(loader_unload(&reg, e), -EBUSY);
	ck_assert_ptr_eq(registry_find(&reg, "good-filter"), e);
	ck_assert(still_loaded(test_dir(), "good-filter"));
	read_file(trace_path, got, sizeof(got));
	ck_assert_str_eq(got, "good-filter load\n");

	registry_put(&reg);
	ck_assert_int_eq(loader_unload(&reg, e), 0);
	ck_assert_ptr_null(registry_find(&reg, "good-filter"));
	read_file(trace_path, got, sizeof(got));
	ck_assert_str_eq(got, "good-filter load\ngood-filter unload\n");
}
END_TEST

START_TEST(test_unload_active_writer)
{
	struct plugin_entry *w = NULL;

	ck_assert_int_eq(loader_load(&reg, test_dir(), "good-writer", &host,
				     TORPOR_LOG_ERR, &w), 0);
	registry_set_active_writer(&reg, w);
	ck_assert(registry_can_hibernate(&reg));
	ck_assert_int_eq(loader_unload(&reg, w), 0);
	ck_assert(!registry_can_hibernate(&reg));
	ck_assert(strstr(reg.disabled_reason, "good-writer") != NULL);
}
END_TEST

START_TEST(test_unload_all)
{
	static const char *const required[] = { "good-filter" };
	char got[1024];

	log_set_max_level(TORPOR_LOG_ERR);
	ck_assert_int_eq(loader_load_all(&reg, test_dir(), required, 1, &host),
			 0);
	ck_assert_uint_eq(reg.n_plugins, 5);
	ck_assert_int_eq(registry_get(&reg), 0);
	loader_unload_all(&reg);
	ck_assert_uint_eq(reg.n_plugins, 0);
	ck_assert_ptr_null(reg.plugins_head);
	ck_assert_ptr_null(reg.filters_head);
	ck_assert_ptr_null(reg.writers_head);
	ck_assert(!still_loaded(test_dir(), "good-filter"));
	ck_assert(!still_loaded(test_dir(), "good-writer"));
	read_file(trace_path, got, sizeof(got));
	ck_assert_str_eq(got, "good-filter load\ngood-filter unload\n");
}
END_TEST

START_TEST(test_default_dir)
{
	const char *dir = loader_default_dir();

	ck_assert_ptr_nonnull(dir);
	ck_assert_msg(dir[0] == '/' && strstr(dir, "torpor"), "%s", dir);
}
END_TEST

Suite *loader_suite(void);
Suite *loader_root_suite(void);

Suite *
loader_suite(void)
{
	Suite *s = suite_create("loader");
	TCase *tc = tcase_create("loader");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_load_good_filter);
	tcase_add_test(tc, test_load_good_writer);
	tcase_add_test(tc, test_call_order);
	tcase_add_test(tc, test_old_misc_struct_is_cut);
	tcase_add_test(tc, test_old_writer_lacks_newer_methods);
	tcase_add_test(tc, test_config_keys_of_another_size);
	tcase_add_loop_test(tc, test_refused, 0,
			    sizeof(refusals) / sizeof(refusals[0]));
	tcase_add_test(tc, test_refused_bad_names);
	tcase_add_test(tc, test_refusal_level);
	tcase_add_test(tc, test_refused_duplicate);
	tcase_add_test(tc, test_refused_insecure);
	tcase_add_test(tc, test_load_all_unrequired_broken);
	tcase_add_test(tc, test_load_all_required_broken);
	tcase_add_test(tc, test_load_all_required_missing);
	tcase_add_test(tc, test_load_all_configured_missing);
	tcase_add_test(tc, test_load_all_no_dir);
	tcase_add_test(tc, test_shipped_plugins_load);
	tcase_add_test(tc, test_section_checked_before_load);
	tcase_add_test(tc, test_good_section_reaches_load);
	tcase_add_test(tc, test_unload_refused_while_referenced);
	tcase_add_test(tc, test_unload_active_writer);
	tcase_add_test(tc, test_unload_all);
	tcase_add_test(tc, test_default_dir);
	suite_add_tcase(s, tc);
	return s;
}

/* Refusals that only root makes, of trees that only root can build. */
Suite *
loader_root_suite(void)
{
	return unit_one_test_suite("loader-root", setup, teardown,
				   test_refused_unsafe_parent);
}
