/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What logind answers to CanHibernate, and why, for `torpor status`.
 *
 * The answer is logind's own (busctl, when systemd runs).  The why is
 * torpor's reading of the rule systemd 255 and later apply before they
 * offer hibernation: the kernel can hibernate, "noresume" is not on the
 * command line (256 and later), and either the machine booted through
 * EFI (the HibernateLocation variable then names the image's place) or
 * the kernel has a resume device (/sys/power/resume).  Desktops show
 * their Hibernate entry only for "yes".
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "torpor-build.h"

#include "clock.h"
#include "device-names.h"
#include "logind-view.h"
#include "test-hook.h"
#include "text.h"

extern char **environ;

/* Bound of busctl's answer: `s "challenge"` and a newline. */
#define ANSWER_MAX 256

/* How long busctl waits for logind (its --timeout). */
#define LOGIND_TIMEOUT_S 25

/* root's path into buf. */
static int
read_small(const char *root, const char *path, char *buf, size_t size)
{
	char full[4096];
	ssize_t n;

	snprintf(full, sizeof(full), "%s%s", root, path);
	n = text_read_small(full, buf, size);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static bool
exists(const char *root, const char *path)
{
	char full[4096];

	snprintf(full, sizeof(full), "%s%s", root, path);
	return access(full, F_OK) == 0;
}

/* busctl's program: /usr/bin/busctl; a test build may name a stand-in. */
static const char *
busctl_path(void)
{
	return test_hook_path("TORPOR_TEST_BUSCTL", "/usr/bin/busctl");
}

/*
 * Ask logind; answer gets "yes", "no", "challenge" or "na".  When busctl
 * fails, -EIO and why says how: no answer in the time, or its exit status
 * (its messages go to /dev/null: with SYSTEMD_LOG_LEVEL=debug in the
 * environment they would be pages long).  The wait is D-Bus's usual
 * 25 s: logind answered a Debian 12 guest's CanHibernate in more than 5 s
 * once (TCG, 2 vCPUs, LUKS), and a cut-off then only says "unknown" where
 * the answer was "yes".
 */
static int
ask_logind(char *answer, size_t size, char *why, size_t why_size)
{
	char *const argv[] = { (char *)"busctl", (char *)"--system",
		(char *)"--timeout=" TEXT_OF(LOGIND_TIMEOUT_S), (char *)"call",
		(char *)"org.freedesktop.login1", (char *)"/org/freedesktop/login1",
		(char *)"org.freedesktop.login1.Manager", (char *)"CanHibernate",
		NULL };
	posix_spawn_file_actions_t fa;
	char buf[ANSWER_MAX], *q;
	int p[2], status, r;
	size_t used = 0;
	ssize_t n;
	pid_t pid;
	double t0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
					 O_WRONLY, 0);
	t0 = clock_now();
	r = posix_spawn(&pid, busctl_path(), &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return -r;
	}
	while (used < sizeof(buf) - 1 &&
	       ((n = read(p[0], buf + used, sizeof(buf) - 1 - used)) > 0 ||
		(n < 0 && errno == EINTR)))
		used += n > 0 ? (size_t)n : 0;
	buf[used] = '\0';
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (clock_now() - t0 >= LOGIND_TIMEOUT_S - 0.5)
			snprintf(why, why_size, "no answer within %d s",
				 LOGIND_TIMEOUT_S);
		else if (WIFEXITED(status))
			snprintf(why, why_size, "busctl exited with status %d",
				 WEXITSTATUS(status));
		else
			snprintf(why, why_size, "busctl was killed by signal %d",
				 WTERMSIG(status));
		return -EIO;
	}
	/* `s "yes"` */
	if (strncmp(buf, "s \"", 3) != 0 || !(q = strchr(buf + 3, '"')))
		return -EBADMSG;
	*q = '\0';
	if ((size_t)(q - (buf + 3)) >= size)
		return -EBADMSG;
	memcpy(answer, buf + 3, (size_t)(q - (buf + 3)) + 1);
	return 0;
}

/* The resume device the configuration names (resume=/dev/..., UUID=...),
 * or 0. */
static dev_t
location_device(const char *location)
{
	char spec[256], node[PATH_MAX];
	dev_t dev;

	if (!location ||
	    text_word_value(location, "resume=", spec, sizeof(spec)) < 0 ||
	    !spec[0] || bd_resolve_dev(spec, node, sizeof(node), &dev) < 0)
		return 0;
	return dev;
}

/* Why logind answers as it does (systemd 255 and later). */
static void
explain(struct logind_view *v, const char *root, const char *location)
{
	char state[128] = "", cmdline[4096] = "", resume[64] = "";
	unsigned int maj, min;
	dev_t want = location_device(location);

	read_small(root, "/proc/cmdline", cmdline, sizeof(cmdline));
	if (read_small(root, "/sys/power/state", state, sizeof(state)) == 0 &&
	    !text_has_word(state, "disk")) {
		snprintf(v->why, sizeof(v->why),
			 "the kernel cannot hibernate (/sys/power/state has no \"disk\")");
		return;
	}
	if (text_has_word(cmdline, "noresume")) {
		snprintf(v->why, sizeof(v->why),
			 "the kernel command line has \"noresume\", and systemd 256 and later offer no hibernation then: remove it from the boot loader's configuration");
		return;
	}
	if (read_small(root, "/sys/power/resume", resume, sizeof(resume)) < 0 ||
	    sscanf(resume, "%u:%u", &maj, &min) != 2)
		maj = min = 0;
	if (maj || min) {
		snprintf(v->why, sizeof(v->why),
			 "the kernel's resume device is %u:%u%s", maj, min,
			 !want ? "" : makedev(maj, min) == want ?
			 " (the configuration's)" :
			 ", not the configuration's: run `torpor resume-args --kernel`");
		return;
	}
	if (exists(root, "/sys/firmware/efi")) {
		snprintf(v->why, sizeof(v->why),
			 "booted through EFI, where systemd 255 and later need no resume device");
		return;
	}
	snprintf(v->why, sizeof(v->why),
		 "not booted through EFI and the kernel has no resume device (/sys/power/resume is 0:0): systemd 255 and later then refuse hibernation; `torpor resume-args --kernel` sets it (torpor-resume-location.service does at every boot: systemctl enable --now torpor-resume-location.service)");
}

void
logind_view(struct logind_view *v, const char *root, const char *location)
{
	char failure[64] = "";
	int r;

	memset(v, 0, sizeof(*v));
	if (!exists(root, "/run/systemd/system")) {
		snprintf(v->answer, sizeof(v->answer), "not running");
		snprintf(v->why, sizeof(v->why),
			 "systemd is not the init system: `torpor hibernate` is the way to hibernate");
		return;
	}
	r = ask_logind(v->answer, sizeof(v->answer), failure, sizeof(failure));
	if (r < 0)
		snprintf(v->answer, sizeof(v->answer), "unknown");
	if (strcmp(v->answer, "no") == 0 || strcmp(v->answer, "challenge") == 0) {
		snprintf(v->why, sizeof(v->why),
			 "polkit %s this user (org.freedesktop.login1.hibernate)",
			 v->answer[0] == 'n' ? "refuses hibernation to" :
			 "asks for authentication from");
		return;
	}
	explain(v, root, location);
	if (r < 0) {
		size_t n = strlen(v->why);

		snprintf(v->why + n, sizeof(v->why) - n,
			 "; logind did not answer CanHibernate (%s)",
			 r == -ENOENT ? "no /usr/bin/busctl" :
			 failure[0] ? failure : strerror(-r));
	}
}
