/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor bench's measurements.  Every one runs in a child process of its
 * own (fork): the peak RSS a child reads from /proc/self/status (VmHWM)
 * is that of one side of one pipeline, as `torpor hibernate` and
 * `torpor-resume` would have it, and nothing one measurement allocated is
 * left for the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "clock.h"
#include "cycle.h"
#include "log.h"
#include "passphrase.h"
#include "proc.h"
#include "resume.h"
#include "snapshot-sim.h"
#include "snapshot.h"
#include "write-all.h"

#define MiB (1024.0 * 1024.0)
/* The device baseline writes and reads this much at most. */
#define BENCH_DEVICE_MAX (UINT64_C(256) << 20)
#define BENCH_PASSPHRASE "torpor bench passphrase"

/* ------------------------------------------------------------------ */
/* Children                                                            */

/* The peak resident set of this process, in MiB (0 when unknown). */
static double
peak_rss_mib(void)
{
	uint64_t kib;

	return proc_self_status("VmHWM", &kib) == 0 ? (double)kib / 1024.0 : 0;
}

typedef int (*child_fn)(struct bench *b, void *ret);

/*
 * Run fn in a child with stdout on /dev/null (the programs' summaries);
 * its result (len bytes) comes back through a pipe.  0, or -EIO when the
 * child failed (it said why on stderr).
 */
static int
run_child(struct bench *b, child_fn fn, void *ret, size_t len)
{
	int p[2], status, nul;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "pipe: %m");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return log_error_errno(-errno, "fork: %m");
	}
	if (pid == 0) {
		close(p[0]);
		nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (nul >= 0)
			dup2(nul, STDOUT_FILENO);
		if (fn(b, ret) < 0 || write(p[1], ret, len) != (ssize_t)len)
			_exit(EXIT_FAILURE);
		_exit(EXIT_SUCCESS);
	}
	close(p[1]);
	n = read(p[0], ret, len);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)len || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -EIO;
	return 0;
}

/* The stream's rate from its progress reports: from the first chunk's
 * report to the last one's, so that the set-up before the stream (plugins,
 * the passphrase's KDF) is not counted.  Progress on a tty. */
struct stream_timer {
	struct bench *b;
	const char *what;
	double t_first, t_last;
	double cpu_first, cpu_last;	/* the process's, all threads */
	uint64_t raw_first, raw_last, stored_last;
	uint64_t calls;
	unsigned shown;		/* twentieths printed */
};

static void
timer_progress(void *ctx, const struct stream_progress *p)
{
	struct stream_timer *t = ctx;
	double now = clock_now();
	unsigned tw = p->chunks_total ?
		(unsigned)(p->chunks_done * 20 / p->chunks_total) : 20;

	if (t->calls++ == 0) {
		t->t_first = now;
		t->cpu_first = clock_process_cpu();
		t->raw_first = p->raw_bytes;
	}
	t->t_last = now;
	t->cpu_last = clock_process_cpu();
	t->raw_last = p->raw_bytes;
	t->stored_last = p->stored_bytes;
	if (t->b->tty && tw != t->shown) {
		t->shown = tw;
		fprintf(stderr, "\r  %s: %3u%%", t->what, tw * 5);
		if (tw == 20)
			fputs("\r\033[K", stderr);
	}
}

static void
timer_result(const struct stream_timer *t, struct side_result *ret)
{
	double dt = t->t_last - t->t_first, dc = t->cpu_last - t->cpu_first;
	double mib = (double)(t->raw_last - t->raw_first) / MiB;

	ret->raw_bytes = t->raw_last;
	ret->stored_bytes = t->stored_last;
	ret->mib_s = dt > 0 ? mib / dt : 0;
	ret->cpu_mib_s = dc > 0 ? mib / dc : 0;
	ret->rss_mib = peak_rss_mib();
}

static int
hibernate_child(struct bench *b, void *ret)
{
	struct stream_timer t = { .b = b, .what = "hibernate" };
	struct cycle_options o = {
		.progress = timer_progress,
		.progress_ctx = &t,
	};
	struct torpor_session s;
	int r;

	r = session_open(&s, b->conf, b->plugin_dir, true);
	if (r >= 0)
		r = session_arrange_hibernate(&s);
	if (r >= 0)
		r = cycle_hibernate(&s, &o);
	session_close(&s);
	if (r < 0 || t.calls == 0)
		return log_error_errno(r < 0 ? r : -EIO, "bench: the hibernate side failed");
	timer_result(&t, ret);
	return 0;
}

static int
resume_child(struct bench *b, void *ret)
{
	struct stream_timer t = { .b = b, .what = "resume" };
	struct resume_options o = {
		.mode = RESUME_RESTORE,
		.progress = timer_progress,
		.progress_ctx = &t,
	};
	struct torpor_session s;
	int r;

	passphrase_set_file(b->pass);
	r = session_open(&s, b->conf, b->plugin_dir, false);
	if (r >= 0)
		r = session_arrange_writer_only(&s);
	if (r >= 0)
		r = resume_run(&s, &o);
	session_close(&s);
	if (r != 0 || !o.restored || t.calls == 0)
		return log_error_errno(-EIO, "bench: the resume side failed (%d)", r);
	timer_result(&t, ret);
	return 0;
}

static int
loop_child(struct bench *b, void *ret)
{
	return bench_loop_run(b->conf, b->plugin_dir, b->threads,
			      (struct bench_loop *)ret);
}

static int
keygen_child(struct bench *b, void *ret)
{
	char *argv[] = {
		"keygen", "--passphrase-file", b->pass, "--output", b->keys,
		"--kdf-memory", "1024", "--kdf-passes", "1", NULL,
	};

	(void)ret;
	return torpor_keygen_main(9, argv) == EXIT_SUCCESS ? 0 : -EIO;
}

/* ------------------------------------------------------------------ */
/* The target's own rate                                               */

/* Open the device baseline's target: the --device, or a new file in the
 * work directory; O_DIRECT unless the filesystem has none (tmpfs). */
static int
device_open(const struct bench *b, char *path, size_t size, bool *direct)
{
	int base = b->device ? O_RDWR : O_RDWR | O_CREAT | O_EXCL;
	int fd;

	if (b->device)
		snprintf(path, size, "%s", b->device);
	else
		snprintf(path, size, "%s/device-test", b->work);
	/* Opened first, O_DIRECT set after: an open(O_CREAT | O_DIRECT)
	 * that fails with EINVAL (tmpfs before 6.6) has created the file. */
	fd = open(path, base | O_CLOEXEC, 0600);
	if (fd < 0)
		return log_error_errno(-errno, "bench: cannot open %s: %m", path);
	*direct = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) == 0;
	return fd;
}

/* Write (then fdatasync) or read `total` bytes in STREAM_IO_SIZE pieces,
 * as the writers do; the seconds it took, or a negative errno. */
static double
device_pass(int fd, uint8_t *buf, uint64_t total, bool writing)
{
	double t0 = clock_now();
	uint64_t off;

	for (off = 0; off < total; off += STREAM_IO_SIZE) {
		ssize_t n = writing ? pwrite(fd, buf, STREAM_IO_SIZE, (off_t)off) :
				      pread(fd, buf, STREAM_IO_SIZE, (off_t)off);

		if (n != (ssize_t)STREAM_IO_SIZE)
			return n < 0 ? -errno : -EIO;
	}
	if (writing && fdatasync(fd) < 0)
		return -errno;
	return clock_now() - t0;
}

int
bench_device_measure(struct bench *b, struct device_rate *ret)
{
	uint64_t total = b->size < BENCH_DEVICE_MAX ? b->size : BENCH_DEVICE_MAX;
	uint8_t *buf = chain_alloc_buffer(STREAM_IO_SIZE);
	uint64_t x = 0x9e3779b97f4a7c15u;
	char path[4200];
	double tw, tr;
	int fd;
	size_t i;

	total -= total % STREAM_IO_SIZE;
	if (total == 0)
		total = STREAM_IO_SIZE;
	if (!buf)
		return log_error_errno(-ENOMEM, "bench: out of memory");
	/* Incompressible bytes, so that no layer below can cheat. */
	for (i = 0; i < STREAM_IO_SIZE; i += 8) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
	fd = device_open(b, path, sizeof(path), &ret->direct);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	tw = device_pass(fd, buf, total, true);
	if (tw >= 0 && !ret->direct)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	tr = tw < 0 ? tw : device_pass(fd, buf, total, false);
	close(fd);
	if (!b->device)
		unlink(path);
	free(buf);
	if (tw < 0 || tr < 0)
		return log_error_errno((int)(tw < 0 ? tw : tr),
				       "bench: I/O on %s failed: %m", path);
	ret->write_mib_s = (double)total / MiB / tw;
	ret->read_mib_s = (double)total / MiB / tr;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The configuration of each chain                                     */

/* Whether the chain (names separated by commas and/or spaces) has name. */
bool
bench_chain_has(const char *chain, const char *name)
{
	size_t n = strlen(name);
	const char *p = chain;

	while ((p = strstr(p, name))) {
		bool start = p == chain || p[-1] == ',' || p[-1] == ' ';
		bool end = p[n] == '\0' || p[n] == ',' || p[n] == ' ';

		if (start && end)
			return true;
		p += n;
	}
	return false;
}

static int
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int r;

	if (fd < 0)
		return log_error_errno(-errno, "bench: cannot create %s: %m", path);
	r = write_all(fd, text, strlen(text));
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	return r < 0 ? log_error_errno(r, "bench: cannot write %s: %m", path) : 0;
}

/* The raw writer on the image file (or the device), the sim source, the
 * chain, and the plugins' sections it needs (zlib at level 1). */
static int
write_chain_config(struct bench *b, const char *chain)
{
	char text[2 * 4200 + 1024];
	int n;

	n = snprintf(text, sizeof(text),
		     "[torpor]\nsnapshot = sim:%" PRIu64 ":%d\nfilters = %s\n"
		     "writer = raw\nthreads = %u\n\n[raw]\ndevice = %s\n",
		     b->size, BENCH_SEED, chain, b->threads,
		     b->device ? b->device : b->image);
	if (bench_chain_has(chain, "zlib"))
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "\n[zlib]\nlevel = 1\n");
	if (bench_chain_has(chain, "crypt"))
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "\n[crypt]\nmode = sealed\npublic_key = %s/crypt.pub\n"
			      "private_key = %s/crypt.key\n", b->keys, b->keys);
	if ((size_t)n >= sizeof(text))
		return log_error_errno(-ENAMETOOLONG, "bench: paths too long");
	return write_file(b->conf, text);
}

/* The work directory with the passphrase, and the image file, empty and
 * private (the raw writer refuses one others can read). */
int
bench_setup_work(struct bench *b)
{
	int r;

	snprintf(b->work, sizeof(b->work), "%s/torpor-bench.XXXXXX", b->dir);
	if (!mkdtemp(b->work))
		return log_error_errno(-errno, "bench: cannot create a directory in %s: %m",
				       b->dir);
	snprintf(b->conf, sizeof(b->conf), "%s/torpor.conf", b->work);
	snprintf(b->image, sizeof(b->image), "%s/image", b->work);
	snprintf(b->pass, sizeof(b->pass), "%s/passphrase", b->work);
	snprintf(b->keys, sizeof(b->keys), "%s/keys", b->work);
	r = write_file(b->pass, BENCH_PASSPHRASE "\n");
	if (r >= 0 && !b->device)
		r = write_file(b->image, "");
	if (r >= 0 && mkdir(b->keys, 0700) < 0)
		r = log_error_errno(-errno, "bench: cannot create %s: %m", b->keys);
	return r;
}

void
bench_cleanup_work(struct bench *b)
{
	static const char *const keys[] = { "crypt.pub", "crypt.key", "crypt.keyfile" };
	char p[4300];
	size_t i;

	if (!b->work[0])
		return;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", b->keys, keys[i]);
		unlink(p);
	}
	rmdir(b->keys);
	unlink(b->conf);
	unlink(b->image);
	unlink(b->pass);
	rmdir(b->work);
}

/* ------------------------------------------------------------------ */
/* One chain                                                           */

static void
say(const struct bench *b, const char *chain, const char *what)
{
	if (b->tty)
		fprintf(stderr, "bench: [%s] %s\n", chain, what);
}

int
bench_run_chain(struct bench *b, const char *chain, struct chain_result *cr)
{
	int r;

	memset(cr, 0, sizeof(*cr));
	cr->chain = chain;
	r = write_chain_config(b, cr->chain);
	if (r >= 0 && bench_chain_has(cr->chain, "crypt") && !b->keys_made) {
		say(b, cr->chain, "making a key pair");
		r = run_child(b, keygen_child, &b->keys_made, 1);
		b->keys_made = r >= 0;
	}
	if (r >= 0) {
		say(b, cr->chain, "hibernate side (pipeline)");
		r = run_child(b, hibernate_child, &cr->hib, sizeof(cr->hib));
	}
	if (r >= 0) {
		say(b, cr->chain, "resume side (pipeline)");
		r = run_child(b, resume_child, &cr->res, sizeof(cr->res));
	}
	if (r >= 0) {
		say(b, cr->chain, "codec loop and source, same pages");
		r = run_child(b, loop_child, &cr->loop, sizeof(cr->loop));
	}
	cr->ok = r >= 0;
	if (r < 0)
		log_error("bench: chain '%s' failed", cr->chain);
	return r;
}

/*
 * The sim's pages, made once before any measurement when memory allows
 * (half of MemAvailable at most): the pipeline then takes them at memory
 * speed, as it takes the kernel's from /dev/snapshot, instead of sharing
 * its CPUs with the generator.
 */
void
bench_premake_pages(struct bench *b)
{
	double t0 = clock_now();
	int r;

	b->premade_s = -1;
	if (b->size > proc_meminfo("MemAvailable") / 2) {
		log_notice("bench: %" PRIu64 " MiB is more than half the available memory: the sim makes its pages while measured",
			   b->size >> 20);
		return;
	}
	if (b->tty)
		fprintf(stderr, "bench: making the sim's pages\n");
	r = snapshot_sim_premake(b->size, BENCH_SEED);
	if (r < 0) {
		log_notice("bench: cannot make the sim's pages beforehand (%s): it makes them while measured",
			   strerror(-r));
		return;
	}
	b->premade_s = clock_now() - t0;
}
