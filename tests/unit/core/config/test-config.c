/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration parser: values of a good file, one test per kind of
 * error (each checking -EINVAL and that the one-line message names the
 * file, the line and the key), the plugin-section checks against a
 * registry holding a fake plugin, sizes, lookups with defaults, and the
 * dump.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "config.h"
#include "registry.h"
#include "snapshot.h"
#include "unit.h"

static char tmpdir[256];
static char captured[16384];

/* Stands for "not written": config_load() must leave *ret alone on error. */
static struct torpor_config sentinel_config;
#define SENTINEL (&sentinel_config)

static const char *const fake_modes[] = { "fast", "slow", NULL };

static const struct torpor_config_key fake_keys[] = {
	{ .name = "name", .type = TORPOR_CONFIG_STRING,
	  .default_value = "fake", .help = "a label" },
	{ .name = "level", .type = TORPOR_CONFIG_INT, .min = 1, .max = 9,
	  .default_value = "6", .help = "how hard to work" },
	{ .name = "size", .type = TORPOR_CONFIG_SIZE, .min = 4096,
	  .max = INT64_C(1) << 30, .default_value = "1M" },
	{ .name = "verbose", .type = TORPOR_CONFIG_BOOL,
	  .default_value = "no" },
	{ .name = "mode", .type = TORPOR_CONFIG_ENUM, .choices = fake_modes,
	  .default_value = "fast" },
	{ .name = "device", .type = TORPOR_CONFIG_PATH },
	{ .name = NULL },
};

static struct plugin_entry fake_entry, other_entry;
static struct registry fake_registry;

/*
 * Built by hand, as registry_register() would leave it: "fake" (a filter
 * declaring every type of key) and "other" (a writer declaring none).
 */
static void
build_registry(void)
{
	memset(&fake_entry, 0, sizeof(fake_entry));
	memset(&other_entry, 0, sizeof(other_entry));
	memset(&fake_registry, 0, sizeof(fake_registry));

	fake_entry.ops.name = "fake";
	fake_entry.ops.description = "a filter for the tests";
	fake_entry.ops.type = TORPOR_PLUGIN_FILTER;
	fake_entry.ops.config_keys = fake_keys;
	other_entry.ops.name = "other";
	other_entry.ops.description = "a writer without keys";
	other_entry.ops.type = TORPOR_PLUGIN_WRITER;

	fake_entry.next_plugin = &other_entry;
	other_entry.prev_plugin = &fake_entry;
	fake_registry.plugins_head = &fake_entry;
	fake_registry.plugins_tail = &other_entry;
	fake_registry.filters_head = fake_registry.filters_tail = &fake_entry;
	fake_registry.writers_head = fake_registry.writers_tail = &other_entry;
	fake_registry.n_plugins = 2;
	fake_registry.n_filters = 1;
	fake_registry.n_writers = 1;
}

static void
setup(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/torpor-config.XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	build_registry();
	captured[0] = '\0';
}

static void
teardown(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		ck_assert_int_eq(unlinkat(dirfd(d), de->d_name, 0), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(tmpdir), 0);
}

/* Write text to tmpdir/name; the path goes into path. */
static void
write_file(const char *name, const char *text, char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", tmpdir, name);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* The message in captured names "PATH:LINE: " and contains needle. */
static void
assert_message(const char *path, unsigned line, const char *needle)
{
	char want[400];

	snprintf(want, sizeof(want), "%s:%u: ", path, line);
	ck_assert_msg(strstr(captured, want) != NULL,
		      "message '%s' does not name '%s'", captured, want);
	ck_assert_msg(strstr(captured, needle) != NULL,
		      "message '%s' does not mention '%s'", captured, needle);
}

/*
 * Loading text fails with -EINVAL, leaves *ret alone, and logs exactly one
 * line naming the file, line and needle (the key, quoted).
 */
static void
expect_load_error(const char *text, unsigned line, const char *needle)
{
	struct torpor_config *c = SENTINEL;
	char path[300];
	int r;

	write_file("torpor.conf", text, path, sizeof(path));
	capture_start();
	r = config_load(path, false, &c);
	capture_end(captured, sizeof(captured));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_eq(c, SENTINEL);
	assert_message(path, line, needle);
	ck_assert_uint_eq(capture_lines(captured), 1);
}

static struct torpor_config *
load_text(const char *text, char *path, size_t size)
{
	struct torpor_config *c = NULL;
	int r;

	write_file("torpor.conf", text, path, size);
	capture_start();
	r = config_load(path, false, &c);
	capture_end(captured, sizeof(captured));
	ck_assert_msg(r == 0, "config_load: %d: %s", r, captured);
	ck_assert_str_eq(captured, "");
	ck_assert_ptr_nonnull(c);
	return c;
}

/*
 * A plugin-section error: the file loads, then config_check_plugins()
 * returns -EINVAL with one line naming the file, line and needle.
 */
static void
expect_plugin_error(const char *text, unsigned line, const char *needle)
{
	struct torpor_config *c;
	char path[300];
	int r;

	c = load_text(text, path, sizeof(path));
	capture_start();
	r = config_check_plugins(c, &fake_registry);
	capture_end(captured, sizeof(captured));
	ck_assert_int_eq(r, -EINVAL);
	assert_message(path, line, needle);
	ck_assert_uint_eq(capture_lines(captured), 1);
	config_free(c);
}

static const char good_file[] =
	"# a full configuration\n"
	"[torpor]\n"
	"filters = checksum, lzo  crypt\n"
	"writer = raw\n"
	"threads = 4\n"
	"after = reboot\n"
	"snapshot = sim:256M:42\n"
	"plugin_dir = /opt/torpor/plugins\n"
	"chunk_pages = 64\n"
	"\n"
	"; the fake filter's own section\n"
	"[fake]\n"
	"level = 3\n"
	"size = 64K\n"
	"verbose = yes\n"
	"mode = slow\n"
	"device = UUID=1234-abcd\n"
	"name = hello world ; an inline comment\n";

START_TEST(test_good_file)
{
	struct torpor_config *c;
	char path[300];

	c = load_text(good_file, path, sizeof(path));
	ck_assert_str_eq(c->path, path);
	ck_assert_uint_eq(c->n_filters, 3);
	ck_assert_str_eq(c->filters[0], "checksum");
	ck_assert_str_eq(c->filters[1], "lzo");
	ck_assert_str_eq(c->filters[2], "crypt");
	ck_assert_str_eq(c->writer, "raw");
	ck_assert_uint_eq(c->threads, 4);
	ck_assert_int_eq(c->after, CONFIG_AFTER_REBOOT);
	ck_assert_str_eq(c->snapshot, "sim:256M:42");
	ck_assert_str_eq(c->plugin_dir, "/opt/torpor/plugins");
	ck_assert_uint_eq(c->chunk_pages, 64);

	/* Every key = value, in file order, with its line. */
	ck_assert_uint_eq(c->n_entries, 13);
	ck_assert_str_eq(c->entries[0].section, "torpor");
	ck_assert_str_eq(c->entries[0].key, "filters");
	ck_assert_str_eq(c->entries[0].value, "checksum, lzo  crypt");
	ck_assert_uint_eq(c->entries[0].line, 3);
	ck_assert_str_eq(c->entries[7].section, "fake");
	ck_assert_str_eq(c->entries[7].key, "level");
	ck_assert_uint_eq(c->entries[7].line, 13);
	ck_assert_str_eq(c->entries[12].key, "name");
	ck_assert_str_eq(c->entries[12].value, "hello world");
	ck_assert_uint_eq(c->entries[12].line, 18);

	capture_start();
	ck_assert_int_eq(config_check_plugins(c, &fake_registry), 0);
	capture_end(captured, sizeof(captured));
	ck_assert_str_eq(captured, "");
	config_free(c);
}
END_TEST

/* The place of a [torpor] key in messages, and which key names a plugin. */
START_TEST(test_key_place)
{
	struct torpor_config *c, *d;
	char path[300], place[400], want[400];

	c = load_text(good_file, path, sizeof(path));
	snprintf(want, sizeof(want), "%s:4: [torpor] key 'writer'", path);
	ck_assert_str_eq(config_key_place(c, "torpor", "writer", place,
					  sizeof(place)), want);
	snprintf(want, sizeof(want), "%s:3: [torpor] key 'filters'", path);
	ck_assert_str_eq(config_key_place(c, "torpor", "filters", place,
					  sizeof(place)), want);
	/* Not set in the file: the file alone. */
	ck_assert_str_eq(config_key_place(c, "torpor", "group", place,
					  sizeof(place)), path);
	ck_assert_str_eq(config_key_naming(c, "raw"), "writer");
	ck_assert_str_eq(config_key_naming(c, "lzo"), "filters");
	ck_assert_ptr_null(config_key_naming(c, "zlib"));
	ck_assert_ptr_null(config_key_naming(NULL, "raw"));
	config_free(c);

	/* No file: "configuration". */
	d = config_new_default();
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(config_key_place(d, "torpor", "writer", place,
					  sizeof(place)), "configuration");
	config_free(d);
}
END_TEST

START_TEST(test_other_after_values)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("[torpor]\nafter = suspend\nthreads = 256\n"
		      "chunk_pages = 1\nsnapshot = /dev/other-snapshot\n",
		      path, sizeof(path));
	ck_assert_int_eq(c->after, CONFIG_AFTER_SUSPEND);
	ck_assert_uint_eq(c->threads, 256);
	ck_assert_uint_eq(c->chunk_pages, 1);
	ck_assert_str_eq(c->snapshot, "/dev/other-snapshot");
	config_free(c);

	c = load_text("[torpor]\nafter = poweroff\nchunk_pages = 1024\n"
		      "snapshot = sim:4096\nthreads = 0\n",
		      path, sizeof(path));
	ck_assert_int_eq(c->after, CONFIG_AFTER_POWEROFF);
	ck_assert_uint_eq(c->chunk_pages, 1024);
	ck_assert_str_eq(c->snapshot, "sim:4096");
	ck_assert_uint_eq(c->threads, 0);
	config_free(c);
}
END_TEST

START_TEST(test_defaults)
{
	struct torpor_config *c = config_new_default();

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_null(c->path);
	ck_assert_uint_eq(c->n_filters, 0);
	ck_assert_ptr_null(c->writer);
	ck_assert_uint_eq(c->threads, 0);
	ck_assert_int_eq(c->after, CONFIG_AFTER_POWEROFF);
	ck_assert_str_eq(c->snapshot, "/dev/snapshot");
	ck_assert_ptr_null(c->plugin_dir);
	ck_assert_uint_eq(c->chunk_pages, 32);
	ck_assert_uint_eq(c->n_entries, 0);
	config_free(c);
	config_free(NULL);
}
END_TEST

START_TEST(test_empty_file_and_filters)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("", path, sizeof(path));
	ck_assert_uint_eq(c->n_filters, 0);
	ck_assert_str_eq(c->snapshot, "/dev/snapshot");
	ck_assert_uint_eq(c->chunk_pages, 32);
	config_free(c);

	/* Empty means none; an empty writer means none too. */
	c = load_text("[torpor]\nfilters =\nwriter =\nplugin_dir =\n", path,
		      sizeof(path));
	ck_assert_uint_eq(c->n_filters, 0);
	ck_assert_ptr_null(c->writer);
	ck_assert_ptr_null(c->plugin_dir);
	config_free(c);

	c = load_text("[torpor]\nfilters = a,b,,c\td-1\n", path, sizeof(path));
	ck_assert_uint_eq(c->n_filters, 4);
	ck_assert_str_eq(c->filters[0], "a");
	ck_assert_str_eq(c->filters[1], "b");
	ck_assert_str_eq(c->filters[2], "c");
	ck_assert_str_eq(c->filters[3], "d-1");
	config_free(c);
}
END_TEST

/*
 * inih would glue an indented line onto the previous value; ours reads it
 * as an ordinary line.
 */
START_TEST(test_indented_lines)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("  [torpor]\n\tfilters = lzo\n    threads = 2\n",
		      path, sizeof(path));
	ck_assert_uint_eq(c->n_filters, 1);
	ck_assert_str_eq(c->filters[0], "lzo");
	ck_assert_uint_eq(c->threads, 2);
	ck_assert_uint_eq(c->entries[1].line, 3);
	config_free(c);
}
END_TEST

START_TEST(test_byte_order_mark)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("\xef\xbb\xbf[torpor]\nthreads = 3\n", path,
		      sizeof(path));
	ck_assert_uint_eq(c->threads, 3);
	config_free(c);
}
END_TEST

START_TEST(test_nul_byte)
{
	static const char text[] = "[torpor]\nthreads = 3\nafter = re\0boot\n";
	struct torpor_config *c = SENTINEL;
	char path[300];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/torpor.conf", tmpdir);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, sizeof(text) - 1, f),
			  sizeof(text) - 1);
	ck_assert_int_eq(fclose(f), 0);
	capture_start();
	r = config_load(path, false, &c);
	capture_end(captured, sizeof(captured));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_eq(c, SENTINEL);
	assert_message(path, 3, "NUL");
}
END_TEST

START_TEST(test_missing_file_ok)
{
	struct torpor_config *c = SENTINEL;
	char path[300];

	snprintf(path, sizeof(path), "%s/absent.conf", tmpdir);
	capture_start();
	ck_assert_int_eq(config_load(path, true, &c), 0);
	capture_end(captured, sizeof(captured));
	ck_assert_str_eq(captured, "");
	ck_assert_ptr_ne(c, SENTINEL);
	/* No file was read: path stays NULL, everything is a default. */
	ck_assert_ptr_null(c->path);
	ck_assert_str_eq(c->snapshot, "/dev/snapshot");
	ck_assert_uint_eq(c->chunk_pages, 32);
	ck_assert_uint_eq(c->n_entries, 0);
	config_free(c);
}
END_TEST

START_TEST(test_missing_file_not_ok)
{
	struct torpor_config *c = SENTINEL;
	char path[300];

	snprintf(path, sizeof(path), "%s/absent.conf", tmpdir);
	capture_start();
	ck_assert_int_eq(config_load(path, false, &c), -ENOENT);
	capture_end(captured, sizeof(captured));
	ck_assert_ptr_eq(c, SENTINEL);
	ck_assert_msg(strstr(captured, path) != NULL, "%s", captured);
	ck_assert_uint_eq(capture_lines(captured), 1);
}
END_TEST

START_TEST(test_unreadable_is_not_missing)
{
	struct torpor_config *c = SENTINEL;

	/* missing_ok covers a missing file only, not one that is not a file. */
	capture_start();
	ck_assert_int_lt(config_load(tmpdir, true, &c), 0);
	capture_end(captured, sizeof(captured));
	ck_assert_ptr_eq(c, SENTINEL);
	ck_assert_msg(strstr(captured, tmpdir) != NULL, "%s", captured);
}
END_TEST

START_TEST(test_syntax_error_no_equals)
{
	expect_load_error("[torpor]\nthreads = 2\nfilters lzo\n", 3,
			  "[torpor]");
	ck_assert_ptr_nonnull(strstr(captured, "syntax error"));
}
END_TEST

START_TEST(test_syntax_error_header)
{
	expect_load_error("[torpor]\nthreads = 2\n\n[fake\nlevel = 3\n", 4,
			  "syntax error");
}
END_TEST

START_TEST(test_syntax_error_no_key)
{
	expect_load_error("[torpor]\n = 2\n", 2, "syntax error");
}
END_TEST

START_TEST(test_syntax_error_first_wins)
{
	/* The syntax error comes first in the file, so it is the one told. */
	expect_load_error("[torpor]\nbogus line\nthreads = 999\n", 2,
			  "syntax error");
	ck_assert_ptr_null(strstr(captured, "threads"));
}
END_TEST

START_TEST(test_line_too_long)
{
	char text[1024];

	snprintf(text, sizeof(text), "[torpor]\nplugin_dir = /%0900d\n", 0);
	expect_load_error(text, 2, "too long");
}
END_TEST

/*
 * config_load(path) fails with want, its one message names path (and
 * PATH:LINE when line is not 0) and mentions needle, and it read at most
 * max_read bytes of anything on the way.
 */
static void
expect_bounded_refusal(const char *path, int want, unsigned line,
		       const char *needle, unsigned long long max_read)
{
	struct torpor_config *c = SENTINEL;
	unsigned long long before, after;
	int r;

	capture_start();
	before = unit_bytes_read();
	r = config_load(path, true, &c);
	after = unit_bytes_read();
	capture_end(captured, sizeof(captured));
	ck_assert_int_eq(r, want);
	ck_assert_ptr_eq(c, SENTINEL);
	if (line)
		assert_message(path, line, needle);
	ck_assert_msg(strstr(captured, path) && strstr(captured, needle),
		      "'%s' does not name %s and '%s'", captured, path, needle);
	ck_assert_uint_eq(capture_lines(captured), 1);
	ck_assert_msg(after - before <= max_read,
		      "%llu bytes were read for a refusal", after - before);
}

START_TEST(test_not_a_regular_file)
{
	char fifo[300];

	/* /dev/zero would never end: refused before a byte is read, not
	 * taken as an empty file. */
	expect_bounded_refusal("/dev/zero", -EINVAL, 0, "not a regular file",
			       4096);
	/* A FIFO without a writer: refused at once, no waiting on it. */
	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", tmpdir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	expect_bounded_refusal(fifo, -EINVAL, 0, "not a regular file", 4096);
	/* A directory. */
	expect_bounded_refusal(tmpdir, -EINVAL, 0, "not a regular file", 4096);
}
END_TEST

START_TEST(test_file_too_large)
{
	char path[300];
	int fd;

	/* 128 MiB (sparse): refused by its size, nothing of it read. */
	write_file("huge.conf", "[torpor]\nthreads = 2\n", path,
		   sizeof(path));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 128 << 20), 0);
	close(fd);
	expect_bounded_refusal(path, -EFBIG, 0, "larger than", 4096);
	/* One byte over the bound is enough; the bound itself loads. */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, CONFIG_MAX_FILE_SIZE + 1), 0);
	close(fd);
	expect_bounded_refusal(path, -EFBIG, 0, "1048576 bytes", 4096);
}
END_TEST

START_TEST(test_long_line_not_read_whole)
{
	static const char start[] = "[torpor]\nplugin_dir = /";
	size_t len = CONFIG_MAX_FILE_SIZE - 64, n = sizeof(start) - 1;
	char *text = malloc(len + 1), path[300];

	/* A line of almost 1 MiB: refused at its bound, its rest unread. */
	ck_assert_ptr_nonnull(text);
	memcpy(text, start, n);
	memset(text + n, 'a', len - n);
	text[len] = '\0';
	write_file("long.conf", text, path, sizeof(path));
	free(text);
	expect_bounded_refusal(path, -EINVAL, 2, "more than 4096 bytes",
			       64 * 1024);
}
END_TEST

START_TEST(test_longest_line_loads)
{
	char text[CONFIG_MAX_LINE + 64], path[300];
	struct torpor_config *c;

	/* Leading blanks count towards the line's bytes, not towards what
	 * the parser sees: a line of exactly the bound loads. */
	snprintf(text, sizeof(text), "[torpor]\n%*s\n", CONFIG_MAX_LINE,
		 "threads = 2");
	c = load_text(text, path, sizeof(path));
	ck_assert_uint_eq(c->threads, 2);
	config_free(c);
	snprintf(text, sizeof(text), "[torpor]\n%*s\n", CONFIG_MAX_LINE + 1,
		 "threads = 2");
	expect_load_error(text, 2, "line too long");
}
END_TEST

START_TEST(test_key_before_section)
{
	expect_load_error("threads = 2\n[torpor]\n", 1, "key 'threads'");
	ck_assert_ptr_nonnull(strstr(captured, "not in any section"));
}
END_TEST

START_TEST(test_duplicate_key_torpor)
{
	expect_load_error("[torpor]\nthreads = 2\nafter = reboot\n"
			  "threads = 3\n", 4, "[torpor] key 'threads'");
	ck_assert_ptr_nonnull(strstr(captured, "line 2"));
}
END_TEST

START_TEST(test_duplicate_key_plugin)
{
	expect_load_error("[torpor]\n[fake]\nlevel = 2\n\nlevel = 2\n", 5,
			  "[fake] key 'level'");
	ck_assert_ptr_nonnull(strstr(captured, "line 3"));
}
END_TEST

START_TEST(test_unknown_key_torpor)
{
	expect_load_error("[torpor]\nwriter = raw\ncompress = yes\n", 3,
			  "[torpor] key 'compress'");
	ck_assert_ptr_nonnull(strstr(captured, "unknown key"));
}
END_TEST

START_TEST(test_bad_threads)
{
	expect_load_error("[torpor]\nthreads = 257\n", 2,
			  "[torpor] key 'threads'");
	expect_load_error("[torpor]\n\nthreads = -1\n", 3,
			  "[torpor] key 'threads'");
	expect_load_error("[torpor]\nthreads = four\n", 2,
			  "[torpor] key 'threads'");
	expect_load_error("[torpor]\nthreads = 99999999999999999999999\n", 2,
			  "[torpor] key 'threads'");
	expect_load_error("[torpor]\nthreads =\n", 2,
			  "[torpor] key 'threads'");
}
END_TEST

START_TEST(test_bad_chunk_pages)
{
	expect_load_error("[torpor]\nchunk_pages = 0\n", 2,
			  "[torpor] key 'chunk_pages'");
	expect_load_error("[torpor]\nchunk_pages = 1025\n", 2,
			  "[torpor] key 'chunk_pages'");
	expect_load_error("[torpor]\nchunk_pages = 0x20\n", 2,
			  "[torpor] key 'chunk_pages'");
}
END_TEST

/* torpord's group: a name, or nothing (root only); whether it exists
 * is torpord's to check (tests/integration/daemon.sh group). */
START_TEST(test_group)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("[torpor]\ngroup = wheel-2.x_y\n", path, sizeof(path));
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->group, "wheel-2.x_y");
	config_free(c);
	c = load_text("[torpor]\ngroup =\n", path, sizeof(path));
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_null(c->group);
	config_free(c);
	expect_load_error("[torpor]\ngroup = -wheel\n", 2, "[torpor] key 'group'");
	expect_load_error("[torpor]\ngroup = two words\n", 2, "[torpor] key 'group'");
	expect_load_error("[torpor]\ngroup = a/b\n", 2, "[torpor] key 'group'");
	expect_load_error("[torpor]\ngroup = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 2,
			  "[torpor] key 'group'");
}
END_TEST

START_TEST(test_bad_after)
{
	expect_load_error("[torpor]\nafter = hibernate\n", 2,
			  "[torpor] key 'after'");
	ck_assert_ptr_nonnull(strstr(captured, "poweroff"));
	expect_load_error("[torpor]\nafter = Reboot\n", 2,
			  "[torpor] key 'after'");
}
END_TEST

START_TEST(test_bad_snapshot)
{
	static const char *const bad[] = {
		"dev/snapshot",		/* relative */
		"sim:",			/* empty size */
		"sim:0",		/* not positive */
		"sim:1000",		/* not a multiple of 4096 */
		"sim:4097K",		/* 4097 KiB: still not a multiple */
		"sim:64Q",		/* junk suffix */
		"sim:-4096",		/* negative */
		"sim:64M:",		/* empty seed */
		"sim:64M:x",		/* seed not a number */
		"sim:64M:-1",		/* seed negative */
		"sim:64M:1:2",		/* too many fields */
		"sim:99999999999999999999999",	/* overflow */
		"simulated",
	};
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[torpor]\nsnapshot = %s\n",
			 bad[i]);
		expect_load_error(text, 2, "[torpor] key 'snapshot'");
	}
}
END_TEST

START_TEST(test_good_snapshot)
{
	static const char *const good[] = {
		"/dev/snapshot", "sim", "sim:4096", "sim:4K", "sim:64M",
		"sim:64m", "sim:8k:3", "sim:1T", "sim:2G:7",
		"sim:256M:18446744073709551615",
	};
	struct torpor_config *c;
	char text[256], path[300];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[torpor]\nsnapshot = %s\n",
			 good[i]);
		c = load_text(text, path, sizeof(path));
		ck_assert_str_eq(c->snapshot, good[i]);
		config_free(c);
	}
}
END_TEST

START_TEST(test_bad_filter_name)
{
	expect_load_error("[torpor]\nfilters = lzo, Zlib\n", 2,
			  "[torpor] key 'filters'");
	ck_assert_ptr_nonnull(strstr(captured, "'Zlib'"));
	expect_load_error("[torpor]\nfilters = lzo!\n", 2,
			  "[torpor] key 'filters'");
	/* 32 characters: one too many. */
	expect_load_error("[torpor]\n"
			  "filters = abcdefghijklmnopqrstuvwxyz012345\n", 2,
			  "[torpor] key 'filters'");
}
END_TEST

START_TEST(test_longest_filter_name)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("[torpor]\nfilters = abcdefghijklmnopqrstuvwxyz01234\n",
		      path, sizeof(path));
	ck_assert_uint_eq(c->n_filters, 1);
	ck_assert_str_eq(c->filters[0], "abcdefghijklmnopqrstuvwxyz01234");
	config_free(c);
}
END_TEST

START_TEST(test_duplicate_filter)
{
	expect_load_error("[torpor]\nwriter = raw\nfilters = lzo crypt, lzo\n",
			  3, "[torpor] key 'filters'");
	ck_assert_ptr_nonnull(strstr(captured, "'lzo'"));
	ck_assert_ptr_nonnull(strstr(captured, "twice"));
}
END_TEST

START_TEST(test_bad_writer_name)
{
	expect_load_error("[torpor]\nwriter = raw swap\n", 2,
			  "[torpor] key 'writer'");
	expect_load_error("[torpor]\nwriter = RAW\n", 2,
			  "[torpor] key 'writer'");
}
END_TEST

START_TEST(test_relative_plugin_dir)
{
	expect_load_error("[torpor]\nplugin_dir = build/plugins\n", 2,
			  "[torpor] key 'plugin_dir'");
	expect_load_error("[torpor]\nplugin_dir = ~/plugins\n", 2,
			  "[torpor] key 'plugin_dir'");
}
END_TEST

START_TEST(test_unknown_section)
{
	expect_plugin_error("[torpor]\nwriter = other\n\n[ghost]\n"
			    "speed = 3\nmore = 4\n", 5,
			    "[ghost] key 'speed'");
	ck_assert_ptr_nonnull(strstr(captured, "no plugin"));
}
END_TEST

START_TEST(test_unknown_section_without_registry)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("[fake]\nlevel = 3\n", path, sizeof(path));
	capture_start();
	ck_assert_int_eq(config_check_plugins(c, NULL), -EINVAL);
	capture_end(captured, sizeof(captured));
	assert_message(path, 2, "[fake] key 'level'");
	config_free(c);
}
END_TEST

START_TEST(test_empty_unknown_section)
{
	struct torpor_config *c;
	char path[300];

	/* No key under it: told at its header. */
	expect_plugin_error("[torpor]\nwriter = other\n\n[nosuch]\n", 4,
			    "[nosuch]");
	ck_assert_ptr_nonnull(strstr(captured, "no plugin named 'nosuch'"));
	/* Twice in the file, told once. */
	expect_plugin_error("[nosuch]\n[fake]\nlevel = 3\n[nosuch]\n", 1,
			    "[nosuch]");
	/* Without a registry, too. */
	c = load_text("[torpor]\n[ghost]\n", path, sizeof(path));
	capture_start();
	ck_assert_int_eq(config_check_plugins(c, NULL), -EINVAL);
	capture_end(captured, sizeof(captured));
	assert_message(path, 2, "[ghost]");
	config_free(c);
	/* An empty section of a loaded plugin, and an empty [torpor], are
	 * fine. */
	c = load_text("[torpor]\n[fake]\n[other]\n", path, sizeof(path));
	capture_start();
	ck_assert_int_eq(config_check_plugins(c, &fake_registry), 0);
	capture_end(captured, sizeof(captured));
	ck_assert_str_eq(captured, "");
	ck_assert_uint_eq(c->n_sections, 3);
	ck_assert_str_eq(c->sections[1].name, "fake");
	ck_assert_uint_eq(c->sections[1].line, 2);
	config_free(c);
}
END_TEST

START_TEST(test_check_section_alone)
{
	struct torpor_config *c;
	char path[300];

	/* One plugin's section, with FILE:LINE; other sections (even
	 * unknown ones) are not its business. */
	c = load_text("[ghost]\nspeed = 1\n[fake]\nlevel = 10\n"
		      "mode = slow\nnope = 1\n", path, sizeof(path));
	capture_start();
	ck_assert_int_eq(config_check_section(c, &fake_entry.ops), -EINVAL);
	capture_end(captured, sizeof(captured));
	assert_message(path, 4, "[fake] key 'level'");
	assert_message(path, 6, "[fake] key 'nope'");
	ck_assert_uint_eq(capture_lines(captured), 2);
	ck_assert_ptr_null(strstr(captured, "ghost"));
	capture_start();
	ck_assert_int_eq(config_check_section(c, &other_entry.ops), 0);
	ck_assert_int_eq(config_check_section(NULL, &fake_entry.ops), 0);
	capture_end(captured, sizeof(captured));
	ck_assert_str_eq(captured, "");
	config_free(c);
}
END_TEST

START_TEST(test_unknown_key_plugin)
{
	expect_plugin_error("[fake]\nlevel = 3\nspeed = 9\n", 3,
			    "[fake] key 'speed'");
	ck_assert_ptr_nonnull(strstr(captured, "level"));
	expect_plugin_error("[other]\nlevel = 3\n", 2, "[other] key 'level'");
	ck_assert_ptr_nonnull(strstr(captured, "no keys"));
}
END_TEST

START_TEST(test_plugin_int_out_of_range)
{
	expect_plugin_error("[fake]\nlevel = 10\n", 2, "[fake] key 'level'");
	ck_assert_ptr_nonnull(strstr(captured, "1..9"));
	expect_plugin_error("[fake]\nlevel = 0\n", 2, "[fake] key 'level'");
	expect_plugin_error("[fake]\nlevel = 3x\n", 2, "[fake] key 'level'");
}
END_TEST

START_TEST(test_plugin_bad_size)
{
	expect_plugin_error("[fake]\nsize = 12Q\n", 2, "[fake] key 'size'");
	expect_plugin_error("[fake]\nsize = 2G\n", 2, "[fake] key 'size'");
	expect_plugin_error("[fake]\nsize = 1K\n", 2, "[fake] key 'size'");
}
END_TEST

START_TEST(test_plugin_bad_bool)
{
	expect_plugin_error("[fake]\nverbose = maybe\n", 2,
			    "[fake] key 'verbose'");
}
END_TEST

START_TEST(test_plugin_bad_enum)
{
	expect_plugin_error("[fake]\nmode = medium\n", 2, "[fake] key 'mode'");
	ck_assert_ptr_nonnull(strstr(captured, "fast, slow"));
}
END_TEST

START_TEST(test_plugin_relative_path)
{
	expect_plugin_error("[fake]\ndevice = dev/sda2\n", 2,
			    "[fake] key 'device'");
	expect_plugin_error("[fake]\ndevice = UUID=\n", 2,
			    "[fake] key 'device'");
}
END_TEST

START_TEST(test_plugin_errors_all_reported)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("[fake]\nlevel = 99\nmode = slow\nverbose = perhaps\n",
		      path, sizeof(path));
	capture_start();
	ck_assert_int_eq(config_check_plugins(c, &fake_registry), -EINVAL);
	capture_end(captured, sizeof(captured));
	ck_assert_uint_eq(capture_lines(captured), 2);
	assert_message(path, 2, "[fake] key 'level'");
	assert_message(path, 4, "[fake] key 'verbose'");
	config_free(c);
}
END_TEST

START_TEST(test_check_value)
{
	const struct torpor_config_key *name = &fake_keys[0];
	const struct torpor_config_key *level = &fake_keys[1];
	const struct torpor_config_key *size = &fake_keys[2];
	const struct torpor_config_key *verbose = &fake_keys[3];
	const struct torpor_config_key *mode = &fake_keys[4];
	const struct torpor_config_key *device = &fake_keys[5];
	static const struct torpor_config_key unbounded = {
		.name = "n", .type = TORPOR_CONFIG_INT,
	};
	static const struct torpor_config_key negative = {
		.name = "n", .type = TORPOR_CONFIG_INT, .min = -5, .max = -1,
	};
	static const char *const bools[] = {
		"yes", "no", "true", "false", "1", "0", "on", "off",
	};
	char reason[256];
	size_t i;

	ck_assert_int_eq(config_check_value(name, "", reason, sizeof(reason)),
			 0);
	ck_assert_int_eq(config_check_value(name, "any thing", reason,
					    sizeof(reason)), 0);

	ck_assert_int_eq(config_check_value(level, "1", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(level, "9", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(level, "-1", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(level, "", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(level, "+3", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(&negative, "-5", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(&negative, "0", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(&unbounded,
					    "-9223372036854775808", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(&unbounded,
					    "9223372036854775807", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(&unbounded,
					    "9223372036854775808", reason,
					    sizeof(reason)), 0);

	ck_assert_int_eq(config_check_value(size, "4096", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(size, "1G", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(size, "4095", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(size, "1025M", reason,
					    sizeof(reason)), 0);

	for (i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		ck_assert_int_eq(config_check_value(verbose, bools[i], reason,
						    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(verbose, "2", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(verbose, "", reason,
					    sizeof(reason)), 0);

	ck_assert_int_eq(config_check_value(mode, "slow", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(mode, "slo", reason,
					    sizeof(reason)), 0);
	ck_assert_ptr_nonnull(strstr(reason, "'slo'"));

	ck_assert_int_eq(config_check_value(device, "/dev/sda2", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(device, "LABEL=swap", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(device, "PARTUUID=0a-1", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(device, "PARTLABEL=hib", reason,
					    sizeof(reason)), 0);
	ck_assert_int_eq(config_check_value(device, "UUID=1-2", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(device, "sda2", reason,
					    sizeof(reason)), 0);
	ck_assert_int_lt(config_check_value(device, "uuid=1-2", reason,
					    sizeof(reason)), 0);
	ck_assert_ptr_nonnull(strstr(reason, "absolute"));

	/* A tiny buffer gets a truncated, terminated reason. */
	ck_assert_int_lt(config_check_value(mode, "medium", reason, 4), 0);
	ck_assert_uint_eq(strlen(reason), 3);
}
END_TEST

START_TEST(test_parse_size)
{
	static const struct {
		const char *text;
		int ret;
		uint64_t value;
	} cases[] = {
		{ "0", 0, 0 },
		{ "123", 0, 123 },
		{ "64K", 0, UINT64_C(64) << 10 },
		{ "64M", 0, UINT64_C(64) << 20 },
		{ "2G", 0, UINT64_C(2) << 30 },
		{ "1T", 0, UINT64_C(1) << 40 },
		{ "16777215T", 0, UINT64_C(16777215) << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999999999999999K", -ERANGE, 0 },
		{ "16777216T", -ERANGE, 0 },
		{ "17179869184G", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1 K", -EINVAL, 0 },
		{ "1KB", -EINVAL, 0 },
		{ "1k", -EINVAL, 0 },
		{ "1P", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1.5G", -EINVAL, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0xdeadbeef;
		int r = config_parse_size(cases[i].text, &v);

		ck_assert_msg(r == cases[i].ret, "'%s': %d, want %d",
			      cases[i].text, r, cases[i].ret);
		if (r == 0)
			ck_assert_msg(v == cases[i].value, "'%s': %llu",
				      cases[i].text, (unsigned long long)v);
		else	/* untouched on failure */
			ck_assert_uint_eq(v, 0xdeadbeef);
	}
	ck_assert_int_eq(config_parse_size(NULL, NULL), -EINVAL);
}
END_TEST

START_TEST(test_get_and_defaults)
{
	struct torpor_config *c;
	char path[300];

	c = load_text("[torpor]\nwriter = other\n[fake]\nlevel = 3\n"
		      "name =\n", path, sizeof(path));
	ck_assert_str_eq(config_get(c, "fake", "level"), "3");
	ck_assert_str_eq(config_get(c, "torpor", "writer"), "other");
	ck_assert_ptr_null(config_get(c, "fake", "mode"));
	ck_assert_ptr_null(config_get(c, "ghost", "level"));
	ck_assert_ptr_null(config_get(c, "torpor", "threads"));

	/* Set, defaulted, set to empty, and declared without a default. */
	ck_assert_str_eq(config_get_for(c, &fake_entry.ops, "level"), "3");
	ck_assert_str_eq(config_get_for(c, &fake_entry.ops, "mode"), "fast");
	ck_assert_str_eq(config_get_for(c, &fake_entry.ops, "size"), "1M");
	ck_assert_str_eq(config_get_for(c, &fake_entry.ops, "name"), "");
	ck_assert_ptr_null(config_get_for(c, &fake_entry.ops, "device"));
	ck_assert_ptr_null(config_get_for(c, &fake_entry.ops, "nosuch"));
	ck_assert_ptr_null(config_get_for(c, &other_entry.ops, "level"));

	/* Without a configuration the declared defaults still answer. */
	ck_assert_str_eq(config_get_for(NULL, &fake_entry.ops, "level"), "6");
	ck_assert_ptr_null(config_get(NULL, "fake", "level"));
	config_free(c);
}
END_TEST

static char *
dump_to_string(const struct torpor_config *c, const struct registry *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	config_dump(c, r, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_ptr_nonnull(buf);
	return buf;
}

#define ck_assert_has(haystack, needle)					\
	ck_assert_msg(strstr((haystack), (needle)) != NULL,		\
		      "no '%s' in:\n%s", (needle), (haystack))
#define ck_assert_lacks(haystack, needle)				\
	ck_assert_msg(strstr((haystack), (needle)) == NULL,		\
		      "'%s' in:\n%s", (needle), (haystack))

START_TEST(test_dump)
{
	struct torpor_config *c;
	char path[300];
	char *out;

	c = load_text("[torpor]\nwriter = other\nfilters = fake\n"
		      "[fake]\nlevel = 3\n", path, sizeof(path));
	out = dump_to_string(c, &fake_registry);

	ck_assert_has(out, path);
	ck_assert_has(out, "[torpor]\n");
	/* Configured keys carry no marker, defaults do. */
	ck_assert_has(out, "\nfilters = fake\n");
	ck_assert_lacks(out, "# default\nfilters");
	ck_assert_has(out, "\nwriter = other\n");
	ck_assert_lacks(out, "# default\nwriter");
	ck_assert_has(out, "# default\nthreads = 0\n");
	ck_assert_has(out, "# default\nafter = poweroff\n");
	ck_assert_has(out, "# default\nsnapshot = /dev/snapshot\n");
	ck_assert_has(out, "# default\nchunk_pages = 32\n");
	ck_assert_has(out, "#plugin_dir =\n");

	/* Every declared key of the registered plugin. */
	ck_assert_has(out, "[fake]\n");
	ck_assert_has(out, "# how hard to work\nlevel = 3\n");
	ck_assert_has(out, "# a label\n# default\nname = fake\n");
	ck_assert_has(out, "# default\nsize = 1M\n");
	ck_assert_has(out, "# default\nverbose = no\n");
	ck_assert_has(out, "# default\nmode = fast\n");
	ck_assert_has(out, "#device =\n");
	/* A plugin without keys and without a section has nothing to say. */
	ck_assert_lacks(out, "[other]");
	free(out);
	config_free(c);
}
END_TEST

START_TEST(test_dump_defaults_only)
{
	struct torpor_config *c = config_new_default();
	char *out;

	ck_assert_ptr_nonnull(c);
	out = dump_to_string(c, NULL);
	ck_assert_has(out, "built-in defaults");
	/* Each core key's help comes first, as for a plugin's keys. */
	ck_assert_has(out, "[torpor]\n# filter plugins, in hibernate order\n"
		      "# default\nfilters =\n");
	ck_assert_has(out, "# default\nthreads = 0\n");
	ck_assert_has(out, "# default\nsnapshot = /dev/snapshot\n");
	ck_assert_has(out, "#writer =\n");
	free(out);
	config_free(c);
}
END_TEST

START_TEST(test_dump_without_registry)
{
	struct torpor_config *c;
	char path[300];
	char *out;

	c = load_text("[torpor]\n[fake]\nlevel = 3\n[ghost]\nspeed = 2\n",
		      path, sizeof(path));
	out = dump_to_string(c, NULL);
	/* Sections of the file are printed as read, no defaults known. */
	ck_assert_has(out, "[fake]\nlevel = 3\n");
	ck_assert_has(out, "[ghost]\nspeed = 2\n");
	ck_assert_lacks(out, "mode = fast");
	free(out);

	out = dump_to_string(c, &fake_registry);
	ck_assert_has(out, "[ghost]\n# no plugin of this name is loaded\n"
		      "speed = 2\n");
	ck_assert_has(out, "# default\nmode = fast\n");
	free(out);
	config_free(c);
}
END_TEST

/* The dump reads back as a configuration with the same values. */
START_TEST(test_dump_reads_back)
{
	struct torpor_config *c, *again;
	char path[300];
	char *out;

	c = load_text(good_file, path, sizeof(path));
	out = dump_to_string(c, &fake_registry);
	config_free(c);

	again = load_text(out, path, sizeof(path));
	free(out);
	ck_assert_uint_eq(again->n_filters, 3);
	ck_assert_str_eq(again->filters[2], "crypt");
	ck_assert_str_eq(again->writer, "raw");
	ck_assert_uint_eq(again->threads, 4);
	ck_assert_int_eq(again->after, CONFIG_AFTER_REBOOT);
	ck_assert_str_eq(again->snapshot, "sim:256M:42");
	ck_assert_str_eq(again->plugin_dir, "/opt/torpor/plugins");
	ck_assert_uint_eq(again->chunk_pages, 64);
	ck_assert_str_eq(config_get(again, "fake", "name"), "hello world");
	ck_assert_str_eq(config_get(again, "fake", "device"),
			 "UUID=1234-abcd");
	capture_start();
	ck_assert_int_eq(config_check_plugins(again, &fake_registry), 0);
	capture_end(captured, sizeof(captured));
	ck_assert_str_eq(captured, "");
	config_free(again);
}
END_TEST

static char *
read_example(void)
{
	const char *root = getenv("TORPOR_SOURCE_ROOT");
	char path[PATH_MAX];
	char *text = NULL;
	size_t len = 0;
	FILE *f, *out;
	int ch;

	snprintf(path, sizeof(path), "%s/doc/torpor.conf.example",
		 root && *root ? root : ".");
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	out = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(out);
	while ((ch = fgetc(f)) != EOF)
		fputc(ch, out);
	fclose(f);
	ck_assert_int_eq(fclose(out), 0);
	return text;
}

/* The installed example loads as it is: everything commented out. */
START_TEST(test_example_as_shipped)
{
	struct torpor_config *c;
	char path[300];
	char *text = read_example();

	c = load_text(text, path, sizeof(path));
	free(text);
	ck_assert_uint_eq(c->n_entries, 0);
	ck_assert_uint_eq(c->n_filters, 0);
	ck_assert_str_eq(c->snapshot, "/dev/snapshot");
	config_free(c);
}
END_TEST

/*
 * The example's commented-out settings ("#key = value", "#[section]") are
 * valid too: uncomment them all, keep the last of each key of a section
 * (the example shows alternatives one after the other), and load.
 */
START_TEST(test_example_uncommented)
{
	char *text = read_example(), *line, *save = NULL, *out = NULL;
	char *lines[512], section[64] = "", *sections[512];
	size_t n = 0, i, j, len = 0;
	struct torpor_config *c;
	char path[300];
	FILE *f;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' &&
		    (line[1] == '[' || (line[1] >= 'a' && line[1] <= 'z')))
			line++;
		else if (line[0] == '#')
			continue;
		if (line[0] == '[')
			snprintf(section, sizeof(section), "%s", line);
		ck_assert_uint_lt(n, sizeof(lines) / sizeof(lines[0]));
		sections[n] = strdup(section);
		lines[n++] = line;
	}
	f = open_memstream(&out, &len);
	ck_assert_ptr_nonnull(f);
	for (i = 0; i < n; i++) {
		size_t key_len = strcspn(lines[i], " =");
		bool later = false;

		for (j = i + 1; j < n && lines[i][0] != '['; j++)
			if (strcmp(sections[i], sections[j]) == 0 &&
			    strncmp(lines[i], lines[j], key_len) == 0 &&
			    strcspn(lines[j], " =") == key_len)
				later = true;
		if (!later)
			fprintf(f, "%s\n", lines[i]);
	}
	ck_assert_int_eq(fclose(f), 0);
	for (i = 0; i < n; i++)
		free(sections[i]);
	free(text);

	c = load_text(out, path, sizeof(path));
	free(out);
	ck_assert_uint_eq(c->n_filters, 3);
	ck_assert_str_eq(c->filters[0], "checksum");
	ck_assert_str_eq(c->filters[2], "crypt");
	ck_assert_str_eq(c->snapshot, "sim:256M:42");
	ck_assert_uint_eq(c->threads, 0);
	ck_assert_uint_eq(c->chunk_pages, 32);
	ck_assert_int_eq(c->after, CONFIG_AFTER_POWEROFF);
	ck_assert_str_eq(config_get(c, "checksum", "algorithm"), "sha256");
	ck_assert_str_eq(config_get(c, "zlib", "level"), "1");
	ck_assert_ptr_nonnull(config_get(c, "raw", "device"));
	config_free(c);
}
END_TEST

/* The config takes exactly the sim specs the source takes. */
START_TEST(test_snapshot_agrees_with_source)
{
	static const char *const specs[] = {
		"sim", "sim:4096", "sim:4k", "sim:4K", "sim:64m", "sim:64M",
		"sim:1g:9", "sim:1t", "sim:0", "sim:0k", "sim:1000",
		"sim:4097K", "sim:64Q", "sim:64MB", "sim:64M:", "sim:64M:x",
		"sim:64M:1:2", "sim:-4096", "sim:", "sim: 4096",
		"sim:99999999999999999999999", "sim:17179869184G",
		"sim:4096:99999999999999999999",
	};
	struct torpor_config *c;
	uint64_t size, seed;
	char text[256], path[300];
	bool named;
	size_t i;
	int r;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		bool source_ok = snapshot_spec_parse(specs[i], &size, &seed,
						     &named) == 0;

		snprintf(text, sizeof(text), "[torpor]\nsnapshot = %s\n",
			 specs[i]);
		write_file("torpor.conf", text, path, sizeof(path));
		c = NULL;
		capture_start();
		r = config_load(path, false, &c);
		capture_end(captured, sizeof(captured));
		ck_assert_msg((r == 0) == source_ok,
			      "'%s': config %d, source %s", specs[i], r,
			      source_ok ? "accepts" : "refuses");
		if (!source_ok)
			/* The source's reason, word for word. */
			ck_assert_msg(strstr(captured, snapshot_spec_strerror(
				      snapshot_spec_parse(specs[i], &size,
							  &seed, &named))) != NULL,
				      "'%s': %s", specs[i], captured);
		config_free(c);
	}
}
END_TEST

START_TEST(test_image_size)
{
	struct torpor_config *c;
	char path[300];
	char *out;

	c = config_new_default();
	ck_assert(!c->has_image_size);
	config_free(c);

	c = load_text("[torpor]\nimage_size = 2G\n", path, sizeof(path));
	ck_assert(c->has_image_size);
	ck_assert_uint_eq(c->image_size, UINT64_C(2) << 30);
	out = dump_to_string(c, NULL);
	ck_assert_has(out, "\nimage_size = 2G\n");
	free(out);
	config_free(c);

	/* 0 asks the kernel for the smallest image: it is a value. */
	c = load_text("[torpor]\nimage_size = 0\n", path, sizeof(path));
	ck_assert(c->has_image_size);
	ck_assert_uint_eq(c->image_size, 0);
	config_free(c);

	c = load_text("[torpor]\nimage_size =\n", path, sizeof(path));
	ck_assert(!c->has_image_size);
	out = dump_to_string(c, NULL);
	ck_assert_has(out, "# not set\n#image_size =\n");
	free(out);
	config_free(c);

	expect_load_error("[torpor]\nimage_size = 2g\n", 2,
			  "[torpor] key 'image_size'");
	expect_load_error("[torpor]\nimage_size = big\n", 2,
			  "[torpor] key 'image_size'");
	expect_load_error("[torpor]\nimage_size = 99999999999999999999\n", 2,
			  "[torpor] key 'image_size'");
}
END_TEST

/* The unknown-key message lists every key of the table. */
START_TEST(test_unknown_key_lists_all)
{
	static const char *const keys[] = {
		"filters", "writer", "threads", "after", "snapshot",
		"plugin_dir", "chunk_pages", "image_size",
	};
	size_t i;

	expect_load_error("[torpor]\nspeed = 3\n", 2, "[torpor] key 'speed'");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ck_assert_has(captured, keys[i]);
}
END_TEST

/* The core's numbers are digits only, as torpor.conf(5) says. */
START_TEST(test_core_numbers_unsigned)
{
	expect_load_error("[torpor]\nthreads = -0\n", 2,
			  "[torpor] key 'threads'");
	expect_load_error("[torpor]\nchunk_pages = +8\n", 2,
			  "[torpor] key 'chunk_pages'");
}
END_TEST

START_TEST(test_parse_prefix)
{
	const char *end;
	uint64_t v = 7;

	ck_assert_int_eq(config_parse_u64_prefix("42:x", &end, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_str_eq(end, ":x");
	ck_assert_int_eq(config_parse_u64_prefix("x", &end, &v), -EINVAL);
	ck_assert_int_eq(config_parse_u64_prefix("18446744073709551616z",
						 &end, &v), -ERANGE);
	ck_assert_str_eq(end, "z");
	ck_assert_uint_eq(v, 42);

	ck_assert_int_eq(config_parse_size_prefix("8k:1", true, &end, &v), 0);
	ck_assert_uint_eq(v, 8192);
	ck_assert_str_eq(end, ":1");
	ck_assert_int_eq(config_parse_size_prefix("8k", false, &end, &v), 0);
	ck_assert_uint_eq(v, 8);
	ck_assert_str_eq(end, "k");
	ck_assert_int_eq(config_parse_size_prefix("16777216T", true, &end,
						  &v), -ERANGE);
	ck_assert_str_eq(end, "");
	ck_assert_int_eq(config_parse_size("1t", &v), -EINVAL);
	ck_assert_int_eq(config_parse_size("1T", &v), 0);
	ck_assert_uint_eq(v, UINT64_C(1) << 40);
}
END_TEST

Suite *config_suite(void);

Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *load = tcase_create("load");
	TCase *errors = tcase_create("errors");
	TCase *plugins = tcase_create("plugins");
	TCase *values = tcase_create("values");
	TCase *dump = tcase_create("dump");

	tcase_add_checked_fixture(load, setup, teardown);
	tcase_add_test(load, test_good_file);
	tcase_add_test(load, test_key_place);
	tcase_add_test(load, test_other_after_values);
	tcase_add_test(load, test_defaults);
	tcase_add_test(load, test_empty_file_and_filters);
	tcase_add_test(load, test_indented_lines);
	tcase_add_test(load, test_byte_order_mark);
	tcase_add_test(load, test_nul_byte);
	tcase_add_test(load, test_missing_file_ok);
	tcase_add_test(load, test_missing_file_not_ok);
	tcase_add_test(load, test_unreadable_is_not_missing);
	tcase_add_test(load, test_good_snapshot);
	tcase_add_test(load, test_longest_filter_name);
	tcase_add_test(load, test_example_as_shipped);
	tcase_add_test(load, test_example_uncommented);
	suite_add_tcase(s, load);

	tcase_add_checked_fixture(errors, setup, teardown);
	tcase_add_test(errors, test_syntax_error_no_equals);
	tcase_add_test(errors, test_syntax_error_header);
	tcase_add_test(errors, test_syntax_error_no_key);
	tcase_add_test(errors, test_syntax_error_first_wins);
	tcase_add_test(errors, test_line_too_long);
	tcase_add_test(errors, test_not_a_regular_file);
	tcase_add_test(errors, test_file_too_large);
	tcase_add_test(errors, test_long_line_not_read_whole);
	tcase_add_test(errors, test_longest_line_loads);
	tcase_add_test(errors, test_key_before_section);
	tcase_add_test(errors, test_duplicate_key_torpor);
	tcase_add_test(errors, test_duplicate_key_plugin);
	tcase_add_test(errors, test_unknown_key_torpor);
	tcase_add_test(errors, test_bad_threads);
	tcase_add_test(errors, test_bad_chunk_pages);
	tcase_add_test(errors, test_group);
	tcase_add_test(errors, test_bad_after);
	tcase_add_test(errors, test_bad_snapshot);
	tcase_add_test(errors, test_snapshot_agrees_with_source);
	tcase_add_test(errors, test_image_size);
	tcase_add_test(errors, test_unknown_key_lists_all);
	tcase_add_test(errors, test_core_numbers_unsigned);
	tcase_add_test(errors, test_bad_filter_name);
	tcase_add_test(errors, test_duplicate_filter);
	tcase_add_test(errors, test_bad_writer_name);
	tcase_add_test(errors, test_relative_plugin_dir);
	suite_add_tcase(s, errors);

	tcase_add_checked_fixture(plugins, setup, teardown);
	tcase_add_test(plugins, test_unknown_section);
	tcase_add_test(plugins, test_unknown_section_without_registry);
	tcase_add_test(plugins, test_unknown_key_plugin);
	tcase_add_test(plugins, test_empty_unknown_section);
	tcase_add_test(plugins, test_check_section_alone);
	tcase_add_test(plugins, test_plugin_int_out_of_range);
	tcase_add_test(plugins, test_plugin_bad_size);
	tcase_add_test(plugins, test_plugin_bad_bool);
	tcase_add_test(plugins, test_plugin_bad_enum);
	tcase_add_test(plugins, test_plugin_relative_path);
	tcase_add_test(plugins, test_plugin_errors_all_reported);
	suite_add_tcase(s, plugins);

	tcase_add_checked_fixture(values, setup, teardown);
	tcase_add_test(values, test_check_value);
	tcase_add_test(values, test_parse_size);
	tcase_add_test(values, test_parse_prefix);
	tcase_add_test(values, test_get_and_defaults);
	suite_add_tcase(s, values);

	tcase_add_checked_fixture(dump, setup, teardown);
	tcase_add_test(dump, test_dump);
	tcase_add_test(dump, test_dump_defaults_only);
	tcase_add_test(dump, test_dump_without_registry);
	tcase_add_test(dump, test_dump_reads_back);
	suite_add_tcase(s, dump);
	return s;
}
