/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor: the s2disk-style command line.  The words of the command line live
 * in one table (commands[] below); scripts, units and the initramfs hooks
 * depend on them.
 */
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
#include "names.h"
#include "passphrase.h"
#include "proc.h"
#include "protocol.h"
#include "plugin-call.h"
#include "progress.h"
#include "resume.h"
#include "session.h"
#include "snapshot.h"
#include "status.h"

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
static unsigned arg_wait_device;

struct command {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
	bool own_options;	/* parses its own argv (after the word) */
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
	{ "hibernate", "[--direct] [--test] [--force] [--after WHAT]", "write the memory image and power off", cmd_hibernate, false },
	{ "status", "[--json]", "show whether hibernation is possible and where the image goes", cmd_status, false },
	{ "plugins", "[--json]", "list the plugins found in the plugin directory", cmd_plugins, false },
	{ "config", "", "print the effective configuration", cmd_config, false },
	{ "verify", "[--passphrase-file FILE]", "read and check a stored image through the whole chain", cmd_verify, false },
	{ "invalidate", "[--stale [--wait-device SECONDS]]", "discard a stored image so that it is never resumed", cmd_invalidate, false },
	{ "resume-args", "[--kernel]", "print the kernel command line words that locate the image (--kernel: hand the location to the running kernel, /sys/power/resume)", cmd_resume_args, false },
	{ "keygen", "[--passphrase-file FILE] [--output DIR] [--force]", "create the key pair of the crypt filter", cmd_keygen, true },
	{ "file-setup", "", "allocate the image file of the file writer", cmd_file_setup, true },
	{ "bench", "[--size SIZE] [--chain CHAIN]...", "measure the chain's throughput against its baselines", torpor_bench_main, true },
	{ "reload", "", "make torpord load its configuration and plugins again", cmd_reload, false },
	{ "setup", "[--dry-run] [--yes] [--size SIZE]", "make 'systemctl hibernate' work on this machine", cmd_setup, true },
	{ "suspend-then-hibernate", "[--delay SECONDS] [--direct] [--force]", "suspend to RAM; hibernate if the RTC wakes it after the delay", cmd_suspend_then_hibernate, false },
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
};

struct cli_option {
	const char *name;	/* --name */
	int id;			/* the short option's letter, or OPT_* */
	const char *arg;	/* the argument's name; NULL: takes none */
	const char *help;	/* NULL: shown with its command instead */
	bool verbosity;		/* the program's own, even before a command
				 * that parses its own options */
};

/* The global options: getopt_long's tables, the pre-scan and the usage. */
static const struct cli_option cli_options[] = {
	{ "config", 'c', "FILE",
	  "configuration file (default " TORPOR_DEFAULT_CONFIG ")", false },
	{ "plugin-dir", 'p', "DIR",
	  "plugin directory (default " TORPOR_PLUGINDIR ")", false },
	{ "passphrase-file", OPT_PASSPHRASE_FILE, "FILE",
	  "read the passphrase from FILE", false },
	{ "socket", OPT_SOCKET, "PATH",
	  "torpord's socket (default " PROTOCOL_DEFAULT_SOCKET ")", false },
	{ "direct", OPT_DIRECT, NULL, NULL, false },
	{ "after", OPT_AFTER, "WHAT", NULL, false },
	{ "delay", OPT_DELAY, "SECONDS", NULL, false },
	{ "test", OPT_TEST, NULL, NULL, false },
	{ "force", OPT_FORCE, NULL, NULL, false },
	{ "json", OPT_JSON, NULL, NULL, false },
	{ "stale", OPT_STALE, NULL, NULL, false },
	{ "wait-device", OPT_WAIT_DEVICE, "SECONDS", NULL, false },
	{ "kernel", OPT_KERNEL, NULL, NULL, false },
	{ "verbose", 'v', NULL, "say more (repeat for debug)", true },
	{ "quiet", 'q', NULL, "errors only", true },
	{ "help", 'h', NULL, "this help", false },
	{ "version", 'V', NULL, "the version", false },
};

#define N_CLI_OPTIONS	(sizeof(cli_options) / sizeof(cli_options[0]))

static bool
has_short_name(const struct cli_option *o)
{
	return o->id < 0x100;
}

static void
usage_options(FILE *f)
{
	char spec[64];
	size_t i;

	for (i = 0; i < N_CLI_OPTIONS; i++) {
		const struct cli_option *o = &cli_options[i];

		if (!o->help)
			continue;
		if (has_short_name(o))
			snprintf(spec, sizeof(spec), "-%c, --%s%s%s", o->id,
				 o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(spec, sizeof(spec), "    --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-26s %s\n", spec, o->help);
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
	usage_options(f);
	fprintf(f, "\nExit status: 0 success; for verify 2 when an image exists and is\n"
		   "refused; 1 any other error.\n");
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
	if (r >= 0)
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
		else if (r >= 0)
			printf("%s\n", words);
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
 * configuration that does not load is part of it. */
static int
cmd_status(int argc, char **argv)
{
	struct client_request rq = { .request = "status", .json = arg_json };
	struct torpor_session s;
	int r;

	r = via_daemon(&rq);
	if (r != CLIENT_NO_DAEMON)
		return r;
	session_open(&s, arg_config, arg_plugin_dir, false);
	r = status_report(&s, stdout, arg_json,
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
		usage(stdout);
		return EXIT_SUCCESS;
	case 'V':
		printf("torpor %s\n", TORPOR_VERSION);
		return EXIT_SUCCESS;
	default:
		/* getopt said which option is wrong. */
		fprintf(stderr, "Try 'torpor --help'.\n");
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

/* The command to run, after the options; NULL when wrong (logged). */
static const struct command *
command_to_run(int argc, char **argv)
{
	const struct command *cmd;

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
	if ((arg_test || arg_after) && cmd->run != cmd_hibernate) {
		log_error("%s: --test and --after belong to 'hibernate'", cmd->name);
		return NULL;
	}
	if ((arg_direct || arg_force) && cmd->run != cmd_hibernate &&
	    cmd->run != cmd_suspend_then_hibernate) {
		log_error("%s: --direct and --force belong to 'hibernate' and 'suspend-then-hibernate'", cmd->name);
		return NULL;
	}
	if (arg_delay && cmd->run != cmd_suspend_then_hibernate) {
		log_error("%s: --delay belongs to 'suspend-then-hibernate'", cmd->name);
		return NULL;
	}
	if ((arg_stale || arg_wait_device) && cmd->run != cmd_invalidate) {
		log_error("%s: --stale and --wait-device belong to 'invalidate'", cmd->name);
		return NULL;
	}
	if (arg_kernel && cmd->run != cmd_resume_args) {
		log_error("%s: --kernel belongs to 'resume-args'", cmd->name);
		return NULL;
	}
	if (arg_wait_device && !arg_stale) {
		log_error("invalidate: --wait-device goes with --stale");
		return NULL;
	}
	return cmd;
}

int
main(int argc, char **argv)
{
	struct option longs[N_CLI_OPTIONS + 1];
	char shorts[2 * N_CLI_OPTIONS + 1];
	const struct command *cmd;
	int c, at, r;

	log_set_program("torpor");
	at = find_command_word(argc, argv);
	cmd = at < argc ? find_command(argv[at]) : NULL;
	if (cmd && cmd->own_options)
		return run_own_options(cmd, argc, argv, at);

	build_getopt_tables(longs, shorts);
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		r = apply_option(c, optarg);
		if (r >= 0)
			return r;
	}
	cmd = command_to_run(argc, argv);
	if (!cmd)
		return EXIT_FAILURE;
	return cmd->run(argc - optind, argv + optind);
}
