/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor status, as named steps: the configuration, the daemon, the
 * kernel's own checks, the chain and its writer (location, room), the
 * image stored (through resume's own checks, RESUME_INSPECT), the last
 * cycle.  Each step fills struct status; the text and the JSON are
 * written from it at the end.  Messages the steps cause are captured
 * (log_capture) and become reasons in the report, not lines on stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "torpor-build.h"

#include "chain.h"
#include "cycle.h"
#include "hibernation-available.h"
#include "device-names.h"
#include "dm-stack.h"
#include "json.h"
#include "last-cycle.h"
#include "log.h"
#include "logind-view.h"
#include "next-boot.h"
#include "plugin-call.h"
#include "proc.h"
#include "resume.h"
#include "snapshot.h"
#include "status.h"
#include "sysroot.h"
#include "text.h"

#define MAX_REASONS 8
#define REASON_SIZE 512
/* Bound of what plugins say about themselves (seed 009's debug buffer). */
#define DEBUG_INFO_MAX 16384
/* The sim without a test root: no boot is involved. */
#define NEXT_BOOT_NOT_LOOKED_AT \
	"not looked at: the simulated snapshot device resumes without a boot"

enum image_state {
	IMAGE_UNKNOWN,		/* the writer could not look */
	IMAGE_NONE,
	IMAGE_STORED,		/* every check of resume passed */
	IMAGE_DAMAGED,		/* corrupt: never resumable */
	IMAGE_TEST,		/* written by hibernate --test */
	IMAGE_ELSEWHERE,	/* another kernel / plugin set could */
	IMAGE_KEY,		/* a key is needed that was refused */
	IMAGE_STALE,		/* its root filesystem was mounted since */
};

static const char *const image_state_names[] = {
	[IMAGE_UNKNOWN] = "unknown",
	[IMAGE_NONE] = "none",
	[IMAGE_STORED] = "stored",
	[IMAGE_DAMAGED] = "damaged",
	[IMAGE_TEST] = "test",
	[IMAGE_ELSEWHERE] = "elsewhere",
	[IMAGE_STALE] = "stale",
	[IMAGE_KEY] = "key",
};

struct status {
	struct torpor_session *s;
	const char *config_path;	/* asked for; NULL: the default */
	const char *open_error;		/* opening the session's, or NULL */
	char captured[REASON_SIZE];	/* the last error a step caused */

	bool config_valid;
	char config_error[REASON_SIZE];
	char socket[PATH_MAX];
	bool daemon_running;
	bool arranged;			/* writer and filters are usable */

	char location[1024];		/* resume=... words, "" unknown */
	uint64_t image_bytes;		/* expected image, 0 unknown */
	uint64_t image_size_pref;	/* /sys/power/image_size */
	uint64_t used_memory;
	uint64_t stored_bytes;		/* expected stored size */
	bool ratio_from_last;
	uint32_t ratio;			/* per 1000 */
	uint64_t free_bytes;		/* the writer's room for the stream */
	bool have_free;
	struct snapshot_memory mem;	/* the snapshot's copy, foreseen */

	char reasons[MAX_REASONS][REASON_SIZE];
	size_t n_reasons;

	enum image_state image;
	char image_why[REASON_SIZE];
	struct resume_options facts;

	int last_r;			/* last_cycle_read()'s */
	struct last_cycle last;
	char *info;			/* the plugins' debug info */
	struct logind_view logind;
	char zram[512];			/* active zram swap areas, "" none */
	struct next_boot *next;		/* NULL: no boot involved (the sim) */
};

static double
mib(uint64_t bytes)
{
	return (double)bytes / 1048576.0;
}

static void __attribute__((format(printf, 2, 3)))
add_reason(struct status *st, const char *fmt, ...)
{
	va_list ap;

	if (st->n_reasons == MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(st->reasons[st->n_reasons++], REASON_SIZE, fmt, ap);
	va_end(ap);
}

/* The kernel's checks apply to the kernel source; the tests make the sim
 * take them too by faking the kernel's files. */
static bool
kernel_checks_apply(const struct status *st)
{
	return sysroot()[0] || !st->s->config ||
	       snapshot_spec_kind(st->s->config->snapshot) ==
	       TORPOR_SNAPSHOT_KERNEL;
}

static uint64_t
read_number(const char *path)
{
	char text[64];
	uint64_t v;

	if (text_read_small(path, text, sizeof(text)) <= 0 ||
	    sscanf(text, "%" SCNu64, &v) != 1)
		return 0;
	return v;
}

/* Does the daemon's socket answer a connect()?  Nothing is sent.  The
 * connect does not wait: a socket whose queue is full (EAGAIN) has a
 * daemon behind it, and the daemon's own report never connects (it
 * would wait on itself). */
static void
check_daemon(struct status *st, const struct status_daemon *daemon)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (daemon && daemon->socket)
		snprintf(st->socket, sizeof(st->socket), "%s", daemon->socket);
	else
		sysroot_path(STATUS_DAEMON_SOCKET, st->socket, sizeof(st->socket));
	if (daemon && daemon->self) {
		st->daemon_running = true;
		return;
	}
	if (strlen(st->socket) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, st->socket, strlen(st->socket) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	st->daemon_running = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
			     errno == EAGAIN;
	close(fd);
}

/* The configuration loaded; its plugin sections are checked again (the
 * daemon's may have been loaded long ago, the CLI's may have failed). */
static void
check_config(struct status *st)
{
	struct torpor_session *s = st->s;

	if (!s->config) {
		snprintf(st->config_error, sizeof(st->config_error), "%s",
			 st->open_error && st->open_error[0] ? st->open_error :
			 st->captured[0] ? st->captured :
			 "it could not be read (see the messages above)");
		add_reason(st, "the configuration is invalid: %s", st->config_error);
		return;
	}
	st->captured[0] = '\0';
	if (s->plugins_loaded && config_check_plugins(s->config, &s->reg) < 0) {
		snprintf(st->config_error, sizeof(st->config_error), "%s",
			 st->captured);
		add_reason(st, "the configuration is invalid: %s", st->config_error);
		return;
	}
	st->config_valid = true;
}

/* What the kernel says (hibernation-available.h): lockdown, nohibernate,
 * secretmem, no hibernation at all. */
static void
check_kernel(struct status *st)
{
	char why[REASON_SIZE];

	if (!kernel_checks_apply(st))
		return;
	switch (hibernation_available(why, sizeof(why))) {
	case HIBERNATION_AVAILABLE:
	case HIBERNATION_STATE_UNREAD:
		break;
	case HIBERNATION_LOCKDOWN:
	case HIBERNATION_CMDLINE:
	case HIBERNATION_SECRETMEM:
	case HIBERNATION_NO_DISK:
		add_reason(st, "%s", why);
		break;
	}
}

/* The snapshot device exists (the kernel source). */
static void
check_snapshot_device(struct status *st)
{
	const char *spec = st->s->config->snapshot;
	struct stat sb;

	if (snapshot_spec_kind(spec) != TORPOR_SNAPSHOT_KERNEL)
		return;
	if (stat(spec, &sb) < 0)
		add_reason(st, "no snapshot device %s (a kernel without CONFIG_HIBERNATION_SNAPSHOT_DEV?)",
			   spec);
	else if (!S_ISCHR(sb.st_mode))
		add_reason(st, "%s is not a character device", spec);
}

/* The writer's device, when its section names one, keeps its data across
 * the power-off: not zram (its data is in RAM), not swap encrypted with a
 * new random key at each boot. */
static void
check_device_survives(struct status *st, const struct plugin_entry *w)
{
	const char *spec = config_get_for(st->s->config, &w->ops, "device");
	char dev[PATH_MAX], real[PATH_MAX], entry[640];
	const char *base;

	if (!spec || !*spec || bd_resolve(spec, dev, sizeof(dev)) < 0)
		return;
	if (!realpath(dev, real))
		snprintf(real, sizeof(real), "%s", dev);
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (strncmp(base, "zram", 4) == 0)
		add_reason(st, "%s is a zram device: zram is not a hibernation target (its data lives in the RAM that is powered off)",
			   spec);
	else if (bd_random_key_swap(sysroot(), real, entry, sizeof(entry)) == 1 ||
		 bd_random_key_swap(sysroot(), dev, entry, sizeof(entry)) == 1)
		add_reason(st, "%s is encrypted with a new random key at each boot (/etc/crypttab: %s): an image there could not be read after the power-off; the file writer would work (torpor setup)",
			   spec, entry);
}

/* The zram devices active as swap (Fedora's default swap): named in the
 * report, since a user who sees swap in `swapon` may expect the image to
 * go there. */
static void
find_zram(struct status *st)
{
	char path[PATH_MAX], text[16384], *line, *save = NULL;
	size_t used = 0;

	sysroot_path("/proc/swaps", path, sizeof(path));
	if (text_read_small(path, text, sizeof(text)) <= 0)
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[256];
		unsigned long long kib;

		if (sscanf(line, "%255s %*s %llu", name, &kib) != 2 ||
		    strncmp(name, "/dev/zram", 9) != 0)
			continue;
		used += (size_t)snprintf(st->zram + used, sizeof(st->zram) - used,
					 "%s%s (%.1f MiB)", used ? ", " : "",
					 name, (double)kib / 1024.0);
		if (used >= sizeof(st->zram))
			break;
	}
}

/* The expected image and its stored size: the last cycle's ratio when one
 * is recorded, else the filters' expected ratios. */
static void
estimate_sizes(struct status *st)
{
	struct torpor_session *s = st->s;
	enum torpor_snapshot_kind kind = snapshot_spec_kind(s->config->snapshot);
	struct chain c;
	uint64_t total, avail;
	char path[PATH_MAX];

	sysroot_path("/sys/power/image_size", path, sizeof(path));
	st->image_size_pref = read_number(path);
	total = proc_meminfo("MemTotal");
	avail = proc_meminfo("MemAvailable");
	st->used_memory = total > avail ? total - avail : 0;
	st->image_bytes = cycle_expected_image_bytes(kind, s->config->snapshot);
	/* The sim's copy takes no memory, but for a test's fake /proc. */
	if (kernel_checks_apply(st))
		snapshot_memory_read(st->image_bytes, &st->mem);
	st->ratio = st->last_r == 0 ? last_cycle_ratio(&st->last) : 0;
	st->ratio_from_last = st->ratio != 0;
	if (st->ratio_from_last) {
		st->stored_bytes = st->image_bytes / 1000 * st->ratio +
				   st->image_bytes % 1000 * st->ratio / 1000;
		return;
	}
	memset(&c, 0, sizeof(c));
	if (chain_setup(&c, &s->reg, (size_t)sysconf(_SC_PAGESIZE),
			s->config->chunk_pages) == 0) {
		st->stored_bytes = chain_expected_stream(&c, st->image_bytes);
		if (st->image_bytes)
			st->ratio = (uint32_t)(st->stored_bytes * 1000 /
					       st->image_bytes);
	}
	chain_release(&c);
}

/* The writer, initialised as for a cycle: where it puts the image, what
 * the plugins say about themselves.  A writer that cannot start is a
 * reason, with its own words. */
static void
inspect_writer(struct status *st)
{
	struct registry *reg = &st->s->reg;
	struct plugin_entry *w = reg->active_writer;

	st->captured[0] = '\0';
	if (registry_initialise(reg, 1) < 0) {
		add_reason(st, "writer '%s' cannot be used: %s", w->ops.name,
			   st->captured[0] ? st->captured : "its initialise() failed");
		registry_cleanup(reg, 1);
		return;
	}
	if (plugin_resume_args(w, st->location, sizeof(st->location)) < 0)
		st->location[0] = '\0';
	st->captured[0] = '\0';
	st->have_free = plugin_free_space(w, &st->free_bytes) == 0;
	if (st->have_free && st->stored_bytes > st->free_bytes)
		add_reason(st, "not enough space for the image: about %.1f MiB to store, %.1f MiB free on writer '%s'",
			   mib(st->stored_bytes), mib(st->free_bytes), w->ops.name);
	else if (!st->have_free && st->captured[0])
		add_reason(st, "writer '%s' cannot be used: %s", w->ops.name,
			   st->captured);
	st->info = malloc(DEBUG_INFO_MAX);
	if (st->info)
		registry_debug_info(reg, st->info, DEBUG_INFO_MAX);
	registry_cleanup(reg, 1);
}

/* The chain as configured, its writer, and the room it needs. */
static void
check_chain(struct status *st)
{
	struct torpor_session *s = st->s;

	if (!s->config->writer) {
		add_reason(st, "no writer is configured ([torpor] writer=)");
		return;
	}
	st->captured[0] = '\0';
	if (!s->plugins_loaded || session_arrange_hibernate(s) < 0) {
		add_reason(st, "the configuration names a plugin that cannot be used: %s",
			   st->captured[0] ? st->captured : "plugins not loaded");
		return;
	}
	if (!registry_can_hibernate(&s->reg)) {
		add_reason(st, "hibernation is disabled: %s",
			   s->reg.disabled_reason);
		return;
	}
	st->arranged = true;
	check_device_survives(st, s->reg.active_writer);
	estimate_sizes(st);
	inspect_writer(st);
}

/* A torpor verify of this very image (its UUID) is on record. */
static bool
verified(const struct status *st)
{
	return st->last_r == 0 && st->last.verified_at &&
	       st->facts.header_valid &&
	       memcmp(st->last.verify_uuid, st->facts.uuid,
		      sizeof(st->facts.uuid)) == 0;
}

/* What resume would do with the image stored: its own checks, up to
 * the stream (which is not read: status stays quick). */
static void
inspect_image(struct status *st)
{
	struct torpor_session *s = st->s;
	int r;

	st->facts = (struct resume_options){ .mode = RESUME_INSPECT };
	st->captured[0] = '\0';
	if (session_arrange_writer_only(s) < 0)
		return;
	r = resume_run(s, &st->facts);
	snprintf(st->image_why, sizeof(st->image_why), "%s", st->captured);
	if (r == 0)
		st->image = st->facts.image_left ? IMAGE_STORED : IMAGE_NONE;
	else if (r != EXIT_REFUSED)
		st->image = IMAGE_UNKNOWN;
	else if (st->facts.test_image)
		st->image = IMAGE_TEST;
	else if (st->facts.stale_root)
		st->image = IMAGE_STALE;
	else if (st->facts.refusal == REFUSAL_KEY)
		st->image = IMAGE_KEY;
	else if (st->facts.refusal == REFUSAL_ELSEWHERE)
		st->image = IMAGE_ELSEWHERE;
	else
		st->image = IMAGE_DAMAGED;
	if (st->image == IMAGE_STORED && verified(st) && !st->last.verify_intact) {
		st->image = IMAGE_DAMAGED;
		snprintf(st->image_why, sizeof(st->image_why),
			 "torpor verify refused its data");
	}
	/* Back to the configured chain (the daemon hibernates with it). */
	session_arrange_hibernate(s);
}

/* Which kernel the next boot starts, as the cycle will see it: a
 * refusal of the cycle's is a reason here. */
static void
check_next_boot(struct status *st)
{
	enum torpor_snapshot_kind kind = snapshot_spec_kind(st->s->config->snapshot);
	struct snapshot probe = { .kind = kind };
	const char *root = next_boot_root(kind);
	char running[BOOT_RELEASE_SIZE];

	if (!root || snapshot_running_release(&probe, running, sizeof(running)) < 0)
		return;
	st->next = malloc(sizeof(*st->next));
	if (!st->next)
		return;
	next_boot_plan(root, running, st->next);
	if (st->next->verdict == NEXT_BOOT_REFUSE)
		add_reason(st, "the next boot starts %s, not the running %s: %s",
			   st->next->release, running, st->next->fix);
}

static void
gather(struct status *st, const struct status_daemon *daemon)
{
	struct torpor_session *s = st->s;

	check_config(st);
	check_daemon(st, daemon);
	check_kernel(st);
	if (!s->config)
		return;
	st->last_r = last_cycle_read(last_cycle_dir(s->config), &st->last);
	check_snapshot_device(st);
	check_next_boot(st);
	check_chain(st);
	/* The image needs only the writer (its header names its chain). */
	if (s->plugins_loaded && s->config->writer)
		inspect_image(st);
}


/* The image as stored, and what is known of its data. */
static void
describe_stored(const struct status *st, char *buf, size_t size)
{
	const struct resume_options *f = &st->facts;
	time_t t = (time_t)st->last.verified_at;
	char how[128];

	if (verified(st))
		strftime(how, sizeof(how),
			 "stored, resumable (torpor verify read it intact at %Y-%m-%d %H:%M:%S)",
			 localtime(&t));
	else
		snprintf(how, sizeof(how), "stored (header valid; run torpor verify to check the data)");
	snprintf(buf, size, "%s: %" PRIu64 " pages, %.1f MiB stored, kernel %s",
		 how, f->page_count, mib(f->stored_bytes), f->kernel_release);
}

/* What resume would do with the image, in one line. */
static void
describe_image(const struct status *st, char *buf, size_t size)
{
	switch (st->image) {
	case IMAGE_NONE:
		snprintf(buf, size, "none");
		break;
	case IMAGE_STORED:
		describe_stored(st, buf, size);
		break;
	case IMAGE_TEST:
		snprintf(buf, size, "stored, not resumable: test image (written by hibernate --test)");
		break;
	case IMAGE_DAMAGED:
		snprintf(buf, size, "stored, damaged: %s", st->image_why);
		break;
	case IMAGE_STALE:
		snprintf(buf, size, "stored, stale (never resumable): %s",
			 st->image_why);
		break;
	case IMAGE_ELSEWHERE:
		snprintf(buf, size, "stored, not resumable here: %s", st->image_why);
		break;
	case IMAGE_KEY:
		snprintf(buf, size, "stored, its key was refused: %s", st->image_why);
		break;
	default:
		snprintf(buf, size, "unknown%s%s", st->image_why[0] ? ": " : "",
			 st->image_why);
	}
}

/* The snapshot's copy of the image against the memory that could hold it:
 * a warning when it would not fit (the kernel then fails with ENOMEM). */
static void
memory_warning(const struct status *st, char *buf, size_t size)
{
	buf[0] = '\0';
	if (snapshot_memory_short(&st->mem))
		snapshot_memory_explain(&st->mem, buf, size);
}

static void
print_memory_text(const struct status *st, FILE *out)
{
	char warning[1024];

	if (!st->mem.known)
		return;
	memory_warning(st, warning, sizeof(warning));
	if (warning[0])
		fprintf(out, "memory:         warning: too little for the snapshot, which would fail: %s\n",
			warning);
	else
		fprintf(out, "memory:         %.1f MiB free or reclaimable and %.1f MiB swap free: room for the snapshot's copy of the image\n",
			mib(st->mem.available), mib(st->mem.swap_free));
}

static void
print_sizes_text(const struct status *st, FILE *out)
{
	fprintf(out, "image size:     about %.1f MiB", mib(st->image_bytes));
	if (st->image_size_pref)
		fprintf(out, " (/sys/power/image_size %.1f MiB)",
			mib(st->image_size_pref));
	if (st->used_memory)
		fprintf(out, " (memory in use %.1f MiB)", mib(st->used_memory));
	fprintf(out, "\nstored size:    about %.1f MiB (%.0f%%, from %s)\n",
		mib(st->stored_bytes), st->ratio / 10.0,
		st->ratio_from_last ? "the last cycle's ratio" :
				      "the filters' expected ratios");
	if (st->have_free)
		fprintf(out, "free space:     %.1f MiB for the image\n",
			mib(st->free_bytes));
	else
		fprintf(out, "free space:     unknown (the writer cannot tell)\n");
	print_memory_text(st, out);
}

static void
print_last_text(const struct status *st, FILE *out)
{
	const struct last_cycle *lc = &st->last;
	time_t t = (time_t)lc->started;
	char when[64];
	size_t i;

	if (st->last_r == -ENOENT) {
		fprintf(out, "last cycle:     none recorded\n");
		return;
	}
	if (st->last_r < 0) {
		fprintf(out, "last cycle:     unreadable record: %s\n",
			strerror(-st->last_r));
		return;
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	fprintf(out, "last cycle:     %s%s, %s%s\n  phases:      ", when,
		lc->test ? " (--test)" : "", lc->error ? "failed: " : "completed",
		lc->error ? strerror((int)lc->error) : "");
	for (i = 0; i < CYCLE_N_PHASES; i++)
		if (lc->phase_usec[i])
			fprintf(out, " %s %.3f s;",
				cycle_phase_name((enum cycle_phase)i),
				(double)lc->phase_usec[i] / 1e6);
	if (lc->pages)
		fprintf(out, "\n  image:        %" PRIu64 " pages, %.1f MiB stored (%.0f%%)\n",
			lc->pages, mib(lc->stored_bytes),
			last_cycle_ratio(lc) / 10.0);
	else if (lc->error)
		fprintf(out, "\n  image:        none written (the cycle failed before it)\n");
	else
		fprintf(out, "\n  image:        not known (written after the snapshot, in memory that was powered off)\n");
	if (lc->resumed_at)
		fprintf(out, "  resume:       %" PRIu64 " pages in %.2f s (recorded by torpor-resume)\n",
			lc->resume_pages, (double)lc->resume_usec / 1e6);
	else
		fprintf(out, "  resume:       not recorded\n");
}

static void
print_text(const struct status *st, FILE *out)
{
	const struct torpor_config *c = st->s->config;
	char image[2 * REASON_SIZE];
	size_t i;

	if (c && !c->path)
		fprintf(out, "configuration:  %s is missing: the defaults apply (no writer); `torpor setup` writes it\n",
			TORPOR_DEFAULT_CONFIG);
	else
		fprintf(out, "configuration:  %s (%s%s)\n",
			c ? c->path : st->config_path ? st->config_path :
			TORPOR_DEFAULT_CONFIG,
			st->config_valid ? "valid" : "invalid: ",
			st->config_error);
	fprintf(out, "daemon:         %s (%s)\n",
		st->daemon_running ? "running" : "not running", st->socket);
	if (c) {
		fprintf(out, "snapshot:       %s\nchain:         ", c->snapshot);
		for (i = 0; i < c->n_filters; i++)
			fprintf(out, " %s", c->filters[i]);
		fprintf(out, "%s %s\n", c->n_filters ? " ->" : "",
			c->writer ? c->writer : "(no writer)");
		fprintf(out, "resume at:      %s\n",
			st->location[0] ? st->location : "unknown");
	}
	if (st->arranged)
		print_sizes_text(st, out);
	if (st->zram[0])
		fprintf(out, "zram:           %s active as swap: compressed RAM, which a power-off empties, so never the image's place\n",
			st->zram);
	if (c)
		fprintf(out, "next boot:      %s\n", st->next ? st->next->line :
			NEXT_BOOT_NOT_LOOKED_AT);
	fprintf(out, "logind:         %s: %s\n", st->logind.answer, st->logind.why);
	fprintf(out, "hibernate:      %s%s\n", st->n_reasons ? "not possible: " :
		"possible", st->n_reasons ? st->reasons[0] : "");
	for (i = 1; i < st->n_reasons; i++)
		fprintf(out, "                also: %s\n", st->reasons[i]);
	describe_image(st, image, sizeof(image));
	fprintf(out, "stored image:   %s\n", image);
	if (c)
		print_last_text(st, out);
	if (st->info && st->info[0])
		fprintf(out, "plugins:\n%s", st->info);
}

static void
json_number_or_null(FILE *out, const char *key, uint64_t v)
{
	if (v)
		fprintf(out, ", \"%s\": %" PRIu64, key, v);
	else
		fprintf(out, ", \"%s\": null", key);
}

static void
print_last_json(const struct status *st, FILE *out)
{
	const struct last_cycle *lc = &st->last;
	size_t i;

	fprintf(out, ", \"last_cycle\": ");
	if (st->last_r < 0) {
		fprintf(out, "null");
		return;
	}
	fprintf(out, "{\"started\": %" PRIu64 ", \"test\": %s, \"error\": %" PRIu32 ", \"phases\": {",
		lc->started, lc->test ? "true" : "false", lc->error);
	for (i = 0; i < CYCLE_N_PHASES; i++) {
		fprintf(out, "%s\"%s\": ", i ? ", " : "",
			cycle_phase_name((enum cycle_phase)i));
		if (lc->phase_usec[i])
			fprintf(out, "%.6f", (double)lc->phase_usec[i] / 1e6);
		else
			fprintf(out, "null");
	}
	fprintf(out, "}");
	json_number_or_null(out, "pages", lc->pages);
	json_number_or_null(out, "page_size", lc->page_size);
	json_number_or_null(out, "stored_bytes", lc->stored_bytes);
	json_number_or_null(out, "ratio_permille", last_cycle_ratio(lc));
	if (lc->resumed_at)
		fprintf(out, ", \"resume\": {\"resumed_at\": %" PRIu64 ", \"seconds\": %.6f, \"pages\": %" PRIu64 "}}",
			lc->resumed_at, (double)lc->resume_usec / 1e6,
			lc->resume_pages);
	else
		fprintf(out, ", \"resume\": null}");
}

static void
print_image_json(const struct status *st, FILE *out)
{
	const struct resume_options *f = &st->facts;
	char text[2 * REASON_SIZE];
	size_t i;

	describe_image(st, text, sizeof(text));
	fprintf(out, ", \"image\": {\"state\": \"%s\", \"description\": ",
		image_state_names[st->image]);
	json_write_string(out, text);
	if (f->header_valid) {
		fprintf(out, ", \"uuid\": \"");
		for (i = 0; i < sizeof(f->uuid); i++)
			fprintf(out, "%02x", f->uuid[i]);
		fprintf(out, "\", \"created\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"stored_bytes\": %" PRIu64 ", \"kernel_release\": ",
			f->created, f->page_count, f->stored_bytes);
		json_write_string(out, f->kernel_release);
	}
	fprintf(out, "}, \"image_present\": %s",
		st->image == IMAGE_UNKNOWN ? "null" :
		st->image == IMAGE_NONE ? "false" : "true");
}

static void
print_chain_json(const struct status *st, FILE *out)
{
	const struct torpor_config *c = st->s->config;
	char warning[1024];
	size_t i;

	fprintf(out, ", \"snapshot\": ");
	json_write_string(out, c ? c->snapshot : NULL);
	fprintf(out, ", \"filters\": [");
	for (i = 0; c && i < c->n_filters; i++) {
		fprintf(out, "%s", i ? ", " : "");
		json_write_string(out, c->filters[i]);
	}
	fprintf(out, "], \"writer\": ");
	if (c && c->writer)
		json_write_string(out, c->writer);
	else
		fprintf(out, "null");
	fprintf(out, ", \"resume_location\": ");
	if (st->location[0])
		json_write_string(out, st->location);
	else
		fprintf(out, "null");
	json_number_or_null(out, "image_size_estimate", st->image_bytes);
	json_number_or_null(out, "image_size_pref", st->image_size_pref);
	json_number_or_null(out, "used_memory", st->used_memory);
	json_number_or_null(out, "stored_size_estimate", st->stored_bytes);
	if (st->have_free)
		fprintf(out, ", \"free_space\": %" PRIu64, st->free_bytes);
	else
		fprintf(out, ", \"free_space\": null");
	fprintf(out, ", \"stored_ratio_source\": \"%s\"",
		st->ratio_from_last ? "last-cycle" : "filters");
	memory_warning(st, warning, sizeof(warning));
	fprintf(out, ", \"memory_warning\": ");
	json_write_string(out, warning);
}

static void
json_string_or_null(FILE *out, const char *key, const char *v)
{
	fprintf(out, ", \"%s\": ", key);
	if (v && v[0])
		json_write_string(out, v);
	else
		fprintf(out, "null");
}

static void
print_next_boot_json(const struct status *st, FILE *out)
{
	const struct next_boot *nb = st->next;
	const struct boot_next *b = nb ? &nb->b : NULL;
	bool known = nb && nb->inspected;

	fprintf(out, ", \"next_boot\": {\"verdict\": \"%s\"",
		next_boot_verdict_name(nb ? nb->verdict : NEXT_BOOT_UNKNOWN));
	json_string_or_null(out, "loader", b && b->loader != BOOT_LOADER_UNKNOWN ?
			    boot_loader_name(b->loader) : NULL);
	json_string_or_null(out, "release", nb ? nb->release : NULL);
	json_string_or_null(out, "entry", known ? b->menu.e[b->next].title : NULL);
	json_string_or_null(out, "by", known ? b->next_by : NULL);
	json_string_or_null(out, "running", nb ? nb->running : NULL);
	json_string_or_null(out, "running_entry", known && b->running >= 0 ?
			    b->menu.e[b->running].title : NULL);
	json_string_or_null(out, "one_shot", nb ? nb->once_id : NULL);
	json_string_or_null(out, "description", nb ? nb->line :
			    NEXT_BOOT_NOT_LOOKED_AT);
	json_string_or_null(out, "fix", nb ? nb->fix : NULL);
	fprintf(out, "}");
}

static void
print_json(const struct status *st, FILE *out)
{
	const struct torpor_config *c = st->s->config;
	size_t i;

	fprintf(out, "{\"config\": ");
	if (c && !c->path)
		fprintf(out, "null");
	else
		json_write_string(out, c ? c->path : st->config_path ?
				  st->config_path : TORPOR_DEFAULT_CONFIG);
	fprintf(out, ", \"config_missing\": %s, \"config_valid\": %s, \"config_error\": ",
		c && !c->path ? "true" : "false",
		st->config_valid ? "true" : "false");
	json_write_string(out, st->config_error);
	fprintf(out, ", \"daemon\": {\"socket\": ");
	json_write_string(out, st->socket);
	fprintf(out, ", \"running\": %s}", st->daemon_running ? "true" : "false");
	print_chain_json(st, out);
	fprintf(out, ", \"logind\": {\"can_hibernate\": ");
	json_write_string(out, st->logind.answer);
	fprintf(out, ", \"why\": ");
	json_write_string(out, st->logind.why);
	fprintf(out, "}, \"zram_swap\": ");
	json_write_string(out, st->zram);
	print_next_boot_json(st, out);
	fprintf(out, ", \"can_hibernate\": %s, \"disabled_reason\": ",
		st->n_reasons ? "false" : "true");
	json_write_string(out, st->n_reasons ? st->reasons[0] : "");
	fprintf(out, ", \"reasons\": [");
	for (i = 0; i < st->n_reasons; i++) {
		fprintf(out, "%s", i ? ", " : "");
		json_write_string(out, st->reasons[i]);
	}
	fprintf(out, "]");
	print_image_json(st, out);
	print_last_json(st, out);
	fprintf(out, ", \"debug_info\": ");
	json_write_string(out, st->info ? st->info : "");
	fprintf(out, "}\n");
}

int
status_report(struct torpor_session *s, FILE *out, bool json,
	      const struct status_daemon *daemon)
{
	return status_report_opened(s, NULL, NULL, out, json, daemon);
}

int
status_report_opened(struct torpor_session *s, const char *config_path,
		     const char *open_error, FILE *out, bool json,
		     const struct status_daemon *daemon)
{
	struct status *st = calloc(1, sizeof(*st));
	int r;

	if (!st)
		return -ENOMEM;
	st->s = s;
	st->config_path = config_path;
	st->open_error = open_error;
	st->image = IMAGE_UNKNOWN;
	st->last_r = -ENOENT;
	log_capture(st->captured, sizeof(st->captured), true);
	gather(st, daemon);
	find_zram(st);
	logind_view(&st->logind, sysroot(), st->location[0] ? st->location : NULL);
	log_capture(NULL, 0, false);
	if (json)
		print_json(st, out);
	else
		print_text(st, out);
	r = st->n_reasons ? 1 : 0;
	free(st->next);
	free(st->info);
	free(st);
	return r;
}
