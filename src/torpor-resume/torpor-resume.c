/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor-resume: run from the initramfs before the root filesystem is
 * mounted.  Finds an image, rebuilds the chain from its header, checks every
 * chunk, and hands the pages back to the kernel.  Whatever happens the boot
 * goes on: exit 0 (nothing to resume, or the sim's restore verified), 2 (an
 * image was refused), 1 (any other error).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <unistd.h>

#include "torpor-build.h"

#include "host.h"
#include "last-cycle.h"
#include "log.h"
#include "passphrase.h"
#include "plugin-call.h"
#include "progress.h"
#include "registry.h"
#include "resume.h"
#include "session.h"

static const char *arg_config;
static const char *arg_plugin_dir;
static const char *arg_cmdline = "/proc/cmdline";
static unsigned arg_wait_device;	/* seconds; 0: look once */
static const char *arg_console;

/* Where a person reads at boot (--console): the initramfs keeps stdout
 * and stderr in a log file, so what someone must read or answer goes
 * there as well.  NULL: stderr only. */
static FILE *console;

static void
usage(FILE *f)
{
	fprintf(f, "Usage: torpor-resume [OPTIONS]\n\n"
		   "Restore the system from a torpor hibernation image, if there is one.\n\n"
		   "  -c, --config FILE          configuration (default %s)\n"
		   "  -p, --plugin-dir DIR       plugin directory (default %s)\n"
		   "      --passphrase-file FILE read the passphrase from FILE\n"
		   "      --cmdline FILE         kernel command line to obey (default /proc/cmdline)\n"
		   "      --wait-device SECONDS  wait up to SECONDS for a missing storage device\n"
		   "      --console PATH         also say there what a person must read or answer\n"
		   "  -v, --verbose              say more\n"
		   "  -h, --help                 this help\n"
		   "  -V, --version              the version\n\n"
		   "The kernel command line words `noresume`, `resume=` and\n"
		   "`resume_offset=` are obeyed.  Exit status: 0 restored, verified or\n"
		   "nothing to resume; 2 an image exists and was refused; 1 other errors.\n",
		TORPOR_DEFAULT_CONFIG, TORPOR_PLUGINDIR);
}

/* On stderr and, when there is one, on the console. */
static void __attribute__((format(printf, 1, 2)))
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	if (!console)
		return;
	va_start(ap, fmt);
	vfprintf(console, fmt, ap);
	va_end(ap);
	fflush(console);
}

/* The console named by --console, unless stderr is a terminal already
 * (run by hand: said once is enough).  Without it, stderr only. */
static void
console_open(void)
{
	int fd;

	if (!arg_console || isatty(STDERR_FILENO))
		return;
	fd = open(arg_console, O_WRONLY | O_NOCTTY | O_APPEND | O_CLOEXEC);
	if (fd >= 0)
		console = fdopen(fd, "a");
	if (!console) {
		log_warning("cannot write to the console %s: %s", arg_console,
			    strerror(errno));
		if (fd >= 0)
			close(fd);
	}
}

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* An unattended machine must come up: without an answer the image is
 * discarded, as with no terminal at all. */
#define ASK_TIMEOUT_SECONDS 60

/* ask_choice()'s answers besides a letter. */
#define ASK_NO_TERMINAL (-1)
#define ASK_TIMED_OUT 0

/* On the console: what to do with an image that cannot be restored now.
 * Returns 't' (try again), 'p' (power off), 'd' (discard),
 * ASK_TIMED_OUT when no answer came in time, or ASK_NO_TERMINAL when
 * there is no terminal to ask on (or it closed). */
static int
ask_choice(bool can_retry)
{
	char line[32];

	if (!isatty(STDIN_FILENO))
		return ASK_NO_TERMINAL;
	for (;;) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };

		say("\nThe hibernation image cannot be restored now.\n%s"
		    "  [p] power off and keep the image (then start the right kernel, or bring the key)\n"
		    "  [d] discard the image and boot normally\n"
		    "Without an answer within %d s the image is discarded and the boot goes on.\n"
		    "Choice: ", can_retry ? "  [t] try the passphrase again\n" : "",
		    ASK_TIMEOUT_SECONDS);
		if (poll(&pfd, 1, ASK_TIMEOUT_SECONDS * 1000) <= 0) {
			say("\n");
			return ASK_TIMED_OUT;
		}
		if (!fgets(line, sizeof(line), stdin))
			return ASK_NO_TERMINAL;
		if ((line[0] == 't' && can_retry) || line[0] == 'p' || line[0] == 'd')
			return line[0];
	}
}

/*
 * An image refused because another kernel booted: which boot menu entry
 * resumes it, as recorded when it was written (the initramfs has no
 * /boot to look in), on the console before anything is asked.
 */
static void
say_which_entry(const struct resume_options *o)
{
	if (!o->wrong_kernel || !o->kernel_release[0])
		return;
	if (o->boot_entry[0])
		say("torpor-resume: this image was written by %s: choose '%s' in the boot menu to resume it\n",
		    o->kernel_release, o->boot_entry);
	else
		say("torpor-resume: this image was written by %s: choose that kernel in the boot menu (Debian lists it under \"Advanced options\") to resume it\n",
		    o->kernel_release);
}

static int
read_cmdline(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

/* Options into the arg_* globals and o.  Returns -1 to go on, else the
 * exit status. */
static int
parse_args(int argc, char **argv, struct resume_options *o)
{
	enum { OPT_PASSPHRASE_FILE = 0x100, OPT_CMDLINE, OPT_WAIT_DEVICE,
	       OPT_CONSOLE };
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "plugin-dir", required_argument, NULL, 'p' },
		{ "passphrase-file", required_argument, NULL, OPT_PASSPHRASE_FILE },
		{ "cmdline", required_argument, NULL, OPT_CMDLINE },
		{ "wait-device", required_argument, NULL, OPT_WAIT_DEVICE },
		{ "console", required_argument, NULL, OPT_CONSOLE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:p:vhV", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			arg_config = optarg;
			break;
		case 'p':
			arg_plugin_dir = optarg;
			break;
		case OPT_PASSPHRASE_FILE:
			passphrase_set_file(optarg);
			break;
		case OPT_CMDLINE:
			arg_cmdline = optarg;
			break;
		case OPT_WAIT_DEVICE:
			if (session_parse_wait(optarg, &arg_wait_device) < 0)
				return EXIT_FAILURE;
			break;
		case OPT_CONSOLE:
			arg_console = optarg;
			break;
		case 'v':
			log_set_max_level(log_get_max_level() + 1);
			/* Say how far the check and the restore have come,
			 * and how long each phase took. */
			o->progress = progress_print;
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		case 'V':
			printf("torpor-resume %s\n", TORPOR_VERSION);
			return EXIT_SUCCESS;
		default:
			fprintf(stderr, "Try 'torpor-resume --help'.\n");
			return EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'", argv[optind]);
		return EXIT_FAILURE;
	}
	return -1;
}

/* noresume, resume= and resume_offset= from the kernel command line. */
static void
obey_cmdline(struct resume_options *o)
{
	static char cmdline[8192], resume[1024], offset[64];
	int r = read_cmdline(arg_cmdline, cmdline, sizeof(cmdline));

	if (r < 0)
		log_warning_errno(r, "cannot read %s: %m", arg_cmdline);
	resume_parse_cmdline(cmdline, &o->noresume, resume, sizeof(resume),
			     offset, sizeof(offset));
	host_set_resume_location(resume[0] ? resume : NULL,
				 offset[0] ? offset : NULL);
}

/* Whether an image that could still be resumed (right key, right kernel,
 * or storage that reads next time) is left while the system is about to
 * boot and mount its filesystems: resuming it later would corrupt them.
 * The simulated device has no filesystems to protect. */
static bool
must_protect(const struct torpor_session *s, const struct resume_options *o,
	     int r)
{
	return resume_left_resumable_image(o, r) &&
	       !(s->config &&
		 host_kind_of_spec(s->config->snapshot) == TORPOR_SNAPSHOT_SIM);
}

/*
 * Only the simulated restore returns: its figures go to the last-cycle
 * file for `torpor status`, where [torpor] state_dir says (a kernel
 * restore never comes back here; the resumed system reads the slot).
 */
static void
record_resume(const struct torpor_session *s, const struct resume_options *o)
{
	int r;

	if (!o->restored || !o->stats.resumed_at || !s->config->state_dir)
		return;
	r = last_cycle_record_resume(s->config->state_dir, &o->stats);
	if (r < 0)
		log_warning("could not record the resume's figures in %s: %s",
			    s->config->state_dir, strerror(-r));
}

/* Resume, until nothing resumable is left behind.  Does not return when
 * the user chooses to power off. */
static int
resume_until_decided(struct resume_options *o)
{
	struct torpor_session s;
	int r, choice;

	if (arg_wait_device > 0)
		session_wait_for_storage(arg_config, arg_plugin_dir,
					 arg_wait_device);
	for (;;) {
		r = session_open(&s, arg_config, arg_plugin_dir, false);
		if (r >= 0)
			r = session_arrange_writer_only(&s);
		if (r >= 0)
			r = resume_run(&s, o);
		if (r == 0)
			record_resume(&s, o);
		if (r == EXIT_REFUSED)
			say_which_entry(o);
		if (!must_protect(&s, o, r)) {
			session_close(&s);
			return r;
		}
		choice = ask_choice(o->refusal == REFUSAL_KEY && !passphrase_from_file());
		if (choice != 't')
			break;
		session_close(&s);
	}
	if (choice == 'p') {
		session_close(&s);
		say("torpor-resume: powering off; the image is kept\n");
		sync();
		reboot(RB_POWER_OFF);
		exit(EXIT_FAILURE);
	}
	say("torpor-resume: %s: discarding the image so that it can never be resumed over a booted system; booting normally\n",
	    choice == 'd' ? "as chosen" :
	    choice == ASK_TIMED_OUT ? "no answer within " STRINGIFY(ASK_TIMEOUT_SECONDS) " s" :
	    "no terminal to ask on");
	session_invalidate(&s);
	session_close(&s);
	return r;
}

int
main(int argc, char **argv)
{
	struct resume_options o = { .mode = RESUME_RESTORE };
	int r;

	log_set_program("torpor-resume");
	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	obey_cmdline(&o);
	console_open();
	r = resume_until_decided(&o);
	if (console)
		fclose(console);
	if (r == EXIT_REFUSED)
		return EXIT_REFUSED;
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
