/* SPDX-License-Identifier: GPL-2.0-or-later */
/* torpor bench: the command and its codec loop (bench-loop.c). */
#ifndef TORPOR_BENCH_H
#define TORPOR_BENCH_H

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

/* Run `torpor bench` with argv[0] = "bench". */
int torpor_bench_main(int argc, char **argv);

/* `torpor keygen`, which bench uses for the crypt chain's keys. */
int torpor_keygen_main(int argc, char **argv);

#endif
