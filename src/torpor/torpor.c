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
#include <unistd.h>

#include "torpor-build.h"

#include "config.h"
#include "cycle.h"
#include "host.h"
#include "loader.h"
#include "log.h"
#include "names.h"
#include "passphrase.h"
#include "plugin-call.h"
#include "resume.h"
#include "session.h"

int torpor_keygen_main(int argc, char **argv);
int torpor_file_setup_main(int argc, char **argv);

static const char *arg_config;
static const char *arg_plugin_dir;
static const char *arg_passphrase_file;
static bool arg_direct;
static bool arg_test;
static const char *arg_after;	/* NULL: the configuration's after = */
static bool arg_json;
static bool arg_verbose;

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
static int cmd_bench(int argc, char **argv);

static const struct command commands[] = {
	{ "hibernate", "[--direct] [--test] [--after WHEN]", "write the memory image and power off", cmd_hibernate, false },
	{ "status", "[--json]", "show whether hibernation is possible and where the image goes", cmd_status, false },
	{ "plugins", "[--json]", "list the plugins found in the plugin directory", cmd_plugins, false },
	{ "config", "", "print the effective configuration", cmd_config, false },
	{ "verify", "[--passphrase-file FILE]", "read and check a stored image through the whole chain", cmd_verify, false },
	{ "invalidate", "", "discard a stored image so that it is never resumed", cmd_invalidate, false },
	{ "resume-args", "", "print the kernel command line words that locate the image", cmd_resume_args, false },
	{ "keygen", "[--passphrase-file FILE] [--output DIR] [--force]", "create the key pair of the crypt filter", cmd_keygen, true },
	{ "file-setup", "", "allocate the image file of the file writer", cmd_file_setup, true },
	{ "bench", "[...]", "measure the chain's throughput against its baselines", cmd_bench, false },
};

enum {
	OPT_PASSPHRASE_FILE = 0x100,
	OPT_DIRECT,
	OPT_TEST,
	OPT_JSON,
	OPT_AFTER,
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
	{ "direct", OPT_DIRECT, NULL, NULL, false },
	{ "test", OPT_TEST, NULL, NULL, false },
	{ "json", OPT_JSON, NULL, NULL, false },
	{ "after", OPT_AFTER, "WHEN", NULL, false },
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

static int
not_implemented(const char *what)
{
	log_error("'%s' is not implemented yet", what);
	return EXIT_FAILURE;
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

/*
 * --after WHEN overrides [torpor] after = for this one cycle: the systemd
 * units of hybrid-sleep say "suspend" whatever the file says.
 */
static int
apply_after(struct torpor_config *c)
{
	static const char *const names[] = {
		[CONFIG_AFTER_POWEROFF] = "poweroff",
		[CONFIG_AFTER_REBOOT] = "reboot",
		[CONFIG_AFTER_SUSPEND] = "suspend",
	};
	size_t i;

	if (!arg_after)
		return 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(arg_after, names[i]) == 0) {
			c->after = (enum config_after)i;
			return 0;
		}
	return log_error_errno(-EINVAL, "--after '%s': expected poweroff, "
			       "reboot or suspend", arg_after);
}

static int
cmd_hibernate(int argc, char **argv)
{
	struct cycle_options o = {
		.test = arg_test,
		/* -v: a line per tenth of the stream on stderr. */
		.progress = arg_verbose ? session_print_progress : NULL,
	};
	struct torpor_session s;
	int r;

	if (!arg_direct)
		log_info("no torpord daemon in this version: running the cycle directly");
	r = open_session(&s, true);
	if (r < 0)
		return EXIT_FAILURE;
	r = apply_after(s.config);
	if (r >= 0)
		r = session_arrange_hibernate(&s);
	if (r >= 0 && !registry_can_hibernate(&s.reg))
		r = log_error_errno(-EPERM, "hibernation is disabled: %s",
				    s.reg.disabled_reason);
	if (r >= 0)
		r = cycle_hibernate(&s, &o);
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
	session_close(&s);
	return exit_status(r);
}

static int
cmd_verify(int argc, char **argv)
{
	return run_resume(RESUME_VERIFY);
}

static int
cmd_invalidate(int argc, char **argv)
{
	struct torpor_session s;
	int r;

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
		if (r >= 0)
			printf("%s\n", words);
		else if (r == -EOPNOTSUPP)
			log_error("writer '%s' cannot name its resume location",
				  w->ops.name);
		registry_cleanup(&s.reg, 0);
	}
	session_close(&s);
	return exit_status(r);
}

static void
json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Bound of what plugins say about themselves (seed 009's debug buffer). */
#define DEBUG_INFO_MAX 16384

/* Every plugin's own status, through the registry, into a bounded buffer
 * (the caller frees it); NULL when there is no memory. */
static char *
plugins_debug_info(const struct registry *reg)
{
	char *info = malloc(DEBUG_INFO_MAX);

	if (info)
		registry_debug_info(reg, info, DEBUG_INFO_MAX);
	return info;
}

static void
print_plugin_json(const struct plugin_entry *e, bool first)
{
	printf("%s\n  {\"name\": ", first ? "" : ",");
	json_string(stdout, e->ops.name);
	printf(", \"type\": \"%s\", \"description\": ",
	       plugin_type_name(e->ops.type));
	json_string(stdout, e->ops.description);
	printf(", \"abi_version\": %u, \"built_for\": ", e->ops.abi_version);
	json_string(stdout, e->ops.built_for);
	printf(", \"path\": ");
	json_string(stdout, e->path);
	printf("}");
}

static void
print_plugin_line(const struct plugin_entry *e)
{
	printf("%-10s %-7s abi %u  %s\n", e->ops.name,
	       plugin_type_name(e->ops.type), e->ops.abi_version,
	       e->ops.description ? e->ops.description : "");
	if (e->ops.built_for)
		printf("           built for torpor %s\n", e->ops.built_for);
}

static int
cmd_plugins(int argc, char **argv)
{
	struct torpor_session s;
	struct plugin_entry *e;
	char *info;
	int r;

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
	info = plugins_debug_info(&s.reg);
	if (arg_json)
		printf("{\"plugin_dir\": ");
	if (arg_json) {
		json_string(stdout, s.plugin_dir);
		printf(", \"plugins\": [");
	}
	for (e = s.reg.plugins_head; e; e = e->next_plugin) {
		if (arg_json)
			print_plugin_json(e, e == s.reg.plugins_head);
		else
			print_plugin_line(e);
	}
	if (arg_json) {
		printf("%s], \"debug_info\": ", s.reg.plugins_head ? "\n" : "");
		json_string(stdout, info ? info : "");
		printf("}\n");
	} else if (!s.reg.plugins_head) {
		printf("no plugins found in %s\n", s.plugin_dir);
	} else if (info && info[0]) {
		printf("\nstatus:\n%s", info);
	}
	free(info);
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

static int
cmd_status(int argc, char **argv)
{
	struct torpor_session s;
	struct plugin_entry *w;
	const char *reason = NULL;
	char *info = NULL;
	int found = -1, r;
	size_t i;

	r = open_session(&s, false);
	if (r < 0)
		return EXIT_FAILURE;
	r = session_arrange_hibernate(&s);
	if (r < 0)
		reason = "the configuration names a plugin that cannot be used";
	else if (!registry_can_hibernate(&s.reg))
		reason = s.reg.disabled_reason;
	w = s.reg.active_writer;
	if (w && registry_initialise(&s.reg, 1) >= 0) {
		found = plugin_find(w);
		info = plugins_debug_info(&s.reg);
		registry_cleanup(&s.reg, 1);
	}
	if (arg_json) {
		printf("{\"config\": ");
		json_string(stdout, s.config->path);
		printf(", \"snapshot\": ");
		json_string(stdout, s.config->snapshot);
		printf(", \"writer\": ");
		json_string(stdout, s.config->writer);
		printf(", \"filters\": [");
		for (i = 0; i < s.config->n_filters; i++) {
			printf("%s", i ? ", " : "");
			json_string(stdout, s.config->filters[i]);
		}
		printf("], \"can_hibernate\": %s, \"disabled_reason\": ",
		       reason ? "false" : "true");
		json_string(stdout, reason ? reason : "");
		printf(", \"image_present\": %s, \"debug_info\": ",
		       found > 0 ? "true" : found == 0 ? "false" : "null");
		json_string(stdout, info ? info : "");
		printf("}\n");
	} else {
		printf("config:     %s\n", s.config->path ? s.config->path : "(defaults)");
		printf("snapshot:   %s\n", s.config->snapshot);
		printf("writer:     %s\n", s.config->writer ? s.config->writer : "(none)");
		printf("filters:   ");
		for (i = 0; i < s.config->n_filters; i++)
			printf(" %s", s.config->filters[i]);
		printf("%s\n", s.config->n_filters ? "" : " (none)");
		printf("hibernate:  %s%s\n", reason ? "disabled: " : "possible",
		       reason ? reason : "");
		printf("image:      %s\n", found > 0 ? "a resumable image is stored" :
		       found == 0 ? "none" : "unknown (the writer cannot look)");
		if (info && info[0])
			printf("plugins:\n%s", info);
	}
	free(info);
	session_close(&s);
	return reason ? EXIT_FAILURE : EXIT_SUCCESS;
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
cmd_bench(int argc, char **argv)
{
	return not_implemented("torpor bench");
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
	case OPT_JSON:
		arg_json = true;
		break;
	case OPT_AFTER:
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
	if ((arg_direct || arg_test || arg_after) && cmd->run != cmd_hibernate) {
		log_error("%s: --direct, --test and --after belong to 'hibernate'",
			  cmd->name);
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
