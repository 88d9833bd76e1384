/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor: the s2disk-style command line.  The words of the command line live
 * in one table (commands[] below); scripts, units and the initramfs hooks
 * depend on them.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "torpor-build.h"

#include "clock.h"
#include "config.h"
#include "cycle.h"
#include "host.h"
#include "last-cycle.h"
#include "loader.h"
#include "log.h"
#include "passphrase.h"
#include "plugin-call.h"
#include "plugin-names.h"
#include "proc.h"
#include "progress.h"
#include "protocol.h"
#include "resume.h"
#include "session.h"
#include "snapshot.h"
#include "status.h"

#include "cli-option.h"
#include "client.h"
#include "kernel-location.h"
#include "stale.h"
#include "suspend-then-hibernate.h"
#include "view.h"

int torpor_keygen_main(int argc, char **argv);
int torpor_file_setup_main(int argc, char **argv);
int torpor_bench_main(int argc, char **argv);
int torpor_setup_main(int argc, char **argv);

static const char *arg_config;
static const char *arg_plugin_dir;
static const char *arg_passphrase_file;
static const char *arg_socket;
static const char *arg_after;
static const char *arg_delay;
static bool arg_s2h;		/* hibernate: suspend-then-hibernate's step */
static bool arg_direct;
static bool arg_test;
static bool arg_force;
static bool arg_json;
static bool arg_verbose;
static bool arg_stale;
static bool arg_kernel;
static bool arg_location;
static bool arg_help;
static unsigned arg_wait_device;

struct command {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
	bool own_options;	/* parses its own argv (after the word) */
	/* torpor COMMAND --help: after the options, how it runs and its
	 * exit status (NULL: the command prints its own help). */
	const char *more;
};

static int cmd_hibernate(int argc, char **argv);
static int cmd_status(int argc, char **argv);
static int cmd_plugins(int argc, char **argv);
static int cmd_config(int argc, char **argv);
static int cmd_verify(int argc, char **argv);
static int cmd_invalidate(int argc, char **argv);
static int cmd_resume_args(int argc, char **argv);
static int cmd_keygen(int argc, char **argv);
static int cmd_file_setup(int argc, char **argv);
static int cmd_reload(int argc, char **argv);
static int cmd_setup(int argc, char **argv);
static int cmd_suspend_then_hibernate(int argc, char **argv);

static const struct command commands[] = {
	{ "hibernate", "[--direct] [--test] [--force] [--after WHAT]", "write the memory image and power off", cmd_hibernate, false,
	  "Through torpord when it answers on its socket, else in this process.\n"
	  "Progress goes to standard error, one line per phase (a bar on a\n"
	  "terminal); -q leaves it and the summary out.\n\n"
	  "Exit status: 0 once the machine is back (resumed, or --test done);\n"
	  "1 when a step failed: everything is undone (image discarded, tasks\n"
	  "thawed)." },
	{ "status", "[--json]", "show whether hibernation is possible and where the image goes", cmd_status, false,
	  "The configuration (and its error, with FILE:LINE), torpord, the chain,\n"
	  "the resume location, the sizes and the memory the snapshot needs, each\n"
	  "reason hibernation would fail, the image stored and the last cycle.\n\n"
	  "Exit status: 0 when hibernation would work now, 1 when it would fail." },
	{ "plugins", "[--json]", "list the plugins found in the plugin directory", cmd_plugins, false,
	  "A plugin file that cannot be loaded is a warning, not an error.\n\n"
	  "Exit status: 0, or 1 when the plugin directory cannot be read." },
	{ "config", "", "print the effective configuration", cmd_config, false,
	  "Every key with its help, its value and '# default' where the file does\n"
	  "not set it; the output reads back as a configuration file.\n\n"
	  "Exit status: 0, or 1 when the configuration is invalid." },
	{ "verify", "[--passphrase-file FILE]", "read and check a stored image through the whole chain", cmd_verify, false,
	  "As torpor-resume reads it before a restore, changing nothing.\n"
	  "--passphrase-file FILE unlocks the crypt filter's private key.\n\n"
	  "Exit status: 0 when the image is intact or there is none; 2 when it is\n"
	  "refused (the message names the chunk at fault); 1 any other error." },
	{ "invalidate", "[--stale [--wait-device SECONDS]]", "discard a stored image so that it is never resumed", cmd_invalidate, false,
	  "The swap writer gives the swap area its signature back.\n\n"
	  "Exit status: 0 when no resumable image remains, 1 on an error." },
	{ "resume-args", "[--kernel | --location]", "print the kernel command line words the next boot needs to find the image", cmd_resume_args, false,
	  "Only an image inside a file system (a swap file, the file writer)\n"
	  "needs words on the command line; for a swap partition or a device\n"
	  "nothing is printed and a line on standard error says why: torpor-resume\n"
	  "finds it through the configuration in the initramfs, and a resume= word\n"
	  "would make the initramfs wait for a swap signature the image replaces.\n\n"
	  "Exit status: 0, or 1 when the writer cannot name its location." },
	{ "keygen", "[--passphrase-file FILE] [--output DIR] [--force]", "create the key pair of the crypt filter", cmd_keygen, true, NULL },
	{ "file-setup", "", "allocate the image file of the file writer", cmd_file_setup, true, NULL },
	{ "bench", "[--size SIZE] [--chain CHAIN]...", "measure the chain's throughput against its baselines", torpor_bench_main, true, NULL },
	{ "reload", "", "make torpord load its configuration and plugins again", cmd_reload, false,
	  "As SIGHUP does; root and the members of [torpor] group only.\n\n"
	  "Exit status: 0 when torpord took the new configuration; 1 when it\n"
	  "refused it (it keeps the last good one) or no torpord answers." },
	{ "setup", "[--dry-run] [--yes] [--size SIZE]", "make 'systemctl hibernate' work on this machine", cmd_setup, true, NULL },
	{ "suspend-then-hibernate", "[--delay SECONDS] [--direct] [--force]", "suspend to RAM; hibernate if the RTC wakes it after the delay", cmd_suspend_then_hibernate, false,
	  "Woken before the delay: exit status 0, no image.  Woken by the alarm:\n"
	  "hibernates as 'torpor hibernate' does; when that fails it suspends to\n"
	  "RAM again, without an alarm, and exits with status 1." },
};

enum {
	OPT_PASSPHRASE_FILE = 0x100,
	OPT_DIRECT,
	OPT_TEST,
	OPT_FORCE,
	OPT_JSON,
	OPT_SOCKET,
	OPT_AFTER,
	OPT_STALE,
	OPT_WAIT_DEVICE,
	OPT_DELAY,
	OPT_KERNEL,
	OPT_LOCATION,
};

struct cli_option {
	const char *name;	/* --name */
	int id;			/* the short option's letter, or OPT_* */
	const char *arg;	/* the argument's name; NULL: takes none */
	const char *help;
	/* The commands it belongs to, separated by blanks (an error with any
	 * other); NULL: the program's, for every command. */
	const char *commands;
	bool verbosity;		/* the program's own, even before a command
				 * that parses its own options */
};

/* The options: getopt_long's tables, the pre-scan, the checks of which
 * command an option belongs to, and both kinds of help. */
static const struct cli_option cli_options[] = {
	{ "config", 'c', "FILE",
	  "configuration file (default " TORPOR_DEFAULT_CONFIG ")", NULL, false },
	{ "plugin-dir", 'p', "DIR",
	  "plugin directory (default " TORPOR_PLUGINDIR ")", NULL, false },
	{ "passphrase-file", OPT_PASSPHRASE_FILE, "FILE",
	  "read the passphrase from FILE", NULL, false },
	{ "socket", OPT_SOCKET, "PATH",
	  "torpord's socket (default " PROTOCOL_DEFAULT_SOCKET ")", NULL, false },
	{ "direct", OPT_DIRECT, NULL,
	  "run in this process, even when torpord answers",
	  "hibernate suspend-then-hibernate", false },
	{ "after", OPT_AFTER, "WHAT",
	  "what the machine does once the image is written, for this cycle: "
	  "poweroff, reboot, or suspend (suspend to both: the image stays as "
	  "a fallback if power is lost); default: [torpor] after",
	  "hibernate", false },
	{ "delay", OPT_DELAY, "SECONDS",
	  "how long to stay suspended first: seconds, or systemd's time "
	  "syntax (90min, 1h 30s), up to a year; 0 hibernates at once; "
	  "default: [torpor] hibernate_delay, else HibernateDelaySec= of "
	  "sleep.conf, else 2h",
	  "suspend-then-hibernate", false },
	{ "test", OPT_TEST, NULL,
	  "write the whole image through the chain, then discard it, thaw and"
	  " return instead of powering off (a test image is never resumed)",
	  "hibernate", false },
	{ "force", OPT_FORCE, NULL,
	  "go on when the initramfs check fails: its problems become "
	  "warnings, and the next boot may not resume the image",
	  "hibernate suspend-then-hibernate", false },
	{ "json", OPT_JSON, NULL,
	  "one JSON object instead of text (its keys: torpor(8))",
	  "status plugins", false },
	{ "stale", OPT_STALE, NULL,
	  "at boot, before swap: discard an image the initramfs did not "
	  "resume (never through torpord)",
	  "invalidate", false },
	{ "wait-device", OPT_WAIT_DEVICE, "SECONDS",
	  "with --stale: wait up to SECONDS (0 to 3600) for storage that is "
	  "not there yet",
	  "invalidate", false },
	{ "kernel", OPT_KERNEL, NULL,
	  "hand the location to the running kernel (/sys/power/resume_offset,"
	  " /sys/power/resume) instead of printing it",
	  "resume-args", false },
	{ "location", OPT_LOCATION, NULL,
	  "print the location's words even where the command line needs none "
	  "(torpor setup reads them)",
	  "resume-args", false },
	{ "verbose", 'v', NULL, "say more (repeat for debug)", NULL, true },
	{ "quiet", 'q', NULL,
	  "errors only: no progress, summary or notices", NULL, true },
	{ "help", 'h', NULL, "this help (COMMAND --help: the command's)", NULL, false },
	{ "version", 'V', NULL, "the version", NULL, false },
};

#define N_CLI_OPTIONS	(sizeof(cli_options) / sizeof(cli_options[0]))

static bool
has_short_name(const struct cli_option *o)
{
	return o->id < 0x100;
}

static bool
has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

/* The help's width beside the option: 80 columns in all. */
#define HELP_WIDTH	50

/* The options of command (NULL: the program's own). */
static void
usage_options(FILE *f, const char *command)
{
	char spec[64];
	size_t i;

	for (i = 0; i < N_CLI_OPTIONS; i++) {
		const struct cli_option *o = &cli_options[i];
		const char *h = o->help;

		if (command ? !o->commands || !has_word(o->commands, command) :
			      o->commands != NULL)
			continue;
		if (has_short_name(o))
			snprintf(spec, sizeof(spec), "-%c, --%s%s%s", o->id,
				 o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(spec, sizeof(spec), "    --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-26s ", spec);
		/* In lines of at most HELP_WIDTH, under each other; the
		 * program's own stay whole: their defaults are paths, which
		 * are read (and searched for) whole. */
		while (*h) {
			size_t n = strlen(h);

			if (n > HELP_WIDTH && o->commands) {
				n = HELP_WIDTH;
				while (n > 0 && h[n] != ' ')
					n--;
				if (n == 0)
					n = strcspn(h, " ");
			}
			fprintf(f, "%.*s\n", (int)n, h);
			h += n + strspn(h + n, " ");
			if (*h)
				fprintf(f, "  %-26s ", "");
		}
	}
}

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: torpor [OPTIONS] COMMAND [ARGS]\n\n"
		   "Userspace hibernation: snapshot memory through a chain of filter\n"
		   "plugins into a writer plugin, and power off.\n\nCommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %-28s %s\n", commands[i].name,
			commands[i].args, commands[i].help);
	fprintf(f, "\nOptions:\n");
	usage_options(f, NULL);
	fprintf(f, "\nEach command's options and exit status: torpor COMMAND --help.\n"
		   "Exit status: 0 success; for verify 2 when an image exists and is\n"
		   "refused; 1 any other error.\n");
}

/* torpor COMMAND --help. */
static void
command_usage(const struct command *cmd, FILE *f)
{
	fprintf(f, "Usage: torpor [OPTIONS] %s%s%s\n\n%c%s.\n\n",
		cmd->name, cmd->args[0] ? " " : "", cmd->args,
		toupper((unsigned char)cmd->help[0]), cmd->help + 1);
	fprintf(f, "Options:\n");
	usage_options(f, cmd->name);
	fprintf(f, "  (and the program's own: torpor --help)\n\n%s\n",
		cmd->more);
}

/* Map a negative errno from the core to an exit status. */
static int
exit_status(int r)
{
	if (r == EXIT_REFUSED)
		return EXIT_REFUSED;
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int
open_session(struct torpor_session *s, bool require_filters)
{
	int r = session_open(s, arg_config, arg_plugin_dir, require_filters);

	if (r < 0)
		session_close(s);
	return r;
}

/* -v: what the process holds when user space is frozen (it is in the
 * image), and the phase times up to the commit just before the power-off:
 * the process that prints them is gone once the machine is off, and the
 * header is already written by then. */
struct hibernate_times {
	double program_start;	/* exec to the cycle: loading, plugins */
	struct cycle_times cycle;
};

static void
say_phase(void *ctx, enum cycle_phase p, bool done)
{
	struct hibernate_times *t = ctx;

	if (p == CYCLE_PHASE_STARTUP && !done)
		t->program_start = proc_process_age();
	if (p == CYCLE_PHASE_FREEZE && !done)
		progress_print_footprint("hibernate: this process before the freeze");
	if (p == CYCLE_PHASE_POWEROFF && !done)
		cycle_print_times("hibernate", t->program_start, &t->cycle,
				  CYCLE_PHASE_POWEROFF);
}

/*
 * Through torpord when one answers: returns the exit status, or
 * CLIENT_NO_DAEMON to run the command here.  torpord has its own
 * configuration: a --config, --plugin-dir or --passphrase-file given
 * without --socket is this command's, so it runs directly.  Which way is
 * taken is said on stderr; for those options only with -v.
 *
 * A daemon that did not take the request (refused at its limits, its
 * socket full, the connection cut before any reply) started nothing:
 * root's hibernate then runs directly, as with no daemon, so that
 * hibernating never depends on a socket other users can crowd.  A cycle
 * the daemon runs for another client holds the snapshot device, which
 * the kernel lets one process open at a time: the direct one stops there.
 * Every other command says why and fails.
 */
static int
via_daemon(const struct client_request *rq)
{
	const char *path = arg_socket ? arg_socket : PROTOCOL_DEFAULT_SOCKET;
	char why[256] = "";
	int r;

	if (arg_direct) {
		log_notice("running directly (--direct)");
		return CLIENT_NO_DAEMON;
	}
	if (!arg_socket && (arg_config || arg_plugin_dir || arg_passphrase_file)) {
		/* The user chose this by giving the option; said at every
		 * run, it came before each error of such a command, which
		 * should stand alone.  Whether a torpord is bypassed is not
		 * asked: a connect would start a socket-activated one. */
		log_info("running directly: --config, --plugin-dir and --passphrase-file are for this command, not torpord");
		return CLIENT_NO_DAEMON;
	}
	r = client_run(path, rq, why, sizeof(why));
	if (r == CLIENT_NO_DAEMON)
		log_notice("no torpord answers on %s: running directly", path);
	if (r != CLIENT_NOT_TAKEN)
		return r;
	if (strcmp(rq->request, "hibernate") == 0 && geteuid() == 0) {
		log_warning("torpord on %s did not take the request: %s: running directly",
			    path, why);
		return CLIENT_NO_DAEMON;
	}
	log_error("torpord on %s did not take the request: %s", path, why);
	return EXIT_FAILURE;
}

/* Direct cycle: torpor's own view of the phases and the stream. */
struct direct_view {
	struct view v;
	struct hibernate_times times;
	double stream_t0;
	double phase_t0;
};

static void
direct_phase(void *ctx, enum cycle_phase p, bool done)
{
	struct direct_view *dv = ctx;
	double now = clock_now();

	if (!done) {
		dv->phase_t0 = now;
		if (p == CYCLE_PHASE_WRITE)
			dv->stream_t0 = now;
	}
	view_phase(&dv->v, cycle_phase_name(p), done,
		   (int64_t)((now - dv->phase_t0) * 1000));
	if (p == CYCLE_PHASE_SYNC && done)
		view_committed = 1;
	if (arg_verbose)
		say_phase(&dv->times, p, done);
}

static void
direct_progress(void *ctx, const struct stream_progress *p)
{
	struct direct_view *dv = ctx;
	struct progress_figures f;

	progress_figures(p, dv->stream_t0, clock_now(), &f);
	view_progress(&dv->v, "write", &f);
	/* -v: a line per tenth of the stream, as it happens (the VM suite's
	 * power cuts aim at them; a bar on a serial console reaches the other
	 * end only with its newline, at the end of the phase). */
	if (arg_verbose)
		progress_print(NULL, p);
}

static int
cmd_hibernate(int argc, char **argv)
{
	struct client_request rq = {
		.request = "hibernate", .test = arg_test, .after = arg_after,
		.force = arg_force,
		.s2h = arg_s2h,
	};
	struct direct_view dv;
	struct cycle_options o = {
		.test = arg_test,
		.phase = direct_phase, .phase_ctx = &dv,
		.progress = direct_progress, .progress_ctx = &dv,
		.cancel = &view_cancel,
		.times = &dv.times.cycle,
		.force = arg_force,
		.sleep_action = arg_s2h ? CYCLE_SLEEP_S2H_HIBERNATE : NULL,
	};
	uint64_t started = (uint64_t)time(NULL);
	struct torpor_session s;
	int r;

	r = via_daemon(&rq);
	if (r != CLIENT_NO_DAEMON)
		return r;
	view_init(&dv.v);
	if (arg_verbose)
		dv.v.tty = false;	/* lines, not a bar */
	r = open_session(&s, true);
	if (r < 0)
		return EXIT_FAILURE;
	if (arg_after)
		s.config->after = (enum config_after)config_after_from_name(arg_after);
	r = session_arrange_hibernate(&s);
	if (r >= 0 && !registry_can_hibernate(&s.reg))
		r = log_error_errno(-EPERM, "hibernation is disabled: %s",
				    s.reg.disabled_reason);
	view_catch_signals();
	if (r >= 0) {
		r = cycle_hibernate(&s, &o);
		last_cycle_record(&s, o.times, o.test, r, started);
		/* Back (resumed or --test): this process's own phases. */
		if (arg_verbose)
			cycle_print_times(r < 0 ? "hibernate (aborted)" :
					  "hibernate (this process)",
					  dv.times.program_start,
					  &dv.times.cycle, CYCLE_N_PHASES);
	}
	if (r == -ECANCELED)
		log_notice("cancelled: processes thawed, nothing kept");
	if ((r == -EACCES || r == -EPERM) && geteuid() != 0)
		log_error("hibernate: refused to uid %u: the snapshot device and "
			  "the image's device are root's (sudo torpor hibernate; "
			  "or start torpord, systemctl start torpord.socket, and "
			  "join the group its group= names)", (unsigned)geteuid());
	session_close(&s);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int
run_resume(enum resume_mode mode)
{
	struct resume_options o = { .mode = mode };
	struct torpor_session s;
	int r;

	if (arg_passphrase_file)
		passphrase_set_file(arg_passphrase_file);
	r = open_session(&s, false);
	if (r < 0)
		return EXIT_FAILURE;
	r = session_arrange_writer_only(&s);
	if (r >= 0)
		r = resume_run(&s, &o);
	if (mode == RESUME_VERIFY)
		last_cycle_record_verify_result(&s, &o, r);
	session_close(&s);
	return exit_status(r);
}

static int
cmd_verify(int argc, char **argv)
{
	struct client_request rq = { .request = "verify" };
	int r = via_daemon(&rq);

	return r != CLIENT_NO_DAEMON ? r : run_resume(RESUME_VERIFY);
}

static int
cmd_invalidate(int argc, char **argv)
{
	struct client_request rq = { .request = "invalidate" };
	struct torpor_session s;
	int r;

	/* At boot, before swap: never through the daemon, whose socket
	 * activation would wait for this very unit. */
	if (arg_stale)
		return torpor_invalidate_stale(arg_config, arg_plugin_dir,
					       arg_wait_device);
	r = via_daemon(&rq);
	if (r != CLIENT_NO_DAEMON)
		return r;
	r = open_session(&s, false);
	if (r < 0)
		return EXIT_FAILURE;
	r = session_arrange_writer_only(&s);
	if (r >= 0)
		r = session_invalidate(&s);
	if (r >= 0 && !log_quiet())
		printf("invalidate: no resumable image remains on writer '%s'\n",
		       s.reg.active_writer->ops.name);
	session_close(&s);
	return exit_status(r);
}

static int
cmd_resume_args(int argc, char **argv)
{
	struct torpor_session s;
	struct plugin_entry *w;
	char words[1024];
	int r;

	r = open_session(&s, false);
	if (r < 0)
		return EXIT_FAILURE;
	r = session_arrange_writer_only(&s);
	if (r >= 0)
		r = registry_initialise(&s.reg, 0);
	if (r >= 0) {
		w = s.reg.active_writer;
		r = plugin_resume_args(w, words, sizeof(words));
		if (r >= 0 && arg_kernel)
			r = kernel_location_apply(words);
		else if (r >= 0 && (arg_location ||
				    kernel_location_words_needed(words)))
			printf("%s\n", words);
		else if (r >= 0)
			log_notice("resume-args: no kernel command line word is needed: torpor-resume finds the image (%s) through the configuration in the initramfs; a resume= word for it would make the initramfs wait for a swap signature the image replaces",
				   words);
		else if (r == -EOPNOTSUPP)
			log_error("writer '%s' cannot name its resume location",
				  w->ops.name);
		registry_cleanup(&s.reg, 0);
	}
	session_close(&s);
	return exit_status(r);
}

static int
cmd_plugins(int argc, char **argv)
{
	struct client_request rq = { .request = "plugins", .json = arg_json };
	struct torpor_session s;
	int r;

	r = via_daemon(&rq);
	if (r != CLIENT_NO_DAEMON)
		return r;
	/* Listing works with a broken configuration's plugins too: nothing
	 * is required, broken files are warnings. */
	r = session_open_config(&s, arg_config);
	if (r < 0) {
		session_close(&s);
		return EXIT_FAILURE;
	}
	s.plugin_dir = arg_plugin_dir ? arg_plugin_dir :
		s.config->plugin_dir ? s.config->plugin_dir : loader_default_dir();
	r = loader_load_all(&s.reg, s.plugin_dir, NULL, 0, host_get());
	s.plugins_loaded = true;
	plugins_report(&s, stdout, arg_json);
	session_close(&s);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int
cmd_config(int argc, char **argv)
{
	struct torpor_session s;
	int r;

	r = open_session(&s, false);
	if (r < 0)
		return EXIT_FAILURE;
	config_dump(s.config, &s.reg, stdout);
	session_close(&s);
	return EXIT_SUCCESS;
}

/* The whole report is status_report()'s (the daemon's too); a
 * configuration that does not load is part of it, with the reason its
 * loading gave (muted here: the report says it). */
static int
cmd_status(int argc, char **argv)
{
	struct client_request rq = { .request = "status", .json = arg_json };
	struct torpor_session s;
	char why[512];
	int r;

	r = via_daemon(&rq);
	if (r != CLIENT_NO_DAEMON)
		return r;
	log_capture(why, sizeof(why), true);
	session_open(&s, arg_config, arg_plugin_dir, false);
	log_capture(NULL, 0, false);
	r = status_report_opened(&s, arg_config, why, stdout, arg_json,
				 &(struct status_daemon){ .socket = arg_socket });
	session_close(&s);
	return r < 0 ? EXIT_FAILURE : r;
}

static int
cmd_reload(int argc, char **argv)
{
	struct client_request rq = { .request = "reload" };
	const char *path = arg_socket ? arg_socket : PROTOCOL_DEFAULT_SOCKET;
	char why[256] = "";
	int r = client_run(path, &rq, why, sizeof(why));

	if (r == CLIENT_NOT_TAKEN)
		log_error("torpord on %s did not take the request: %s", path, why);
	else if (r == CLIENT_NO_DAEMON)
		log_error("no torpord answers on %s: nothing to reload", path);
	else
		return r;
	return EXIT_FAILURE;
}

static int
cmd_keygen(int argc, char **argv)
{
	return torpor_keygen_main(argc, argv);
}

static int
cmd_file_setup(int argc, char **argv)
{
	return torpor_file_setup_main(argc, argv);
}

static int
cmd_setup(int argc, char **argv)
{
	return torpor_setup_main(argc, argv);
}

/* Its hibernation step: `torpor hibernate` with the same options. */
static int
s2h_hibernate(void)
{
	arg_s2h = true;
	return cmd_hibernate(0, NULL);
}

static int
cmd_suspend_then_hibernate(int argc, char **argv)
{
	struct s2h_args a = {
		.delay = arg_delay, .config = arg_config,
		.plugin_dir = arg_plugin_dir, .hibernate = s2h_hibernate,
	};

	return torpor_suspend_then_hibernate(&a);
}

static const struct command *
find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/*
 * The option a word names on its own ("-c", "--config"), or NULL; in
 * "-cX" and "--config=X" the argument is in the same word.
 */
static const struct cli_option *
option_named(const char *word)
{
	size_t i;

	for (i = 0; i < N_CLI_OPTIONS; i++) {
		const struct cli_option *o = &cli_options[i];

		if ((word[0] == '-' && word[1] == '-' &&
		     strcmp(word + 2, o->name) == 0) ||
		    (has_short_name(o) && word[0] == '-' &&
		     word[1] == o->id && word[2] == '\0'))
			return o;
	}
	return NULL;
}

/*
 * Act on one option.  Returns -1 to go on, or the exit status when the
 * option is all there is to do (--help, --version, a wrong option).
 */
static int
apply_option(int id, const char *arg)
{
	switch (id) {
	case 'c':
		arg_config = arg;
		break;
	case 'p':
		arg_plugin_dir = arg;
		break;
	case OPT_PASSPHRASE_FILE:
		arg_passphrase_file = arg;
		break;
	case OPT_DIRECT:
		arg_direct = true;
		break;
	case OPT_TEST:
		arg_test = true;
		break;
	case OPT_FORCE:
		arg_force = true;
		break;
	case OPT_JSON:
		arg_json = true;
		break;
	case OPT_SOCKET:
		arg_socket = arg;
		break;
	case OPT_STALE:
		arg_stale = true;
		break;
	case OPT_KERNEL:
		arg_kernel = true;
		break;
	case OPT_LOCATION:
		arg_location = true;
		break;
	case OPT_WAIT_DEVICE:
		if (session_parse_wait(arg, &arg_wait_device) < 0)
			return EXIT_FAILURE;
		break;
	case OPT_DELAY:
		arg_delay = arg;
		break;
	case OPT_AFTER:
		if (config_after_from_name(arg) < 0) {
			log_error("--after '%s': expected poweroff, reboot or suspend", arg);
			return EXIT_FAILURE;
		}
		arg_after = arg;
		break;
	case 'v':
		arg_verbose = true;
		log_set_max_level(log_get_max_level() + 1);
		break;
	case 'q':
		log_set_max_level(TORPOR_LOG_ERR);
		break;
	case 'h':
		arg_help = true;	/* the command's, when one is named */
		break;
	case 'V':
		printf("torpor %s\n", TORPOR_VERSION);
		return EXIT_SUCCESS;
	default:
		/* cli_option_error() said which word is wrong. */
		return EXIT_FAILURE;
	}
	return -1;
}

/*
 * Run a command that parses its own options with argv from its word on,
 * followed by the options given before it (torpor --config X keygen).
 * Verbosity is the program's; the rest is the command's to judge.
 */
static int
run_own_options(const struct command *cmd, int argc, char **argv, int at)
{
	char **v = calloc((size_t)argc + 1, sizeof(*v));
	int n = 0, j, r;

	if (!v)
		return EXIT_FAILURE;
	v[n++] = argv[at];
	for (j = 1; j < at; j++) {
		const struct cli_option *o = option_named(argv[j]);

		if (o && o->verbosity)
			apply_option(o->id, NULL);
		else
			v[n++] = argv[j];
	}
	for (j = at + 1; j < argc; j++)
		v[n++] = argv[j];
	r = cmd->run(n, v);
	free(v);
	return r;
}

/*
 * The command word, found past the global options: its index, or argc
 * when there is none.
 */
static int
find_command_word(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const struct cli_option *o;

		if (argv[i][0] != '-')
			return i;
		o = option_named(argv[i]);
		if (o && o->arg)
			i++;
	}
	return argc;
}

/* getopt_long's two tables, from cli_options[]. */
static void
build_getopt_tables(struct option *longs, char *shorts)
{
	size_t i, n = 0;

	shorts[n++] = ':';	/* a missing argument is ':' */
	for (i = 0; i < N_CLI_OPTIONS; i++) {
		const struct cli_option *o = &cli_options[i];

		longs[i] = (struct option){
			.name = o->name,
			.has_arg = o->arg ? required_argument : no_argument,
			.val = o->id,
		};
		if (has_short_name(o)) {
			shorts[n++] = (char)o->id;
			if (o->arg)
				shorts[n++] = ':';
		}
	}
	longs[i] = (struct option){ 0 };
	shorts[n] = '\0';
}

/* "'hibernate' and 'suspend-then-hibernate'": the commands o belongs to,
 * into buf. */
static const char *
owners(const struct cli_option *o, char *buf, size_t size)
{
	const char *p = o->commands;
	size_t used = 0;

	buf[0] = '\0';
	while (*p && used < size) {
		size_t n = strcspn(p, " ");
		int k = snprintf(buf + used, size - used, "%s'%.*s'",
				 used ? " and " : "", (int)n, p);

		used = k < 0 ? size : used + (size_t)k;
		p += n + strspn(p + n, " ");
	}
	return buf;
}

/* The command to run, after the options (given[]: which of cli_options[]
 * were); NULL when wrong (logged). */
static const struct command *
command_to_run(int argc, char **argv, const bool *given)
{
	const struct command *cmd;
	char words[128];
	size_t i;

	if (optind >= argc) {
		usage(stderr);
		return NULL;
	}
	cmd = find_command(argv[optind]);
	if (!cmd) {
		log_error("unknown command '%s'; try 'torpor --help'", argv[optind]);
		return NULL;
	}
	if (optind + 1 < argc) {
		log_error("%s: unexpected argument '%s'", cmd->name, argv[optind + 1]);
		return NULL;
	}
	for (i = 0; i < N_CLI_OPTIONS; i++) {
		const struct cli_option *o = &cli_options[i];

		if (given[i] && o->commands && !has_word(o->commands, cmd->name)) {
			log_error("%s: --%s belongs to %s", cmd->name, o->name,
				  owners(o, words, sizeof(words)));
			return NULL;
		}
	}
	if (arg_wait_device && !arg_stale) {
		log_error("invalidate: --wait-device goes with --stale");
		return NULL;
	}
	return cmd;
}

/* --help: the program's, or the command's when one is named. */
static int
help(int argc, char **argv)
{
	const struct command *cmd;

	if (optind >= argc) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	cmd = find_command(argv[optind]);
	if (!cmd) {
		log_error("unknown command '%s'; try 'torpor --help'", argv[optind]);
		return EXIT_FAILURE;
	}
	command_usage(cmd, stdout);
	return EXIT_SUCCESS;
}

/* Where id is in cli_options[]. */
static size_t
option_index(int id)
{
	size_t i;

	for (i = 0; i < N_CLI_OPTIONS && cli_options[i].id != id; i++)
		;
	return i;
}

int
main(int argc, char **argv)
{
	struct option longs[N_CLI_OPTIONS + 1];
	char shorts[2 * N_CLI_OPTIONS + 2];
	bool given[N_CLI_OPTIONS + 1] = { false };
	const struct command *cmd;
	int c, at, r;

	log_set_program("torpor");
	at = find_command_word(argc, argv);
	cmd = at < argc ? find_command(argv[at]) : NULL;
	if (cmd && cmd->own_options)
		return run_own_options(cmd, argc, argv, at);

	build_getopt_tables(longs, shorts);
	cli_option_begin();
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		if (c == '?' || c == ':')
			return cli_option_error(NULL, c, argv), EXIT_FAILURE;
		given[option_index(c)] = true;
		r = apply_option(c, optarg);
		if (r >= 0)
			return r;
	}
	if (arg_help)
		return help(argc, argv);
	cmd = command_to_run(argc, argv, given);
	if (!cmd)
		return EXIT_FAILURE;
	return cmd->run(argc - optind, argv + optind);
}
