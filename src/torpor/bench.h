/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor bench: the command (bench.c), its measurements (bench-measure.c),
 * its codec loop (bench-loop.c) and its figures (bench-print.c).
 */
#ifndef TORPOR_BENCH_H
#define TORPOR_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_CHAINS 16
#define BENCH_DEFAULT_SIZE (UINT64_C(512) << 20)
#define BENCH_SEED 1

/* The chain's codecs without the pipeline, on the pages of the sim image
 * the configuration names, and the sim source's own rates; image MiB/s. */
struct bench_loop {
	double enc1, encn;	/* encode on one thread, on n */
	double dec1, decn;	/* decode on one thread, on n */
	double src_read;	/* the sim handing pages out (hibernate) */
	double src_write;	/* the sim taking them back, checked (resume) */
	/* The same per CPU-second of the thread that ran it (immune to
	 * other processes taking the CPUs): encode, decode, and the sim. */
	double enc1_cpu, dec1_cpu, src_read_cpu, src_write_cpu;
};

/*
 * Read every page of the configuration's sim image in batches; run each
 * batch through the chain's encode on one thread, then on `threads`
 * threads, decode it both ways too, and hand the decoded pages back to a
 * resume-mode sim, which checks each.  Only the codec calls are timed for
 * the codecs, only the sim's calls for the source.  0, or -errno (logged).
 */
int bench_loop_run(const char *conf, const char *plugin_dir,
		   unsigned threads, struct bench_loop *ret);

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

/* bench-measure.c */
/* Whether the chain (names separated by commas and/or spaces) has name. */
bool bench_chain_has(const char *chain, const char *name);
/* The sim's pages made beforehand, when memory allows (b->premade_s). */
void bench_premake_pages(struct bench *b);
/* The work directory with the passphrase, and the image file, empty and
 * private; and their removal. */
int bench_setup_work(struct bench *b);
void bench_cleanup_work(struct bench *b);
/* The target's own rate: O_DIRECT writes and reads of its own. */
int bench_device_measure(struct bench *b, struct device_rate *ret);
/* Both sides of the pipeline and the codec loop, for one chain. */
int bench_run_chain(struct bench *b, const char *chain,
		    struct chain_result *cr);

/* bench-print.c */
void bench_print_table(const struct bench *b, const struct chain_result *res,
		       const struct device_rate *dev);
void bench_print_json(const struct bench *b, const struct chain_result *res,
		      const struct device_rate *dev);

/* Run `torpor bench` with argv[0] = "bench". */
int torpor_bench_main(int argc, char **argv);

/* `torpor keygen`, which bench uses for the crypt chain's keys. */
int torpor_keygen_main(int argc, char **argv);

#endif
