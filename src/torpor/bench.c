/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor bench: the pipeline's throughput on the simulated snapshot device,
 * per chain and side, next to what limits it, all measured in one run on
 * the same pages: the chain's codecs alone (one thread and N), the sim
 * source's own rate and the target's raw O_DIRECT rate.
 *
 * Every measurement runs in a child process of its own (fork): the peak
 * RSS a child reads from /proc/self/status (VmHWM) is that of one side of
 * one pipeline, as `torpor hibernate` and `torpor-resume` would have it,
 * and nothing one measurement allocated is left for the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "torpor-build.h"

#include "bench.h"
#include "cli-option.h"
#include "clock.h"
#include "cycle.h"
#include "log.h"
#include "passphrase.h"
#include "proc.h"
#include "resume.h"
#include "session.h"
#include "snapshot-sim.h"
#include "snapshot.h"

#define MiB (1024.0 * 1024.0)
#define BENCH_MAX_CHAINS 16
#define BENCH_DEFAULT_SIZE (UINT64_C(512) << 20)
#define BENCH_SEED 1
/* The device baseline writes and reads this much at most. */
#define BENCH_DEVICE_MAX (UINT64_C(256) << 20)
#define BENCH_PASSPHRASE "torpor bench passphrase"

static const char *const default_chains[] = {
	"lz4", "lzo", "zlib", "lzo, checksum, crypt",
};

struct bench {
	uint64_t size;
	const char *chains[BENCH_MAX_CHAINS];
	size_t n_chains;
	unsigned threads;
	unsigned cpus;		/* the pipeline can use: CPUs, threads + 1 */
	bool json;
	bool tty;		/* progress on stderr */
	const char *dir;	/* where the temporary files go */
	const char *device;	/* the raw writer's target instead */
	const char *plugin_dir;
	char work[4096];	/* our temporary directory */
	char conf[4200], image[4200], pass[4200], keys[4200];
	bool keys_made;
	/* The sim's pages made beforehand (snapshot_sim_premake()), in
	 * seconds; < 0: generated while measured. */
	double premade_s;
};

/* The target's own rates (O_DIRECT unless direct is false). */
struct device_rate {
	double write_mib_s, read_mib_s;
	bool direct;
};

/* One side of one pipeline, from its child. */
struct side_result {
	double mib_s;		/* image bytes per second */
	double rss_mib;		/* VmHWM of the child */
	double cpu_mib_s;	/* image bytes per CPU-second of the process */
	uint64_t raw_bytes, stored_bytes;
};

struct chain_result {
	const char *chain;
	bool ok;
	struct side_result hib, res;
	struct bench_loop loop;
};

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

static int
device_measure(struct bench *b, struct device_rate *ret)
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
static bool
chain_has(const char *chain, const char *name)
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
	size_t len = strlen(text);
	bool ok;

	if (fd < 0)
		return log_error_errno(-errno, "bench: cannot create %s: %m", path);
	ok = write(fd, text, len) == (ssize_t)len;
	if (close(fd) < 0)
		ok = false;
	return ok ? 0 : log_error_errno(-EIO, "bench: cannot write %s", path);
}

/* The raw writer on the image file (or the device), the sim source, the
 * chain, and the plugins' sections it needs (zlib at level 1). */
static int
write_config(struct bench *b, const char *chain)
{
	char text[2 * 4200 + 1024];
	int n;

	n = snprintf(text, sizeof(text),
		     "[torpor]\nsnapshot = sim:%" PRIu64 ":%d\nfilters = %s\n"
		     "writer = raw\nthreads = %u\n\n[raw]\ndevice = %s\n",
		     b->size, BENCH_SEED, chain, b->threads,
		     b->device ? b->device : b->image);
	if (chain_has(chain, "zlib"))
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "\n[zlib]\nlevel = 1\n");
	if (chain_has(chain, "crypt"))
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "\n[crypt]\nmode = sealed\npublic_key = %s/crypt.pub\n"
			      "private_key = %s/crypt.key\n", b->keys, b->keys);
	if ((size_t)n >= sizeof(text))
		return log_error_errno(-ENAMETOOLONG, "bench: paths too long");
	return write_file(b->conf, text);
}

/* The work directory with the passphrase, and the image file, empty and
 * private (the raw writer refuses one others can read). */
static int
setup_work(struct bench *b)
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

static void
cleanup_work(struct bench *b)
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

static int
run_chain(struct bench *b, const char *chain, struct chain_result *cr)
{
	int r;

	memset(cr, 0, sizeof(*cr));
	cr->chain = chain;
	r = write_config(b, cr->chain);
	if (r >= 0 && chain_has(cr->chain, "crypt") && !b->keys_made) {
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

/* The figures of one side, derived. */
struct side_figures {
	const char *name;
	double mib_s, rss, loop1, loopn, source, device, limit;
	double efficiency;	/* pipeline / limit */
	double scaling;		/* n threads / 1 thread */
	/* Per CPU-second, whatever else runs: the pipeline's rate, the
	 * share of its CPU time that the codec and the source account for
	 * (the rest is its overhead), and the best rate the CPUs it can use
	 * allow for that codec and source work. */
	double cpu_mib_s, work_share, cpu_limit;
};

static double
min3(double a, double b, double c)
{
	double m = a < b ? a : b;

	return m < c ? m : c;
}

static double
ratio_of(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* CPU seconds per image MiB of the codec (one thread) and the source. */
static double
work_per_mib(const struct chain_result *cr, bool hib)
{
	double codec = hib ? cr->loop.enc1_cpu : cr->loop.dec1_cpu;
	double source = hib ? cr->loop.src_read_cpu : cr->loop.src_write_cpu;

	return codec > 0 && source > 0 ? 1 / codec + 1 / source : 0;
}

static void
figures(const struct chain_result *cr, const struct device_rate *dev,
	unsigned cpus, bool hib, struct side_figures *f)
{
	double work = work_per_mib(cr, hib);

	/* The device moves stored bytes: in image bytes it goes faster by
	 * image / stored. */
	double stored = ratio_of((double)cr->hib.stored_bytes,
				 (double)cr->hib.raw_bytes);
	const struct side_result *s = hib ? &cr->hib : &cr->res;

	f->name = hib ? "hibernate" : "resume";
	f->mib_s = s->mib_s;
	f->rss = s->rss_mib;
	f->loop1 = hib ? cr->loop.enc1 : cr->loop.dec1;
	f->loopn = hib ? cr->loop.encn : cr->loop.decn;
	f->source = hib ? cr->loop.src_read : cr->loop.src_write;
	f->device = ratio_of(hib ? dev->write_mib_s : dev->read_mib_s, stored);
	f->limit = min3(f->loopn, f->source, f->device);
	f->efficiency = ratio_of(f->mib_s, f->limit);
	f->scaling = ratio_of(f->loopn, f->loop1);
	f->cpu_mib_s = s->cpu_mib_s;
	f->work_share = work * f->cpu_mib_s;
	f->cpu_limit = ratio_of(cpus, work);
}

static double
stored_ratio(const struct chain_result *cr)
{
	return ratio_of((double)cr->hib.stored_bytes, (double)cr->hib.raw_bytes);
}

/* ------------------------------------------------------------------ */
/* Output                                                              */

static void
print_table(const struct bench *b, const struct chain_result *res,
	    const struct device_rate *dev)
{
	size_t i;
	int side;

	printf("torpor bench: sim %" PRIu64 " MiB, %u thread%s, target %s "
	       "(%s: write %.0f MiB/s, read %.0f MiB/s)\n",
	       b->size >> 20, b->threads, b->threads == 1 ? "" : "s",
	       b->device ? b->device : b->dir,
	       dev->direct ? "O_DIRECT" : "page cache", dev->write_mib_s,
	       dev->read_mib_s);
	if (b->premade_s >= 0)
		printf("sim pages made beforehand (%.1f s), not while measured\n",
		       b->premade_s);
	else
		printf("sim pages made while measured (they could not be made beforehand)\n");
	printf("%-22s %-9s %7s %6s %6s %7s %7s %5s %7s %7s %7s %6s %7s %5s %7s\n",
	       "chain", "side", "MiB/s", "stored", "RSS", "loop1", "loopN",
	       "N/1", "source", "device", "limit", "/limit", "cpuMiB", "work",
	       "cpulim");
	for (i = 0; i < b->n_chains; i++) {
		const struct chain_result *cr = &res[i];

		if (!cr->ok) {
			printf("%-22s (failed)\n", cr->chain);
			continue;
		}
		for (side = 1; side >= 0; side--) {
			struct side_figures f;

			figures(cr, dev, b->cpus, side, &f);
			printf("%-22s %-9s %7.1f %6.3f %6.1f %7.1f %7.1f %5.2f %7.1f %7.1f %7.1f %6.2f %7.1f %5.2f %7.1f\n",
			       side ? cr->chain : "", f.name, f.mib_s,
			       stored_ratio(cr), f.rss, f.loop1, f.loopn,
			       f.scaling, f.source, f.device, f.limit,
			       f.efficiency, f.cpu_mib_s, f.work_share,
			       f.cpu_limit);
		}
	}
	printf("MiB/s of image (pages); stored: stored bytes / image bytes; RSS: peak, MiB;\n"
	       "limit = min(loopN, source, device); cpuMiB: the pipeline per CPU-second;\n"
	       "work: share of its CPU time spent in the codec and the source; cpulim: %u\n"
	       "CPUs' worth of that work.\n", b->cpus);
}

/* One side's figures as a JSON object. */
static void
json_side(const struct side_figures *f, bool last)
{
	printf("      \"%s\": {\"mib_s\": %.3f, \"peak_rss_mib\": %.3f, "
	       "\"loop_1_mib_s\": %.3f, \"loop_n_mib_s\": %.3f, "
	       "\"scaling\": %.4f, \"source_mib_s\": %.3f, "
	       "\"device_mib_s\": %.3f, \"limit_mib_s\": %.3f, "
	       "\"efficiency\": %.4f, \"cpu_mib_s\": %.3f, "
	       "\"work_share\": %.4f, \"cpu_limit_mib_s\": %.3f}%s\n",
	       f->name, f->mib_s, f->rss, f->loop1, f->loopn, f->scaling,
	       f->source, f->device, f->limit, f->efficiency, f->cpu_mib_s,
	       f->work_share, f->cpu_limit, last ? "" : ",");
}

static void
print_json(const struct bench *b, const struct chain_result *res,
	   const struct device_rate *dev)
{
	struct side_figures f;
	size_t i;

	printf("{\n  \"size\": %" PRIu64 ",\n  \"threads\": %u,\n  \"cpus\": %u,\n"
	       "  \"sim_pages_premade\": %s,\n"
	       "  \"target\": \"%s\",\n  \"device\": {\"direct\": %s, "
	       "\"write_mib_s\": %.3f, \"read_mib_s\": %.3f},\n  \"chains\": [\n",
	       b->size, b->threads, b->cpus,
	       b->premade_s >= 0 ? "true" : "false",
	       b->device ? "device" : "file",
	       dev->direct ? "true" : "false", dev->write_mib_s,
	       dev->read_mib_s);
	for (i = 0; i < b->n_chains; i++) {
		const struct chain_result *cr = &res[i];

		printf("    {\n      \"chain\": \"%s\",\n      \"ok\": %s,\n"
		       "      \"image_bytes\": %" PRIu64 ",\n"
		       "      \"stored_bytes\": %" PRIu64 ",\n"
		       "      \"stored_ratio\": %.4f,\n",
		       cr->chain, cr->ok ? "true" : "false",
		       cr->hib.raw_bytes, cr->hib.stored_bytes,
		       stored_ratio(cr));
		figures(cr, dev, b->cpus, true, &f);
		json_side(&f, false);
		figures(cr, dev, b->cpus, false, &f);
		json_side(&f, true);
		printf("    }%s\n", i + 1 < b->n_chains ? "," : "");
	}
	printf("  ]\n}\n");
}

/* ------------------------------------------------------------------ */
/* The command                                                         */

static void
bench_usage(FILE *f)
{
	fprintf(f, "Usage: torpor bench [--size SIZE] [--chain CHAIN]... [--threads N]\n"
		   "                    [--dir DIR | --device DEVICE] [--json]\n\n"
		   "Measure the pipeline on the simulated snapshot device, per chain and\n"
		   "side, against the codecs alone, the sim source and the target's O_DIRECT\n"
		   "rate.  Defaults: 512M, the chains lz4, lzo, zlib (level 1) and\n"
		   "'lzo, checksum, crypt', one thread per online CPU, --dir /var/tmp.\n"
		   "--device is overwritten.\n");
}

/* A chain as the configuration takes it: plugin names, commas, spaces. */
static int
check_chain(const char *chain)
{
	if (strlen(chain) > 200 ||
	    strspn(chain, "abcdefghijklmnopqrstuvwxyz0123456789-, ") != strlen(chain))
		return log_error_errno(-EINVAL, "bench: --chain '%s': plugin names separated by commas or spaces",
				       chain);
	return 0;
}

static int
parse_size(const char *arg, uint64_t *ret)
{
	char spec[64];
	uint64_t seed;
	bool named;
	int r;

	if (snprintf(spec, sizeof(spec), "sim:%s", arg) >= (int)sizeof(spec))
		r = -EINVAL;
	else
		r = snapshot_spec_parse(spec, ret, &seed, &named);
	if (r < 0)
		return log_error_errno(-EINVAL, "bench: --size '%s': %s", arg,
				       snapshot_spec_strerror(r));
	return 0;
}

static int
parse_threads(const char *arg, unsigned *ret)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || n < 1 || n > CONFIG_MAX_THREADS)
		return log_error_errno(-EINVAL, "bench: --threads '%s': a number from 1 to %d",
				       arg, CONFIG_MAX_THREADS);
	*ret = (unsigned)n;
	return 0;
}

enum {
	OPT_SIZE = 0x100, OPT_CHAIN, OPT_THREADS, OPT_JSON, OPT_DIR,
	OPT_DEVICE, OPT_PLUGIN_DIR,
};

static int
apply_bench_option(struct bench *b, int c, const char *arg)
{
	switch (c) {
	case OPT_SIZE:
		return parse_size(arg, &b->size);
	case OPT_CHAIN:
		if (b->n_chains == BENCH_MAX_CHAINS)
			return log_error_errno(-E2BIG, "bench: at most %d chains",
					       BENCH_MAX_CHAINS);
		b->chains[b->n_chains++] = arg;
		return check_chain(arg);
	case OPT_THREADS:
		return parse_threads(arg, &b->threads);
	case OPT_JSON:
		b->json = true;
		return 0;
	case OPT_DIR:
		b->dir = arg;
		return 0;
	case OPT_DEVICE:
		b->device = arg;
		return 0;
	case OPT_PLUGIN_DIR:
		/* The loader takes plugins from absolute paths only. */
		if (arg[0] != '/') {
			log_error("bench: --plugin-dir %s: not an absolute path: plugins are loaded only from one (--plugin-dir \"$(realpath %s)\")",
				  arg, arg);
			return -EINVAL;
		}
		b->plugin_dir = arg;
		return 0;
	case 'h':
		bench_usage(stdout);
		return 1;
	default:
		return -EINVAL;
	}
}

/* 0 to run, 1 when all is done (--help), -errno on a wrong argument. */
static int
parse_bench_args(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "chain", required_argument, NULL, OPT_CHAIN },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	cli_option_begin();
	while ((c = getopt_long(argc, argv, ":p:h", opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return cli_option_error("bench", c, argv);
		r = apply_bench_option(b, c == 'p' ? OPT_PLUGIN_DIR : c, optarg);
		if (r != 0)
			return r;
	}
	if (optind < argc)
		return log_error_errno(-EINVAL, "bench: unexpected argument '%s'",
				       argv[optind]);
	if (b->dir && b->device)
		return log_error_errno(-EINVAL, "bench: --dir and --device exclude each other");
	return 0;
}

/* The default chains whose plugins are all built; for the others, the
 * file that is missing and where it was looked for. */
static void
default_chain_set(struct bench *b)
{
	static const char *const plugins[] = { "lz4", "lzo", "zlib", "crypt", "checksum" };
	size_t i, j;
	char so[4200];

	for (i = 0; i < sizeof(default_chains) / sizeof(default_chains[0]); i++) {
		const char *missing = NULL;

		for (j = 0; j < sizeof(plugins) / sizeof(plugins[0]) && !missing; j++) {
			snprintf(so, sizeof(so), "%s/%s.so", b->plugin_dir, plugins[j]);
			if (chain_has(default_chains[i], plugins[j]) &&
			    access(so, R_OK) < 0)
				missing = plugins[j];
		}
		if (!missing)
			b->chains[b->n_chains++] = default_chains[i];
		else
			log_notice("bench: skipping chain '%s': plugin '%s' is not built: no %s.so in %s (build it, or name the directory that has it with --plugin-dir)",
				   default_chains[i], missing, missing,
				   b->plugin_dir);
	}
}

/*
 * The sim's pages, made once before any measurement when memory allows
 * (half of MemAvailable at most): the pipeline then takes them at memory
 * speed, as it takes the kernel's from /dev/snapshot, instead of sharing
 * its CPUs with the generator.
 */
static void
premake_pages(struct bench *b)
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

static int
bench_run(struct bench *b)
{
	struct chain_result res[BENCH_MAX_CHAINS];
	struct device_rate dev = { 0 };
	size_t i;
	int r, failed = 0;

	premake_pages(b);
	r = setup_work(b);
	if (r >= 0) {
		if (b->tty)
			fprintf(stderr, "bench: the target's own rate\n");
		r = device_measure(b, &dev);
	}
	for (i = 0; r >= 0 && i < b->n_chains; i++)
		if (run_chain(b, b->chains[i], &res[i]) < 0)
			failed++;
	cleanup_work(b);
	snapshot_sim_premade_drop();
	if (r < 0)
		return EXIT_FAILURE;
	if (b->json)
		print_json(b, res, &dev);
	else
		print_table(b, res, &dev);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int
torpor_bench_main(int argc, char **argv)
{
	struct bench b = {
		.size = BENCH_DEFAULT_SIZE,
		.threads = pool_default_threads(),
		.plugin_dir = TORPOR_PLUGINDIR,
		.tty = isatty(STDERR_FILENO),
	};
	int r = parse_bench_args(&b, argc, argv);

	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	if (!b.dir)
		b.dir = "/var/tmp";
	b.cpus = pool_default_threads();
	if (b.cpus > b.threads + 1)
		b.cpus = b.threads + 1;
	if (b.n_chains == 0)
		default_chain_set(&b);
	if (b.n_chains == 0)
		return log_error("bench: no chain to measure"), EXIT_FAILURE;
	/* The children's own chatter (plugin notices) is not the figures. */
	if (log_get_max_level() == TORPOR_LOG_NOTICE)
		log_set_max_level(TORPOR_LOG_WARNING);
	return bench_run(&b);
}
