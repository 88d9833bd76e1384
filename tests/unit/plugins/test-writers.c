/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap and file writers, dlopen()ed from the build directory and
 * driven through the ABI with a test host, on real loop devices made here:
 * swap partitions (mkswap), swap files and image files on ext4, tmpfs;
 * and the refusals: a device that is mounted, held or an active swap
 * area, an image file or swap file that is not root's and private.
 *
 * Needs root (losetup, mount, swapon): these are the root group of tests
 * (meson test writers-root), which says SKIP when it cannot run.  The
 * throughput of the writers is the bench group (tests/bench).
 *
 * Loop devices, mounts and swap areas are recorded in a cleanup list as
 * they are made; each test is its own TCase whose unchecked teardown runs
 * in the parent process, so the list is worked off even when a forked
 * test fails half-way.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <torpor/plugin.h>

#include "device-names.h"
#include "fake-host.h"
#include "unit.h"

#define MiB (1u << 20)

/* ---- the test host ---------------------------------------------------- */

struct cfg_entry {
	const char *section, *key;
	char value[512];
};

static struct cfg_entry cfg_table[8];
static size_t cfg_n;
static char logbuf[65536];
static size_t log_len;
static int kind = TORPOR_SNAPSHOT_SIM;

/* Fake kernel swap services: pages handed out in runs of 7 with gaps of
 * 3, as a fragmented swap area would. */
static uint32_t fake_dev;
static uint64_t fake_offset;
static int fake_set_calls;
static uint64_t fake_next = 16;
static int fake_in_run;

static void
cfg_set(const char *section, const char *key, const char *value)
{
	size_t i;

	for (i = 0; i < cfg_n; i++)
		if (strcmp(cfg_table[i].section, section) == 0 &&
		    strcmp(cfg_table[i].key, key) == 0)
			break;
	ck_assert_uint_lt(i, sizeof(cfg_table) / sizeof(cfg_table[0]));
	if (i == cfg_n)
		cfg_n++;
	cfg_table[i].section = section;
	cfg_table[i].key = key;
	snprintf(cfg_table[i].value, sizeof(cfg_table[i].value), "%s", value ? value : "");
}

static const char *
host_config_get(const char *section, const char *key)
{
	for (size_t i = 0; i < cfg_n; i++)
		if (strcmp(cfg_table[i].section, section) == 0 &&
		    strcmp(cfg_table[i].key, key) == 0)
			return cfg_table[i].value[0] ? cfg_table[i].value : NULL;
	return NULL;
}

__attribute__((format(printf, 3, 4)))
static void
host_log(int level, const char *plugin, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "  [%s %d] %s\n", plugin, level, line);
	n = snprintf(logbuf + log_len, sizeof(logbuf) - log_len, "%s\n", line);
	if (n > 0 && (size_t)n < sizeof(logbuf) - log_len)
		log_len += (size_t)n;
}

static void *
host_secure_alloc(size_t size)
{
	return calloc(1, size);
}

static void
host_secure_free(void *p, size_t size)
{
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
	return kind;
}

static int
host_swap_set_area(uint32_t dev, uint64_t offset)
{
	if (kind != TORPOR_SNAPSHOT_KERNEL)
		return -EOPNOTSUPP;
	fake_dev = dev;
	fake_offset = offset;
	fake_set_calls++;
	return 0;
}

static int64_t
host_swap_avail(void)
{
	return kind == TORPOR_SNAPSHOT_KERNEL ? 40 * (int64_t)MiB : -EOPNOTSUPP;
}

static int64_t
host_swap_alloc_page(void)
{
	int64_t off;

	if (kind != TORPOR_SNAPSHOT_KERNEL)
		return -EOPNOTSUPP;
	off = (int64_t)(fake_next * 4096);
	fake_next++;
	if (++fake_in_run == 7) {
		fake_in_run = 0;
		fake_next += 3;
	}
	return off;
}

static int
host_swap_free_pages(void)
{
	return kind == TORPOR_SNAPSHOT_KERNEL ? 0 : -EOPNOTSUPP;
}

/* The kernel command line's resume= and resume_offset=, as
 * use_resume_words() set them. */
static char fake_resume[256];
static uint64_t fake_resume_pages;

static int
host_resume_location(char *dev, size_t size, uint64_t *ret_offset)
{
	int r;

	if (!fake_resume[0])
		return 0;
	r = bd_resolve(fake_resume, dev, size);
	if (r < 0)
		return r;
	*ret_offset = fake_resume_pages * (uint64_t)sysconf(_SC_PAGESIZE);
	return 1;
}

static const struct torpor_host test_methods = {
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
	.resume_location = host_resume_location,
};

/* The methods above; every other one aborts (fake-host.h). */
static struct torpor_host test_host;

/* ---- shell, cleanup list ------------------------------------------------ */

static char cleanup_list[300];
static char work[256];

__attribute__((format(printf, 1, 2)))
static int
sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Run a command and return its first line of output (trimmed). */
__attribute__((format(printf, 3, 4)))
static int
sh_out(char *buf, size_t size, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	buf[0] = '\0';
	p = popen(cmd, "re");
	if (!p)
		return -1;
	if (fgets(buf, (int)size, p))
		buf[strcspn(buf, "\n")] = '\0';
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Remember a shell command that undoes what was just made. */
__attribute__((format(printf, 1, 2)))
static void
on_cleanup(const char *fmt, ...)
{
	FILE *f = fopen(cleanup_list, "ae");
	va_list ap;

	ck_assert_ptr_nonnull(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* Drop the newest cleanup entry: the test undid it itself. */
static void
forget_cleanup(void)
{
	char lines[64][512];
	int n = 0;
	FILE *f = fopen(cleanup_list, "re");

	ck_assert_ptr_nonnull(f);
	while (n < 64 && fgets(lines[n], sizeof(lines[n]), f))
		n++;
	fclose(f);
	f = fopen(cleanup_list, "we");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i + 1 < n; i++)
		fputs(lines[i], f);
	fclose(f);
}

static void
unchecked_setup(void)
{
	snprintf(work, sizeof(work), "/tmp/torpor-writers.%ld", (long)getpid());
	snprintf(cleanup_list, sizeof(cleanup_list), "%s.cleanup", work);
	unlink(cleanup_list);
	/* With CK_FORK=no the tests share one process. */
	cfg_n = 0;
	fake_resume[0] = '\0';
	fake_resume_pages = 0;
	kind = TORPOR_SNAPSHOT_SIM;
	fake_set_calls = 0;
	fake_next = 16;
	fake_in_run = 0;
	/* Image files, swap files and the raw writer's files must be
	 * private (mode 0600): make what the shell creates so. */
	umask(077);
	sh("rm -rf %s; mkdir -p %s", work, work);
}

/* Undo everything, newest first. */
static void
unchecked_teardown(void)
{
	char lines[64][512];
	int n = 0;
	FILE *f = fopen(cleanup_list, "re");

	if (f) {
		while (n < 64 && fgets(lines[n], sizeof(lines[n]), f))
			n++;
		fclose(f);
	}
	while (n-- > 0) {
		lines[n][strcspn(lines[n], "\n")] = '\0';
		sh("%s >/dev/null 2>&1", lines[n]);
	}
	unlink(cleanup_list);
	sh("rm -rf %s", work);
}

/* A sparse backing file of size MiB on a new loop device. */
static void
make_loop(const char *name, unsigned mib, char *ret, size_t size)
{
	char img[512];

	snprintf(img, sizeof(img), "%s/%s.img", work, name);
	ck_assert_int_eq(sh("truncate -s %uM %s", mib, img), 0);
	ck_assert_int_eq(sh_out(ret, size, "losetup -f --show %s", img), 0);
	ck_assert_msg(strncmp(ret, "/dev/loop", 9) == 0, "losetup said '%s'", ret);
	on_cleanup("losetup -d %s", ret);
}

/* A filesystem made by mkfs (a command taking the device last) on a new
 * loop device of mib MiB, mounted on work/name.mnt. */
static void
make_fs(const char *mkfs, const char *name, unsigned mib, char *loop,
	size_t loop_size, char *mnt, size_t mnt_size)
{
	make_loop(name, mib, loop, loop_size);
	ck_assert_int_eq(sh("%s %s >/dev/null", mkfs, loop), 0);
	snprintf(mnt, mnt_size, "%s/%s.mnt", work, name);
	ck_assert_int_eq(sh("mkdir -p %s && mount %s %s", mnt, loop, mnt), 0);
	on_cleanup("umount %s", mnt);
}

static void
make_ext4(const char *name, unsigned mib, char *loop, size_t loop_size,
	  char *mnt, size_t mnt_size)
{
	make_fs("mkfs.ext4 -q -F -b 4096", name, mib, loop, loop_size, mnt,
		mnt_size);
}

/* A single-device btrfs (single data, dup metadata, as mkfs.btrfs makes
 * on one disk). */
static void
make_btrfs(const char *name, unsigned mib, char *loop, size_t loop_size,
	   char *mnt, size_t mnt_size)
{
	make_fs("mkfs.btrfs -q -f", name, mib, loop, loop_size, mnt, mnt_size);
}

static void
blkid_tag(const char *dev, const char *tag, char *buf, size_t size)
{
	/* -p: read the device, not blkid's cache. */
	sh_out(buf, size, "blkid -p -o value -s %s %s", tag, dev);
}

/* ---- plugin handling ---------------------------------------------------- */

static void *dl;
static const struct torpor_plugin *plug;
static const struct torpor_writer *W;	/* the struct plug begins */

static void
plugin_open(const char *name)
{
	const char *dir = getenv("TORPOR_BUILD_PLUGINDIR");
	char path[512];
	torpor_plugin_entry_fn entry;

	ck_assert_msg(dir != NULL, "TORPOR_BUILD_PLUGINDIR is not set");
	snprintf(path, sizeof(path), "%s/%s.so", dir, name);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen %s: %s", path, dlerror());
	entry = (torpor_plugin_entry_fn)(uintptr_t)dlsym(dl, TORPOR_PLUGIN_ENTRY_NAME);
	ck_assert_ptr_nonnull(entry);
	plug = entry();
	ck_assert_str_eq(plug->name, name);
	ck_assert_int_eq(plug->type, TORPOR_PLUGIN_WRITER);
	W = (const struct torpor_writer *)plug;
	ck_assert_ptr_nonnull(W->reserve);
	ck_assert_int_eq(plug->load(fake_host_init(&test_host, &test_methods)), 0);
}

static void
plugin_close(void)
{
	if (!plug)
		return;
	plug->cleanup(1);
	if (plug->unload)
		plug->unload();
	dlclose(dl);
	plug = NULL;
	W = NULL;
	dl = NULL;
}

static void
log_reset(void)
{
	log_len = 0;
	logbuf[0] = '\0';
}

/* ---- data ------------------------------------------------------------------ */

static uint8_t *
random_bytes(size_t len, uint64_t seed)
{
	uint8_t *p = malloc(len ? len : 1);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 24);
	}
	return p;
}

struct image {
	uint8_t *stream;
	size_t stream_len;
	uint8_t *header;
	size_t header_len;
	uint8_t *blob;
	size_t blob_len;
};

static void
image_free(struct image *im)
{
	free(im->stream);
	free(im->header);
	free(im->blob);
	memset(im, 0, sizeof(*im));
}

/* reserve, write in uneven pieces (as well as the core's 1 MiB ones),
 * save_config, commit. */
static void
write_image(struct image *im, size_t stream_len, size_t header_len,
	    uint64_t seed)
{
	static const size_t pieces[] = { MiB, MiB, 777, 3 * 4096 + 5, MiB, 4096, 1 };
	size_t off = 0, i = 0;
	int r;

	im->stream_len = stream_len;
	im->stream = random_bytes(stream_len, seed);
	im->header_len = header_len;
	im->header = random_bytes(header_len, seed + 1);
	ck_assert_int_eq(W->reserve(stream_len), 0);
	/* As the cycle does: user space frozen, the snapshot not yet taken. */
	if (W->frozen)
		ck_assert_int_eq(W->frozen(), 0);
	while (off < stream_len) {
		size_t n = pieces[i++ % (sizeof(pieces) / sizeof(pieces[0]))];
		uint8_t *copy;

		if (n > stream_len - off)
			n = stream_len - off;
		/* An aligned buffer for the big pieces, as the core gives. */
		ck_assert_int_eq(posix_memalign((void **)&copy, 4096, n ? n : 1), 0);
		memcpy(copy, im->stream + off, n);
		r = W->write(copy, n);
		free(copy);
		ck_assert_int_eq(r, 0);
		off += n;
	}
	im->blob_len = plug->storage_needed();
	ck_assert_uint_gt(im->blob_len, 0);
	im->blob = calloc(1, im->blob_len);
	r = plug->save_config(im->blob, im->blob_len);
	ck_assert_int_gt(r, 0);
	im->blob_len = (size_t)r;
	ck_assert_int_eq(W->commit(im->header, im->header_len), 0);
}

/* find, read_header, load_config, read at many places. */
static void
check_image(const struct image *im)
{
	size_t len = 0, hsize = 1 << 20;
	uint8_t *h = malloc(hsize), *buf;
	const struct { uint64_t off, len; } at[] = {
		{ 0, 1 }, { 0, 4096 }, { 4095, 2 }, { 1, MiB }, { MiB - 3, 10000 },
		{ 3 * MiB + 17, 5 * 4096 }, { im->stream_len - 100, 100 },
		{ im->stream_len - 1, 1 }, { 0, im->stream_len },
	};

	ck_assert_int_eq(W->find(), 1);
	ck_assert_int_eq(W->read_header(h, hsize, &len), 0);
	ck_assert_uint_eq(len, im->header_len);
	ck_assert_mem_eq(h, im->header, len);
	ck_assert_int_eq(W->read_header(h, 10, &len), -EMSGSIZE);
	ck_assert_int_eq(plug->load_config(im->blob, im->blob_len), 0);
	buf = malloc(im->stream_len + 1);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		if (at[i].off + at[i].len > im->stream_len)
			continue;
		/* +1: an unaligned destination, as the core's cache is. */
		memset(buf, 0, im->stream_len + 1);
		ck_assert_int_eq(W->read(at[i].off, buf + 1, at[i].len), 0);
		ck_assert_msg(memcmp(buf + 1, im->stream + at[i].off, at[i].len) == 0,
			      "read(%" PRIu64 ", %" PRIu64 ") differs", at[i].off, at[i].len);
	}
	for (int i = 0; i < 64; i++) {
		uint64_t o = (uint64_t)rand() % im->stream_len;
		uint64_t n = 1 + (uint64_t)rand() % (im->stream_len - o);

		if (n > 2 * MiB)
			n = 2 * MiB;
		ck_assert_int_eq(W->read(o, buf, n), 0);
		ck_assert_msg(memcmp(buf, im->stream + o, n) == 0,
			      "read(%" PRIu64 ", %" PRIu64 ") differs", o, n);
	}
	ck_assert_int_eq(W->read(im->stream_len - 10, buf, 11), -ENODATA);
	ck_assert_int_eq(W->read(im->stream_len + 1, buf, 1), -ENODATA);
	/* A blob that was tampered with is refused. */
	{
		uint8_t *bad = malloc(im->blob_len);

		memcpy(bad, im->blob, im->blob_len);
		bad[im->blob_len - 1] ^= 1;
		ck_assert_int_eq(plug->load_config(bad, im->blob_len), -EBADMSG);
		free(bad);
	}
	ck_assert_int_eq(plug->load_config(im->blob, im->blob_len), 0);
	free(buf);
	free(h);
}

static void
read_page0(const char *dev, uint64_t off, uint8_t *buf)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, 4096, (off_t)off), 4096);
	close(fd);
}

/* Parse "resume=X resume_offset=N" into what the host's resume_location
 * service returns. */
static void
use_resume_words(const char *words)
{
	char copy[512], *tok, *save = NULL;

	snprintf(copy, sizeof(copy), "%s", words);
	fake_resume[0] = '\0';
	fake_resume_pages = 0;
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (strncmp(tok, "resume=", 7) == 0)
			snprintf(fake_resume, sizeof(fake_resume), "%s", tok + 7);
		else if (strncmp(tok, "resume_offset=", 14) == 0)
			fake_resume_pages = strtoull(tok + 14, NULL, 10);
		else
			ck_abort_msg("unexpected word '%s' in '%s'", tok, words);
	}
}

/* ---- swap partition ------------------------------------------------------ */

static void
swap_cycle(bool via_resume_words)
{
	char loop[64], uuid[64], label[64], type[64], words[512];
	uint8_t before[4096], after[4096];
	struct image im = { 0 };

	make_loop("swap", 64, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap -L torporlabel %s >/dev/null", loop), 0);
	blkid_tag(loop, "UUID", uuid, sizeof(uuid));
	blkid_tag(loop, "LABEL", label, sizeof(label));
	ck_assert_str_eq(label, "torporlabel");
	ck_assert_uint_eq(strlen(uuid), 36);
	read_page0(loop, 0, before);

	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	write_image(&im, 20 * MiB + 1234, 5000, 7);
	/* Readable at once, as the simulated cycle needs. */
	check_image(&im);
	blkid_tag(loop, "TYPE", type, sizeof(type));
	ck_assert_str_ne(type, "swap");
	ck_assert_int_eq(W->resume_args(words, sizeof(words)), 0);
	{
		char want[128];

		snprintf(want, sizeof(want), "resume=UUID=%s", uuid);
		ck_assert_str_eq(words, want);
	}
	plugin_close();

	/* A fresh start, as torpor-resume. */
	if (via_resume_words) {
		use_resume_words(words);
		cfg_set("swap", "device", "/nonexistent");
	}
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	check_image(&im);
	ck_assert_int_eq(W->invalidate(), 0);
	/* The image stays readable after invalidate (resume reads after). */
	{
		uint8_t b[100];

		ck_assert_int_eq(W->read(0, b, sizeof(b)), 0);
		ck_assert_mem_eq(b, im.stream, sizeof(b));
	}
	ck_assert_int_eq(W->find(), 0);
	ck_assert_int_eq(W->invalidate(), 0);
	plugin_close();

	read_page0(loop, 0, after);
	ck_assert_mem_eq(before, after, 4096);
	blkid_tag(loop, "TYPE", type, sizeof(type));
	ck_assert_str_eq(type, "swap");
	blkid_tag(loop, "UUID", type, sizeof(type));
	ck_assert_str_eq(type, uuid);
	blkid_tag(loop, "LABEL", type, sizeof(type));
	ck_assert_str_eq(type, "torporlabel");
	ck_assert_int_eq(sh("swapon %s", loop), 0);
	ck_assert_int_eq(sh("swapoff %s", loop), 0);
	image_free(&im);
}

START_TEST(swap_partition_roundtrip)
{
	swap_cycle(false);
}
END_TEST

START_TEST(swap_partition_by_resume_uuid)
{
	swap_cycle(true);
}
END_TEST

START_TEST(swap_by_label_and_refused)
{
	char loop[64];
	uint8_t before[4096], after[4096];
	struct image im = { 0 };

	make_loop("swap", 32, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap -L torporlabel2 %s >/dev/null", loop), 0);
	read_page0(loop, 0, before);
	cfg_set("swap", "device", "LABEL=torporlabel2");
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	write_image(&im, 3 * MiB + 5, 300, 11);
	plugin_close();

	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	ck_assert_int_eq(W->find(), 1);
	ck_assert_ptr_nonnull(W->refused);
	log_reset();
	W->refused();
	read_page0(loop, 0, after);
	ck_assert_mem_eq(before, after, 4096);
	ck_assert_int_eq(W->find(), 0);
	plugin_close();
	ck_assert_int_eq(sh("swapon %s && swapoff %s", loop, loop), 0);
	image_free(&im);
}
END_TEST

START_TEST(swap_active_refused_with_sim)
{
	char loop[64];

	make_loop("swap", 32, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null", loop), 0);
	ck_assert_int_eq(sh("swapon %s", loop), 0);
	on_cleanup("swapoff %s", loop);
	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), -EBUSY);
	ck_assert_ptr_nonnull(strstr(logbuf, "swapoff"));
	plugin_close();
}
END_TEST

START_TEST(swap_kernel_allocation)
{
	char loop[64];
	struct image im = { 0 };
	struct stat st;

	make_loop("swap", 64, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null", loop), 0);
	ck_assert_int_eq(stat(loop, &st), 0);
	kind = TORPOR_SNAPSHOT_KERNEL;
	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	write_image(&im, 6 * MiB + 99, 9000, 3);
	/* new_encode_dev(), and the header at byte 0 of a partition. */
	ck_assert_int_eq(fake_set_calls, 1);
	ck_assert_uint_eq(fake_dev, (minor(st.st_rdev) & 0xff) |
			  (major(st.st_rdev) << 8) | ((minor(st.st_rdev) & ~0xffu) << 12));
	ck_assert_uint_eq(fake_offset, 0);
	/* Runs of 7 pages: the blob holds about stream/7 pages of runs. */
	ck_assert_uint_gt(im.blob_len, 16 * ((6 * MiB) / (7 * 4096)));
	plugin_close();
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	check_image(&im);
	ck_assert_int_eq(W->invalidate(), 0);
	ck_assert_int_eq(W->find(), 0);
	plugin_close();
	kind = TORPOR_SNAPSHOT_SIM;
	ck_assert_int_eq(sh("swapon %s && swapoff %s", loop, loop), 0);
	image_free(&im);
}
END_TEST

START_TEST(swap_not_enough_space)
{
	char loop[64];
	uint8_t before[4096], after[4096];

	make_loop("swap", 16, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null", loop), 0);
	read_page0(loop, 0, before);
	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(64 * MiB), -ENOSPC);
	{
		char want[128];

		snprintf(want, sizeof(want), "need 66 MiB, 15 MiB free on %s", loop);
		ck_assert_msg(strstr(logbuf, want), "log lacks '%s': %s", want, logbuf);
	}
	plugin_close();
	read_page0(loop, 0, after);
	ck_assert_mem_eq(before, after, 4096);
}
END_TEST

START_TEST(swap_area_disappears)
{
	char loop[64];
	int r;

	make_loop("swap", 16, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null", loop), 0);
	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	ck_assert_int_eq(sh("losetup -d %s", loop), 0);
	/* The number may go to someone else now: not ours to detach. */
	forget_cleanup();
	log_reset();
	r = W->reserve(MiB);
	ck_assert_int_lt(r, 0);
	ck_assert_msg(strstr(logbuf, "has disappeared"), "log: %s", logbuf);
	plugin_close();
}
END_TEST

/* ---- swap file ------------------------------------------------------------- */

/* Hibernate to swap file sw: its resume words must be want; an image of
 * seed's pattern is written and checked. */
static void
swap_file_hibernate(const char *sw, const char *want, struct image *im,
		    int seed)
{
	char words[512];

	cfg_set("swap", "device", sw);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	ck_assert_int_eq(W->resume_args(words, sizeof(words)), 0);
	ck_assert_str_eq(words, want);
	write_image(im, 10 * MiB + 4097, 7000, seed);
	check_image(im);
	plugin_close();
}

/* The resume side: only the words of the command line (the configured
 * swap file still names the file whose cache must go); the image is
 * read back, invalidated and gone. */
static void
swap_file_resume(const char *words, struct image *im)
{
	use_resume_words(words);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	check_image(im);
	ck_assert_int_eq(W->invalidate(), 0);
	ck_assert_int_eq(W->find(), 0);
	plugin_close();
}

START_TEST(swap_file_roundtrip)
{
	char loop[64], mnt[512], sw[600], fsuuid[64], want[600];
	char phys[64], type[64], uuid[64];
	struct image im = { 0 };

	make_ext4("fs", 128, loop, sizeof(loop), mnt, sizeof(mnt));
	blkid_tag(loop, "UUID", fsuuid, sizeof(fsuuid));
	snprintf(sw, sizeof(sw), "%s/swapfile", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=48 status=none conv=fsync && chmod 600 %s && mkswap -L swfile %s >/dev/null",
			    sw, sw, sw), 0);
	blkid_tag(sw, "UUID", uuid, sizeof(uuid));
	/* Physical block of the file's block 0 (4 KiB blocks). */
	ck_assert_int_eq(sh_out(phys, sizeof(phys),
				"filefrag -v %s | awk '$1 == \"0:\" { sub(/\\.\\..*/, \"\", $4); print $4 }'", sw), 0);
	ck_assert_uint_gt(strlen(phys), 0);

	snprintf(want, sizeof(want), "resume=UUID=%s resume_offset=%s", fsuuid, phys);
	swap_file_hibernate(sw, want, &im, 21);
	/* Reading through the file caches torpor's header page ... */
	blkid_tag(sw, "TYPE", type, sizeof(type));
	ck_assert_str_ne(type, "swap");
	swap_file_resume(want, &im);

	blkid_tag(sw, "TYPE", type, sizeof(type));
	ck_assert_str_eq(type, "swap");
	blkid_tag(sw, "UUID", type, sizeof(type));
	ck_assert_str_eq(type, uuid);
	ck_assert_int_eq(sh("swapon %s && swapoff %s", sw, sw), 0);
	ck_assert_int_eq(sh("umount %s", mnt), 0);
	ck_assert_int_eq(sh("e2fsck -fn %s >/dev/null 2>&1", loop), 0);
	image_free(&im);
}
END_TEST

/*
 * A swap file on btrfs, made as btrfs wants one (NOCOW from its creation,
 * preallocated): the resume words name the filesystem and the header's
 * physical page as btrfs's own map-swapfile computes it, and the image
 * goes to the device's blocks of the file through the chunk tree.
 */
START_TEST(swap_file_btrfs_roundtrip)
{
	char loop[64], mnt[512], sw[600], fsuuid[64], want[600];
	char page_no[64], type[64];
	struct image im = { 0 };

	make_btrfs("fs", 400, loop, sizeof(loop), mnt, sizeof(mnt));
	blkid_tag(loop, "UUID", fsuuid, sizeof(fsuuid));
	/* Data first, so that the file does not start where its chunk does. */
	ck_assert_int_eq(sh("head -c 5M /dev/urandom >%s/before && sync", mnt), 0);
	snprintf(sw, sizeof(sw), "%s/swapfile", mnt);
	ck_assert_int_eq(sh("touch %s && chattr +C %s && chmod 600 %s && "
			    "fallocate -l 48M %s && mkswap %s >/dev/null && sync",
			    sw, sw, sw, sw, sw), 0);
	ck_assert_int_eq(sh_out(page_no, sizeof(page_no),
				"btrfs inspect-internal map-swapfile -r %s", sw), 0);
	ck_assert_uint_gt(strlen(page_no), 0);

	snprintf(want, sizeof(want), "resume=UUID=%s resume_offset=%s", fsuuid, page_no);
	swap_file_hibernate(sw, want, &im, 23);
	swap_file_resume(want, &im);

	ck_assert_int_eq(sh("echo 3 >/proc/sys/vm/drop_caches"), 0);
	blkid_tag(sw, "TYPE", type, sizeof(type));
	ck_assert_str_eq(type, "swap");
	ck_assert_int_eq(sh("swapon %s && swapoff %s", sw, sw), 0);
	ck_assert_int_eq(sh("umount %s", mnt), 0);
	ck_assert_int_eq(sh("btrfs check --readonly %s >/dev/null 2>&1", loop), 0);
	image_free(&im);
}
END_TEST

/* ---- file writer ------------------------------------------------------------ */

static void
sha256_of(char *buf, size_t size, const char *file, uint64_t skip)
{
	ck_assert_int_eq(sh_out(buf, size, "tail -c +%" PRIu64 " %s | sha256sum", skip + 1, file), 0);
}

START_TEST(file_roundtrip)
{
	char loop[64], mnt[512], img[600], other[600], words[512];
	char sum_other[128], sum_tail[128], s[128];
	struct image im = { 0 };
	uint64_t image_end;

	make_ext4("fs", 128, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	snprintf(other, sizeof(other), "%s/other", mnt);
	ck_assert_int_eq(sh("dd if=/dev/urandom of=%s bs=1M count=5 status=none", other), 0);
	ck_assert_int_eq(sh("dd if=/dev/urandom of=%s bs=1M count=40 status=none conv=fsync", img), 0);
	ck_assert_int_eq(sh("dd if=/dev/urandom of=%s.2 bs=1k count=7 status=none && sync", other), 0);
	sha256_of(sum_other, sizeof(sum_other), other, 0);
	/* Everything past the signature block, the stream and the header. */
	image_end = 4096 + (12 * MiB + 333 + 4095) / 4096 * 4096 + 8192;
	sha256_of(sum_tail, sizeof(sum_tail), img, image_end);

	cfg_set("file", "path", img);
	plugin_open("file");
	ck_assert_int_eq(plug->initialise(1), 0);
	write_image(&im, 12 * MiB + 333, 6000, 5);
	check_image(&im);
	ck_assert_int_eq(W->resume_args(words, sizeof(words)), 0);
	ck_assert_ptr_nonnull(strstr(words, "resume=UUID="));
	ck_assert_ptr_nonnull(strstr(words, " resume_offset="));
	plugin_close();

	use_resume_words(words);
	cfg_set("file", "path", "/nonexistent");
	plugin_open("file");
	ck_assert_int_eq(plug->initialise(1), 0);
	check_image(&im);
	ck_assert_int_eq(W->invalidate(), 0);
	ck_assert_int_eq(W->find(), 0);
	plugin_close();

	ck_assert_int_eq(sh("umount %s", mnt), 0);
	ck_assert_int_eq(sh("e2fsck -fn %s >/dev/null 2>&1", loop), 0);
	ck_assert_int_eq(sh("mount %s %s", loop, mnt), 0);
	sha256_of(s, sizeof(s), other, 0);
	ck_assert_str_eq(s, sum_other);
	sha256_of(s, sizeof(s), img, image_end);
	ck_assert_str_eq(s, sum_tail);
	/* The stream itself went into the file's blocks. */
	{
		uint8_t *b = malloc(4096);
		int fd = open(img, O_RDONLY | O_CLOEXEC);

		ck_assert_int_eq(pread(fd, b, 4096, 4096), 4096);
		ck_assert_mem_eq(b, im.stream, 4096);
		close(fd);
		free(b);
	}
	image_free(&im);
}
END_TEST

/*
 * The file writer on btrfs: torpor file-setup's way (an empty file made
 * NOCOW, then allocated and written) gives a file the writer maps through
 * the chunk tree; the stream lands in the file's own blocks and the other
 * file is untouched.  A copy-on-write file is refused first, with the
 * reason.
 */
START_TEST(file_btrfs_roundtrip)
{
	char loop[64], mnt[512], img[600], other[600], words[512];
	char sum_other[128], s[128];
	struct image im = { 0 };
	uint8_t *b;
	int fd;

	make_btrfs("fs", 400, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	snprintf(other, sizeof(other), "%s/other", mnt);
	ck_assert_int_eq(sh("head -c 5M /dev/urandom >%s && sync", other), 0);
	sha256_of(sum_other, sizeof(sum_other), other, 0);
	/* A copy-on-write file: refused before anything is written. */
	snprintf(img, sizeof(img), "%s/cow", mnt);
	ck_assert_int_eq(sh("head -c 8M /dev/urandom >%s && chmod 600 %s && sync", img, img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	log_reset();
	ck_assert_int_lt(plug->initialise(1), 0);
	ck_assert_msg(strstr(logbuf, "is copy-on-write on btrfs"), "log: %s", logbuf);
	plugin_close();

	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("touch %s && chmod 600 %s && chattr +C %s && "
			    "head -c 40M /dev/urandom >%s && sync", img, img, img, img), 0);

	cfg_set("file", "path", img);
	plugin_open("file");
	ck_assert_int_eq(plug->initialise(1), 0);
	write_image(&im, 12 * MiB + 333, 6000, 7);
	check_image(&im);
	ck_assert_int_eq(W->resume_args(words, sizeof(words)), 0);
	plugin_close();

	use_resume_words(words);
	cfg_set("file", "path", "/nonexistent");
	plugin_open("file");
	ck_assert_int_eq(plug->initialise(1), 0);
	check_image(&im);
	plugin_close();

	/* Through the filesystem, after its cache is gone: the stream is in
	 * the file's blocks. */
	ck_assert_int_eq(sh("echo 3 >/proc/sys/vm/drop_caches"), 0);
	b = malloc(4096);
	fd = open(img, O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(pread(fd, b, 4096, 4096), 4096);
	ck_assert_mem_eq(b, im.stream, 4096);
	close(fd);
	free(b);
	sha256_of(s, sizeof(s), other, 0);
	ck_assert_str_eq(s, sum_other);
	ck_assert_int_eq(sh("umount %s", mnt), 0);
	ck_assert_int_eq(sh("btrfs check --readonly %s >/dev/null 2>&1", loop), 0);
	image_free(&im);
}
END_TEST

/*
 * The file moves after reserve() (here: replaced by a file of the same
 * name in other blocks, as a defragmenter or a btrfs balance would move
 * it): the first write, after the freeze, maps it again and refuses,
 * and neither the new file nor the old blocks are written.
 */
START_TEST(file_moved_refused)
{
	char loop[64], mnt[512], img[600], before[128], after[128];
	uint8_t *b;

	make_ext4("fs", 128, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("dd if=/dev/urandom of=%s bs=1M count=24 status=none conv=fsync && chmod 600 %s",
			    img, img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	ck_assert_int_eq(plug->initialise(1), 0);
	ck_assert_int_eq(W->reserve(4 * MiB), 0);
	/* Moved: the old blocks are kept busy by another file so that the
	 * new one lands elsewhere. */
	ck_assert_int_eq(sh("mv %s %s.old && dd if=/dev/urandom of=%s bs=1M count=24 status=none conv=fsync && chmod 600 %s",
			    img, img, img, img), 0);
	sha256_of(before, sizeof(before), img, 0);
	b = aligned_alloc(4096, 64 * 1024);
	memset(b, 0x5a, 64 * 1024);
	log_reset();
	ck_assert_int_eq(W->frozen(), -ESTALE);
	ck_assert_msg(strstr(logbuf, "moved between the start of the cycle and the freeze"),
		      "log: %s", logbuf);
	/* The cycle stops there; a write anyway is refused. */
	ck_assert_int_eq(W->write(b, 64 * 1024), -EINVAL);
	free(b);
	plugin_close();
	ck_assert_int_eq(sh("echo 3 >/proc/sys/vm/drop_caches"), 0);
	sha256_of(after, sizeof(after), img, 0);
	ck_assert_str_eq(after, before);
}
END_TEST

START_TEST(file_too_small)
{
	char loop[64], mnt[512], img[600], want[700];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=8 status=none conv=fsync", img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(16 * MiB), -ENOSPC);
	snprintf(want, sizeof(want), "need 18 MiB, 8 MiB free on %s", img);
	ck_assert_msg(strstr(logbuf, want), "log lacks '%s': %s", want, logbuf);
	plugin_close();
}
END_TEST

START_TEST(file_unwritten_refused)
{
	char loop[64], mnt[512], img[600];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("fallocate -l 8M %s", img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	log_reset();
	ck_assert_int_lt(plug->initialise(1), 0);
	ck_assert_msg(strstr(logbuf, "torpor file-setup") && strstr(logbuf, "unwritten"),
		      "log: %s", logbuf);
	plugin_close();
}
END_TEST

START_TEST(file_sparse_refused)
{
	char loop[64], mnt[512], img[600];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("truncate -s 8M %s", img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	log_reset();
	ck_assert_int_lt(plug->initialise(1), 0);
	ck_assert_msg(strstr(logbuf, "hole"), "log: %s", logbuf);
	plugin_close();
}
END_TEST

START_TEST(file_tmpfs_refused)
{
	char mnt[512], img[600];

	snprintf(mnt, sizeof(mnt), "%s/tmpfs", work);
	ck_assert_int_eq(sh("mkdir -p %s && mount -t tmpfs -o size=16m none %s", mnt, mnt), 0);
	on_cleanup("umount %s", mnt);
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=8 status=none", img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	log_reset();
	ck_assert_int_lt(plug->initialise(1), 0);
	ck_assert_msg(strstr(logbuf, "tmpfs"), "log: %s", logbuf);
	plugin_close();
}
END_TEST


/* ---- devices and files that are someone else's ----------------------------- */

static void
expect_log(const char *want)
{
	ck_assert_msg(strstr(logbuf, want), "log lacks '%s': %s", want, logbuf);
}

/* The first 8 KiB of dev (an ext4 superblock lies at 1024). */
static void
head_sum(const char *dev, char *buf, size_t size)
{
	ck_assert_int_eq(sh_out(buf, size, "head -c 8192 %s | sha256sum", dev), 0);
}

START_TEST(raw_refuses_mounted)
{
	char loop[64], mnt[512], before[128], after[128];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	ck_assert_int_eq(sh("sync"), 0);
	head_sum(loop, before, sizeof(before));
	cfg_set("raw", "device", loop);
	plugin_open("raw");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), -EBUSY);
	expect_log("is mounted on ");
	expect_log(mnt);
	/* invalidate() writes block 0 as well: refused the same way. */
	ck_assert_int_eq(W->invalidate(), -EBUSY);
	plugin_close();
	head_sum(loop, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(sh("umount %s", mnt), 0);
	forget_cleanup();
	ck_assert_int_eq(sh("e2fsck -fn %s >/dev/null 2>&1", loop), 0);
}
END_TEST

START_TEST(raw_refuses_active_swap_and_holder)
{
	char loop[64], before[128], after[128];
	int held;

	make_loop("swap", 32, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null && swapon %s", loop, loop), 0);
	on_cleanup("swapoff %s", loop);
	head_sum(loop, before, sizeof(before));
	cfg_set("raw", "device", loop);
	plugin_open("raw");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), -EBUSY);
	expect_log("is an active swap area");
	plugin_close();
	head_sum(loop, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(sh("swapoff %s", loop), 0);
	forget_cleanup();

	/* Another program holding it exclusively (as device-mapper does). */
	held = open(loop, O_RDONLY | O_EXCL | O_CLOEXEC);
	ck_assert_int_ge(held, 0);
	plugin_open("raw");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), -EBUSY);
	expect_log("exclusively");
	close(held);
	/* Free again: accepted. */
	ck_assert_int_eq(W->reserve(MiB), 0);
	W->abort();
	plugin_close();
}
END_TEST

START_TEST(raw_file_must_be_private)
{
	char img[600];

	snprintf(img, sizeof(img), "%s/raw-image", work);
	ck_assert_int_eq(sh("truncate -s 4M %s && chmod 0644 %s", img, img), 0);
	cfg_set("raw", "device", img);
	plugin_open("raw");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), -EPERM);
	expect_log("has mode 0644");
	/* Reading it is refused too: its owner could have crafted it. */
	ck_assert_int_eq(sh("chmod 0600 %s && chown 65534 %s", img, img), 0);
	log_reset();
	ck_assert_int_lt(W->find(), 0);
	expect_log("is owned by uid 65534");
	ck_assert_int_eq(sh("chown 0 %s", img), 0);
	ck_assert_int_eq(W->reserve(MiB), 0);
	W->abort();
	plugin_close();
}
END_TEST

START_TEST(swap_partition_held_refused)
{
	char loop[64];
	uint8_t before[4096], after[4096];
	int held;

	make_loop("swap", 32, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null", loop), 0);
	read_page0(loop, 0, before);
	held = open(loop, O_RDONLY | O_EXCL | O_CLOEXEC);
	ck_assert_int_ge(held, 0);
	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), -EBUSY);
	expect_log("refusing swap area");
	close(held);
	ck_assert_int_eq(W->reserve(MiB), 0);
	W->abort();
	plugin_close();
	read_page0(loop, 0, after);
	ck_assert_mem_eq(before, after, 4096);
}
END_TEST

/* With the kernel source an active swap area is the one the kernel
 * allocates from: not refused (the write itself needs a real kernel). */
START_TEST(swap_kernel_active_accepted)
{
	char loop[64];

	make_loop("swap", 32, loop, sizeof(loop));
	ck_assert_int_eq(sh("mkswap %s >/dev/null && swapon %s", loop, loop), 0);
	on_cleanup("swapoff %s", loop);
	kind = TORPOR_SNAPSHOT_KERNEL;
	cfg_set("swap", "device", loop);
	plugin_open("swap");
	ck_assert_int_eq(plug->initialise(1), 0);
	log_reset();
	ck_assert_int_eq(W->reserve(MiB), 0);
	ck_assert_int_eq(fake_set_calls, 1);
	W->abort();
	plugin_close();
	kind = TORPOR_SNAPSHOT_SIM;
}
END_TEST

/* The open plugin's initialise(1) refuses path while it is 0644 (with
 * fix in the advice) and while uid 65534 owns it, and accepts it once it
 * is root's and 0600 again. */
static void
expect_private_refusals(const char *path, const char *fix)
{
	ck_assert_int_eq(sh("chmod 0644 %s", path), 0);
	log_reset();
	ck_assert_int_eq(plug->initialise(1), -EPERM);
	expect_log("has mode 0644");
	expect_log(fix);
	ck_assert_int_eq(sh("chmod 0600 %s && chown 65534 %s", path, path), 0);
	log_reset();
	ck_assert_int_eq(plug->initialise(1), -EPERM);
	expect_log("is owned by uid 65534");
	ck_assert_int_eq(sh("chown 0 %s", path), 0);
	ck_assert_int_eq(plug->initialise(1), 0);
}

START_TEST(swap_file_must_be_private)
{
	char loop[64], mnt[512], sw[600];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(sw, sizeof(sw), "%s/swapfile", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=16 status=none conv=fsync && mkswap %s >/dev/null",
			    sw, sw), 0);
	cfg_set("swap", "device", sw);
	plugin_open("swap");
	expect_private_refusals(sw, "chmod 0600");
	plugin_close();
}
END_TEST

START_TEST(file_must_be_private)
{
	char loop[64], mnt[512], img[600];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=8 status=none conv=fsync", img), 0);
	cfg_set("file", "path", img);
	plugin_open("file");
	expect_private_refusals(img, "torpor file-setup");
	/* A symbolic link to a good file is not followed. */
	ck_assert_int_eq(sh("ln -s %s %s.link", img, img), 0);
	cfg_set("file", "path", strcat(img, ".link"));
	log_reset();
	ck_assert_int_eq(plug->initialise(1), -ELOOP);
	expect_log("symbolic link");
	plugin_close();
}
END_TEST

START_TEST(file_active_swap_refused)
{
	char loop[64], mnt[512], sw[600];

	make_ext4("fs", 64, loop, sizeof(loop), mnt, sizeof(mnt));
	snprintf(sw, sizeof(sw), "%s/swapfile", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=16 status=none conv=fsync && mkswap %s >/dev/null && swapon %s",
			    sw, sw, sw), 0);
	on_cleanup("swapoff %s", sw);
	cfg_set("file", "path", sw);
	plugin_open("file");
	log_reset();
	ck_assert_int_eq(plug->initialise(1), -EBUSY);
	expect_log("is an active swap file");
	plugin_close();
}
END_TEST

/* ---- throughput (the bench group: a measurement, not a check) ---- */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Plain O_DIRECT 1 MiB writes then reads at byte off of dev. */
static void
bench_raw(const char *dev, uint64_t off, size_t total, uint8_t *buf,
	  double *ret_w, double *ret_r)
{
	int fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	double t;

	ck_assert_int_ge(fd, 0);
	t = now();
	for (size_t o = 0; o < total; o += MiB)
		ck_assert_int_eq(pwrite(fd, buf + o, MiB, (off_t)(off + o)), (ssize_t)MiB);
	ck_assert_int_eq(fdatasync(fd), 0);
	*ret_w = (double)total / MiB / (now() - t);
	t = now();
	for (size_t o = 0; o < total; o += MiB)
		ck_assert_int_eq(pread(fd, buf + o, MiB, (off_t)(off + o)), (ssize_t)MiB);
	*ret_r = (double)total / MiB / (now() - t);
	close(fd);
}

/* The writer through the ABI: reserve, 1 MiB writes, commit; then find,
 * read_header, load_config and 1 MiB reads, as the core does. */
static void
bench_writer(const char *name, const uint8_t *data, uint8_t *buf,
	     size_t total, double *ret_w, double *ret_r)
{
	uint8_t hdr[4096] = { 1, 2, 3 }, *blob;
	size_t blob_len, len;
	double t;
	int r;

	plugin_open(name);
	ck_assert_int_eq(plug->initialise(1), 0);
	t = now();
	ck_assert_int_eq(W->reserve(total), 0);
	if (W->frozen)
		ck_assert_int_eq(W->frozen(), 0);
	for (size_t o = 0; o < total; o += MiB)
		ck_assert_int_eq(W->write(data + o, MiB), 0);
	blob_len = plug->storage_needed();
	blob = calloc(1, blob_len);
	r = plug->save_config(blob, blob_len);
	ck_assert_int_gt(r, 0);
	blob_len = (size_t)r;
	ck_assert_int_eq(W->commit(hdr, sizeof(hdr)), 0);
	*ret_w = (double)total / MiB / (now() - t);
	plugin_close();

	plugin_open(name);
	ck_assert_int_eq(plug->initialise(1), 0);
	t = now();
	ck_assert_int_eq(W->find(), 1);
	ck_assert_int_eq(W->read_header(buf, MiB, &len), 0);
	ck_assert_int_eq(plug->load_config(blob, blob_len), 0);
	for (size_t o = 0; o < total; o += MiB)
		ck_assert_int_eq(W->read(o, buf + o, MiB), 0);
	*ret_r = (double)total / MiB / (now() - t);

	ck_assert_int_eq(W->invalidate(), 0);
	plugin_close();
	ck_assert_msg(memcmp(buf, data, total) == 0, "%s read back other data", name);
	free(blob);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define BENCH_MAX_ROUNDS 15

START_TEST(bench)
{
	const char *mib = getenv("TORPOR_WRITERS_BENCH_MIB");
	const char *rounds_s = getenv("TORPOR_WRITERS_BENCH_ROUNDS");
	size_t total = (size_t)(mib ? atoi(mib) : 256) * MiB;
	int rounds = rounds_s ? atoi(rounds_s) : 5;
	char loop[64], fsloop[64], mnt[512], img[600], phys[64];
	/* [what][round]: swap w, swap r, raw w, raw r, file w, file r, raw w, raw r */
	double v[8][BENCH_MAX_ROUNDS], w2, r2;
	const char *const names[8] = {
		"swap partition write", "swap partition read",
		"  O_DIRECT write", "  O_DIRECT read",
		"file on ext4 write", "file on ext4 read",
		"  O_DIRECT write", "  O_DIRECT read",
	};
	uint64_t fphys;
	uint8_t *data, *buf;

	if (rounds < 1 || rounds > BENCH_MAX_ROUNDS)
		rounds = 5;
	ck_assert_int_eq(posix_memalign((void **)&buf, 4096, total), 0);
	{
		/* Aligned input, as the core's stream buffer is. */
		uint8_t *r = random_bytes(total, 99);

		ck_assert_int_eq(posix_memalign((void **)&data, 4096, total), 0);
		memcpy(data, r, total);
		free(r);
	}

	make_loop("bench-swap", (unsigned)(total / MiB) * 2 + 64, loop, sizeof(loop));
	/* Written once in full, so that no pass pays for the sparse backing
	 * file's allocation. */
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M oflag=direct status=none 2>/dev/null; mkswap %s >/dev/null",
			    loop, loop), 0);
	cfg_set("swap", "device", loop);
	make_ext4("bench-fs", (unsigned)(total / MiB) * 2 + 128, fsloop, sizeof(fsloop),
		  mnt, sizeof(mnt));
	snprintf(img, sizeof(img), "%s/image", mnt);
	ck_assert_int_eq(sh("dd if=/dev/zero of=%s bs=1M count=%zu status=none conv=fsync",
			    img, total / MiB + 8), 0);
	cfg_set("file", "path", img);
	ck_assert_int_eq(sh_out(phys, sizeof(phys),
				"filefrag -v %s | awk '$1 == \"0:\" { sub(/\\.\\..*/, \"\", $4); print $4 }'", img), 0);
	fphys = (uint64_t)strtoull(phys, NULL, 10) * 4096 + 4096;

	/* Raw O_DIRECT to the same device before and after each writer
	 * (the swap writer's: past its area; the file writer's: over the
	 * file's own blocks); raw is the mean of both passes. */
	for (int i = 0; i < rounds; i++) {
		bench_raw(loop, total + 32 * MiB, total, buf, &v[2][i], &v[3][i]);
		bench_writer("swap", data, buf, total, &v[0][i], &v[1][i]);
		bench_raw(loop, total + 32 * MiB, total, buf, &w2, &r2);
		v[2][i] = (v[2][i] + w2) / 2;
		v[3][i] = (v[3][i] + r2) / 2;
		bench_raw(fsloop, fphys, total, buf, &v[6][i], &v[7][i]);
		bench_writer("file", data, buf, total, &v[4][i], &v[5][i]);
		bench_raw(fsloop, fphys, total, buf, &w2, &r2);
		v[6][i] = (v[6][i] + w2) / 2;
		v[7][i] = (v[7][i] + r2) / 2;
	}
	printf("writers bench: %zu MiB per pass, %d rounds, MiB/s (median; each round)\n",
	       total / MiB, rounds);
	for (int k = 0; k < 8; k++) {
		double copy[BENCH_MAX_ROUNDS];

		printf("  %-22s", names[k]);
		memcpy(copy, v[k], sizeof(copy));
		printf(" %6.0f  (", median(copy, rounds));
		for (int i = 0; i < rounds; i++)
			printf("%s%.0f", i ? " " : "", v[k][i]);
		printf(")\n");
	}
	for (int k = 0; k < 8; k += 4) {
		double rw[BENCH_MAX_ROUNDS], rr[BENCH_MAX_ROUNDS];

		for (int i = 0; i < rounds; i++) {
			rw[i] = v[k][i] / v[k + 2][i];
			rr[i] = v[k + 1][i] / v[k + 3][i];
		}
		printf("  %s / O_DIRECT: write %.2f, read %.2f (medians of per-round ratios)\n",
		       k ? "file" : "swap", median(rw, rounds), median(rr, rounds));
	}
	free(data);
	free(buf);
}
END_TEST

static void
add(Suite *s, const char *name, const TTest *t)
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, unchecked_setup, unchecked_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

/* Skip the whole group when a tool the tests run is missing. */
static void
require_tools(void)
{
	if (sh("command -v losetup mkswap swapon mkfs.ext4 e2fsck blkid filefrag mkfs.btrfs btrfs chattr >/dev/null 2>&1") != 0)
		unit_skip("the writer tests need losetup, mkswap, swapon, "
			  "mkfs.ext4, e2fsck, blkid, filefrag, mkfs.btrfs, "
			  "btrfs and chattr");
}

Suite *writers_root_suite(void);
Suite *writers_bench_suite(void);

Suite *
writers_root_suite(void)
{
	Suite *s = suite_create("writers");

	require_tools();
	add(s, "swap-partition", swap_partition_roundtrip);
	add(s, "swap-resume-uuid", swap_partition_by_resume_uuid);
	add(s, "swap-label-refused", swap_by_label_and_refused);
	add(s, "swap-active-sim", swap_active_refused_with_sim);
	add(s, "swap-kernel-alloc", swap_kernel_allocation);
	add(s, "swap-enospc", swap_not_enough_space);
	add(s, "swap-disappears", swap_area_disappears);
	add(s, "swap-file", swap_file_roundtrip);
	add(s, "file", file_roundtrip);
	add(s, "swap-file-btrfs", swap_file_btrfs_roundtrip);
	add(s, "file-btrfs", file_btrfs_roundtrip);
	add(s, "file-moved", file_moved_refused);
	add(s, "file-enospc", file_too_small);
	add(s, "file-unwritten", file_unwritten_refused);
	add(s, "file-sparse", file_sparse_refused);
	add(s, "file-tmpfs", file_tmpfs_refused);
	add(s, "raw-mounted", raw_refuses_mounted);
	add(s, "raw-swap-held", raw_refuses_active_swap_and_holder);
	add(s, "raw-file-private", raw_file_must_be_private);
	add(s, "swap-held", swap_partition_held_refused);
	add(s, "swap-kernel-active", swap_kernel_active_accepted);
	add(s, "swap-file-private", swap_file_must_be_private);
	add(s, "file-private", file_must_be_private);
	add(s, "file-active-swap", file_active_swap_refused);
	return s;
}

/* TORPOR_WRITERS_BENCH_MIB (default 256) and _ROUNDS (default 5) size it. */
Suite *
writers_bench_suite(void)
{
	Suite *s = suite_create("writers-bench");

	if (geteuid() != 0)
		unit_skip("the writers bench needs root (loop devices, mount)");
	require_tools();
	add(s, "bench", bench);
	return s;
}
