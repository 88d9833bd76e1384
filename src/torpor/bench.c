/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor bench: the pipeline's throughput on the simulated snapshot device,
 * per chain and side, next to what limits it, all measured in one run on
 * the same pages: the chain's codecs alone (one thread and N), the sim
 * source's own rate and the target's raw O_DIRECT rate.
 *
 * This file is the command: its options, the chains, the order of the
 * measurements (bench-measure.c) and which figures are printed
 * (bench-print.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "torpor-build.h"

#include "bench.h"
#include "cli-option.h"
#include "log.h"
#include "resume.h"
#include "snapshot-sim.h"
#include "snapshot.h"

static const char *const default_chains[] = {
	"lz4", "lzo", "zlib", "lzo, checksum, crypt",
};

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
			if (bench_chain_has(default_chains[i], plugins[j]) &&
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

static int
bench_run(struct bench *b)
{
	struct chain_result res[BENCH_MAX_CHAINS];
	struct device_rate dev = { 0 };
	size_t i;
	int r, failed = 0;

	bench_premake_pages(b);
	r = bench_setup_work(b);
	if (r >= 0) {
		if (b->tty)
			fprintf(stderr, "bench: the target's own rate\n");
		r = bench_device_measure(b, &dev);
	}
	for (i = 0; r >= 0 && i < b->n_chains; i++)
		if (bench_run_chain(b, b->chains[i], &res[i]) < 0)
			failed++;
	bench_cleanup_work(b);
	snapshot_sim_premade_drop();
	if (r < 0)
		return EXIT_FAILURE;
	if (b->json)
		bench_print_json(b, res, &dev);
	else
		bench_print_table(b, res, &dev);
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
