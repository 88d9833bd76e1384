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
#include "passphrase.h"
#include "resume.h"
#include "session.h"

int torpor_keygen_main(int argc, char **argv);
int torpor_file_setup_main(int argc, char **argv);

static const char *arg_config;
static const char *arg_plugin_dir;
static const char *arg_passphrase_file;
static bool arg_direct;
static bool arg_test;
static bool arg_json;

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
	{ "hibernate", "[--direct] [--test]", "write the memory image and power off", cmd_hibernate, false },
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
	fprintf(f, "\nOptions:\n"
		   "  -c, --config FILE          configuration file (default %s)\n"
		   "  -p, --plugin-dir DIR       plugin directory (default %s)\n"
		   "      --passphrase-file FILE read the passphrase from FILE\n"
		   "  -v, --verbose              say more (repeat for debug)\n"
		   "  -q, --quiet                errors only\n"
		   "  -h, --help                 this help\n"
		   "  -V, --version              the version\n\n"
		   "Exit status: 0 success; for verify 2 when an image exists and is\n"
		   "refused; 1 any other error.\n",
		TORPOR_DEFAULT_CONFIG, TORPOR_PLUGINDIR);
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

static int
cmd_hibernate(int argc, char **argv)
{
	struct cycle_options o = { .test = arg_test };
	struct torpor_session s;
	int r;

	if (!arg_direct)
		log_info("no torpord daemon in this version: running the cycle directly");
	r = open_session(&s, true);
	if (r < 0)
		return EXIT_FAILURE;
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
		if (!w->ops.resume_args)
			r = log_error_errno(-EOPNOTSUPP, "writer '%s' cannot name its resume location",
					    w->ops.name);
		else
			r = w->ops.resume_args(words, sizeof(words));
		if (r >= 0)
			printf("%s\n", words);
		else if (r != -EOPNOTSUPP)
			log_error_errno(r, "writer '%s' could not name its resume location: %m",
					w->ops.name);
		registry_cleanup(&s.reg, 0);
	}
	session_close(&s);
	return exit_status(r);
}

static const char *
type_name(enum torpor_plugin_type t)
{
	switch (t) {
	case TORPOR_PLUGIN_FILTER:
		return "filter";
	case TORPOR_PLUGIN_WRITER:
		return "writer";
	case TORPOR_PLUGIN_MISC:
		return "misc";
	}
	return "?";
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

static int
cmd_plugins(int argc, char **argv)
{
	struct torpor_session s;
	struct plugin_entry *e;
	bool first = true;
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
	if (arg_json)
		printf("[");
	for (e = s.reg.plugins_head; e; e = e->next_plugin) {
		char info[512] = "";

		if (e->ops.print_debug_info)
			e->ops.print_debug_info(info, sizeof(info));
		if (arg_json) {
			printf("%s\n  {\"name\": ", first ? "" : ",");
			json_string(stdout, e->ops.name);
			printf(", \"type\": \"%s\", \"description\": ", type_name(e->ops.type));
			json_string(stdout, e->ops.description);
			printf(", \"abi_version\": %u, \"path\": ", e->ops.abi_version);
			json_string(stdout, e->path);
			printf(", \"debug_info\": ");
			json_string(stdout, info);
			printf("}");
		} else {
			printf("%-10s %-7s abi %u  %s\n", e->ops.name,
			       type_name(e->ops.type), e->ops.abi_version,
			       e->ops.description ? e->ops.description : "");
			if (info[0])
				printf("           %s\n", info);
		}
		first = false;
	}
	if (arg_json)
		printf("%s]\n", first ? "" : "\n");
	else if (first)
		printf("no plugins found in %s\n", s.plugin_dir);
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
		found = w->ops.find();
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
		printf(", \"image_present\": %s}\n",
		       found > 0 ? "true" : found == 0 ? "false" : "null");
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
	}
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

int
main(int argc, char **argv)
{
	enum { OPT_PASSPHRASE_FILE = 0x100, OPT_DIRECT, OPT_TEST, OPT_JSON };
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "plugin-dir", required_argument, NULL, 'p' },
		{ "passphrase-file", required_argument, NULL, OPT_PASSPHRASE_FILE },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ "test", no_argument, NULL, OPT_TEST },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *cmd = NULL;
	int c, i;

	log_set_program("torpor");
	/* Commands that parse their own options get argv from their word,
	 * followed by the options given before it (torpor --config X keygen). */
	for (i = 1; i < argc; i++) {
		if (argv[i][0] != '-') {
			cmd = find_command(argv[i]);
			if (cmd && cmd->own_options) {
				char **v = calloc((size_t)argc + 1, sizeof(*v));
				int n = 0, j;

				if (!v)
					return EXIT_FAILURE;
				v[n++] = argv[i];
				for (j = 1; j < i; j++) {
					/* Verbosity is the program's; the
					 * rest is the command's to judge. */
					if (strcmp(argv[j], "-v") == 0 ||
					    strcmp(argv[j], "--verbose") == 0)
						log_set_max_level(log_get_max_level() + 1);
					else if (strcmp(argv[j], "-q") == 0 ||
						 strcmp(argv[j], "--quiet") == 0)
						log_set_max_level(TORPOR_LOG_ERR);
					else
						v[n++] = argv[j];
				}
				for (j = i + 1; j < argc; j++)
					v[n++] = argv[j];
				c = cmd->run(n, v);
				free(v);
				return c;
			}
			break;
		}
		if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0 ||
		    strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--plugin-dir") == 0 ||
		    strcmp(argv[i], "--passphrase-file") == 0)
			i++;
	}

	while ((c = getopt_long(argc, argv, "c:p:vqhV", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case 'p':
			arg_plugin_dir = optarg;
			break;
		case OPT_PASSPHRASE_FILE:
			arg_passphrase_file = optarg;
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
		case 'v':
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
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_FAILURE;
	}
	cmd = find_command(argv[optind]);
	if (!cmd) {
		log_error("unknown command '%s'; try 'torpor --help'", argv[optind]);
		return EXIT_FAILURE;
	}
	if (optind + 1 < argc) {
		log_error("%s: unexpected argument '%s'", cmd->name, argv[optind + 1]);
		return EXIT_FAILURE;
	}
	if ((arg_direct || arg_test) && cmd->run != cmd_hibernate) {
		log_error("%s: --direct and --test belong to 'hibernate'", cmd->name);
		return EXIT_FAILURE;
	}
	return cmd->run(argc - optind, argv + optind);
}
