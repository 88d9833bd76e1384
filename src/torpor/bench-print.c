/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor bench's figures, derived from what was measured (what limits
 * each side, how far the pipeline gets to it), as a table or as JSON.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "bench.h"

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

void
bench_print_table(const struct bench *b, const struct chain_result *res,
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

void
bench_print_json(const struct bench *b, const struct chain_result *res,
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
