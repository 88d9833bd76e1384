/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor suspend-then-hibernate: systemd 252's suspend-then-hibernate with
 * torpor's hibernation.  systemd-sleep hibernates through the kernel for
 * its second step, so a drop-in cannot route that step to torpor; this
 * command does the whole sleep instead, as systemd-sleep would on a machine
 * without a battery:
 *
 *  - suspend to RAM (the first of SuspendState=, default "mem standby
 *    freeze", that /sys/power/state offers) with the RTC's wake alarm set
 *    HibernateDelaySec= ahead;
 *  - woken before the alarm (by the user): stay up;
 *  - woken by the alarm: hibernate through torpor (torpord when it runs);
 *    if that fails, suspend again without an alarm.
 *
 * The system-sleep hooks run around each step with the arguments
 * "pre"/"post" "suspend-then-hibernate" and SYSTEMD_SLEEP_ACTION set to the
 * step: "suspend", "hibernate", "suspend-after-failed-hibernate".
 *
 * systemd estimates the delay from the battery's discharge when
 * HibernateDelaySec= is not set and uses ACPI battery alarms; torpor does
 * neither: its delay is --delay, else [torpor] hibernate_delay, else
 * HibernateDelaySec= from systemd's sleep.conf, else 2 hours (systemd 252's
 * value without a battery).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ini.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "plugin-call.h"
#include "session.h"
#include "sysroot.h"
#include "text.h"

#include "suspend-then-hibernate.h"

#define USEC_PER_SEC 1000000ULL

/* systemd's time units, longest first so that "min" is not read as "m". */
static const struct {
	const char *name;
	uint64_t usec;
} time_units[] = {
	{ "seconds", USEC_PER_SEC }, { "second", USEC_PER_SEC },
	{ "minutes", 60 * USEC_PER_SEC }, { "minute", 60 * USEC_PER_SEC },
	{ "months", 2629800 * USEC_PER_SEC }, { "month", 2629800 * USEC_PER_SEC },
	{ "hours", 3600 * USEC_PER_SEC }, { "hour", 3600 * USEC_PER_SEC },
	{ "weeks", 604800 * USEC_PER_SEC }, { "week", 604800 * USEC_PER_SEC },
	{ "years", 31557600 * USEC_PER_SEC }, { "year", 31557600 * USEC_PER_SEC },
	{ "days", 86400 * USEC_PER_SEC }, { "day", 86400 * USEC_PER_SEC },
	{ "msec", 1000 }, { "usec", 1 }, { "sec", USEC_PER_SEC },
	{ "min", 60 * USEC_PER_SEC }, { "hr", 3600 * USEC_PER_SEC },
	{ "ms", 1000 }, { "us", 1 }, { "s", USEC_PER_SEC },
	{ "m", 60 * USEC_PER_SEC }, { "h", 3600 * USEC_PER_SEC },
	{ "d", 86400 * USEC_PER_SEC }, { "w", 604800 * USEC_PER_SEC },
	{ "M", 2629800 * USEC_PER_SEC }, { "y", 31557600 * USEC_PER_SEC },
};

/* One "NUMBER[.FRACTION][ ]UNIT" of a time span, added to *usec. */
static int
add_time_part(const char **p, uint64_t *usec)
{
	uint64_t whole = 0, frac = 0, scale = 1, unit = USEC_PER_SEC;
	const char *s = *p;
	size_t i;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			if (scale < 1000000000000ULL) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
	while (*s == ' ' || *s == '\t')
		s++;
	for (i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++) {
		size_t n = strlen(time_units[i].name);

		if (strncmp(s, time_units[i].name, n) == 0 &&
		    !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z'))) {
			unit = time_units[i].usec;
			s += n;
			break;
		}
	}
	if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))
		return -EINVAL;		/* an unknown unit */
	if (whole > (UINT64_MAX - *usec) / unit)
		return -ERANGE;
	*usec += whole * unit + frac * unit / scale;
	*p = s;
	return 0;
}

int
s2h_parse_timespan(const char *text, uint64_t *ret_seconds)
{
	const char *p = text;
	uint64_t usec = 0;
	int r;

	while (*p == ' ' || *p == '\t')
		p++;
	if (strcmp(p, "infinity") == 0) {
		*ret_seconds = UINT64_MAX;
		return 0;
	}
	if (!*p)
		return -EINVAL;
	while (*p) {
		r = add_time_part(&p, &usec);
		if (r < 0)
			return r;
		while (*p == ' ' || *p == '\t')
			p++;
	}
	*ret_seconds = usec / USEC_PER_SEC + (usec % USEC_PER_SEC != 0);
	return 0;
}

/* ---- systemd's sleep.conf ---------------------------------------------- */

/* Where systemd 252 reads sleep.conf.d drop-ins, the first one of a name
 * winning (/lib for Debian's split-usr build). */
static const char *const dropin_dirs[] = {
	"/etc/systemd/sleep.conf.d",
	"/run/systemd/sleep.conf.d",
	"/usr/local/lib/systemd/sleep.conf.d",
	"/usr/lib/systemd/sleep.conf.d",
	"/lib/systemd/sleep.conf.d",
};

#define MAX_DROPINS 128

/* systemd 252's SuspendState= when it is not set. */
#define DEFAULT_SUSPEND_STATES "mem standby freeze"

struct sleep_conf {
	const char *file;		/* being read */
	uint64_t delay;			/* UINT64_MAX: not set */
	char from[PATH_MAX];		/* the file that set it */
	char states[128];		/* SuspendState=, in order */
};

static int
on_sleep_key(void *user, const char *section, const char *name,
	     const char *value)
{
	struct sleep_conf *sc = user;
	uint64_t v;

	if (strcmp(section, "Sleep") != 0)
		return 1;
	if (strcmp(name, "SuspendState") == 0) {
		snprintf(sc->states, sizeof(sc->states), "%s",
			 *value ? value : DEFAULT_SUSPEND_STATES);
		return 1;
	}
	if (strcmp(name, "HibernateDelaySec") != 0)
		return 1;
	/* As systemd: a value it cannot parse is logged and ignored. */
	if (s2h_parse_timespan(value, &v) < 0) {
		log_warning("%s: HibernateDelaySec=%s is not a time span: ignored",
			    sc->file, value);
		return 1;
	}
	sc->delay = v;
	snprintf(sc->from, sizeof(sc->from), "%s", sc->file);
	return 1;
}

static void
read_sleep_file(struct sleep_conf *sc, const char *path)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	sc->file = path;
	/* inih reports lines it cannot parse; systemd warns about them and
	 * goes on, so does this. */
	if (ini_parse_file(f, on_sleep_key, sc) > 0)
		log_warning("%s: a line is not KEY=VALUE: ignored", path);
	fclose(f);
}

static int
compare_base_names(const void *a, const void *b)
{
	const char *x = strrchr(*(char *const *)a, '/');
	const char *y = strrchr(*(char *const *)b, '/');

	return strcmp(x, y);
}

static bool
name_taken(char **paths, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(strrchr(paths[i], '/') + 1, name) == 0)
			return true;
	return false;
}

/* The drop-ins (*.conf) of every directory, a name once, by name. */
static size_t
list_dropins(const char *root, char **paths)
{
	char dir[PATH_MAX];
	struct dirent *de;
	size_t n = 0, i;

	for (i = 0; i < sizeof(dropin_dirs) / sizeof(dropin_dirs[0]); i++) {
		DIR *d;

		snprintf(dir, sizeof(dir), "%s%s", root, dropin_dirs[i]);
		d = opendir(dir);
		while (d && (de = readdir(d)) && n < MAX_DROPINS) {
			size_t len = strlen(de->d_name);

			if (de->d_name[0] == '.' || len < 6 ||
			    strcmp(de->d_name + len - 5, ".conf") != 0 ||
			    name_taken(paths, n, de->d_name) ||
			    asprintf(&paths[n], "%s/%s", dir, de->d_name) < 0)
				continue;
			n++;
		}
		if (d)
			closedir(d);
	}
	qsort(paths, n, sizeof(*paths), compare_base_names);
	return n;
}

/* HibernateDelaySec= and SuspendState= as systemd-sleep reads them:
 * sleep.conf, then the drop-ins in name order, the last setting winning. */
static void
read_sleep_conf(const char *root, struct sleep_conf *sc)
{
	char *paths[MAX_DROPINS];
	char main_file[PATH_MAX];
	size_t n, i;

	sc->delay = UINT64_MAX;
	sc->from[0] = '\0';
	snprintf(sc->states, sizeof(sc->states), "%s", DEFAULT_SUSPEND_STATES);
	snprintf(main_file, sizeof(main_file), "%s/etc/systemd/sleep.conf", root);
	read_sleep_file(sc, main_file);
	n = list_dropins(root, paths);
	for (i = 0; i < n; i++) {
		read_sleep_file(sc, paths[i]);
		free(paths[i]);
	}
}

/* ---- the delay ------------------------------------------------------- */

/* The delay in seconds and where it comes from. */
static int
choose_delay(const struct s2h_args *a, const struct torpor_config *c,
	     const struct sleep_conf *sc, uint64_t *ret, char *from,
	     size_t from_size)
{
	int r;

	if (a->delay) {
		r = s2h_parse_timespan(a->delay, ret);
		if (r < 0 || *ret == UINT64_MAX || *ret > CONFIG_MAX_HIBERNATE_DELAY)
			return log_error_errno(-EINVAL, "--delay '%s': expected seconds (or a time span such as 90min), at most %u",
					       a->delay, CONFIG_MAX_HIBERNATE_DELAY);
		snprintf(from, from_size, "--delay");
		return 0;
	}
	if (c->has_hibernate_delay) {
		*ret = c->hibernate_delay;
		snprintf(from, from_size, "%s [torpor] hibernate_delay",
			 c->path ? c->path : "the configuration");
		return 0;
	}
	if (sc->delay != UINT64_MAX) {
		*ret = sc->delay > CONFIG_MAX_HIBERNATE_DELAY ?
		       CONFIG_MAX_HIBERNATE_DELAY : sc->delay;
		snprintf(from, from_size, "%s HibernateDelaySec=", sc->from);
		return 0;
	}
	*ret = S2H_DEFAULT_DELAY;
	snprintf(from, from_size, "systemd's default without a battery");
	return 0;
}

/* ---- suspend to RAM with the RTC's alarm ------------------------------ */

struct s2h {
	struct torpor_session s;
	bool open;
	uint64_t delay;			/* seconds */
	char sleep_state[16];		/* what is written to state */
	char state[PATH_MAX];		/* /sys/power/state */
	char mem_sleep[PATH_MAX];	/* /sys/power/mem_sleep */
	char alarm[PATH_MAX];		/* the RTC's wakealarm */
};

static int
write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, r = 0;

	/* No O_CREAT: a missing file is the error to report.  Writing to
	 * /sys/power/state returns once the machine is awake again. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, text, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		r = -errno;
	else if ((size_t)n != len)
		r = -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static bool
has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
		if ((p == text || p[-1] == ' ' || p[-1] == '[') &&
		    (!p[n] || p[n] == ' ' || p[n] == '\n' || p[n] == ']'))
			return true;
	return false;
}

/*
 * The state to write: the first word of states (SuspendState=) that
 * offered (/sys/power/state) has, as systemd-sleep, which tries them in
 * turn; NULL offered (not readable here): the first.
 */
static int
choose_state(struct s2h *st, const char *states, const char *offered)
{
	char list[128], *save = NULL, *w;

	snprintf(list, sizeof(list), "%s", states);
	for (w = strtok_r(list, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save))
		if (strcmp(w, "disk") != 0 && (!offered || has_word(offered, w)) &&
		    strlen(w) < sizeof(st->sleep_state)) {
			snprintf(st->sleep_state, sizeof(st->sleep_state), "%s", w);
			return 0;
		}
	log_error("cannot suspend: %s offers '%s', none of SuspendState= '%s'",
		  st->state, offered ? offered : "", states);
	return -EOPNOTSUPP;
}

/* Everything the sleep needs, before any of it happens. */
static int
check_machine(struct s2h *st, const struct sleep_conf *sc)
{
	char text[256];
	struct stat sb;
	int r;

	if (access(st->alarm, W_OK) < 0)
		return log_error_errno(-errno, "no RTC wake alarm at %s (%m): suspend-then-hibernate needs it to wake the machine for the hibernation",
				       st->alarm);
	if (stat(st->state, &sb) < 0)
		return log_error_errno(-errno, "cannot suspend: %s: %m",
				       st->state);
	/* sysfs files are regular; a test's FIFO is read only when the
	 * machine "suspends". */
	if (!S_ISREG(sb.st_mode))
		return choose_state(st, sc->states, NULL);
	r = text_read_small(st->state, text, sizeof(text));
	if (r < 0)
		return log_error_errno(r, "cannot read %s: %m", st->state);
	text[strcspn(text, "\n")] = '\0';
	r = choose_state(st, sc->states, text);
	/* "mem" suspends the way mem_sleep selects: [deep] is S3, [s2idle]
	 * suspend-to-idle; the RTC wakes either.  systemd 252 leaves it as
	 * it is, and so does torpor. */
	if (r >= 0 && text_read_small(st->mem_sleep, text, sizeof(text)) >= 0) {
		text[strcspn(text, "\n")] = '\0';
		log_info("suspend: state '%s', mem_sleep '%s'", st->sleep_state,
			 text);
	}
	return r;
}

static double
boottime_now(void)
{
	return clock_seconds(CLOCK_BOOTTIME);
}

/*
 * Did the alarm wake the machine?  Once it has rung the kernel disables it
 * and wakealarm reads empty; it also has when CLOCK_BOOTTIME, which counts
 * the time asleep, has passed the delay (the RTC counts whole seconds, so
 * it may ring up to one second before the delay is over).  Says which.
 */
static bool
alarm_rang(const struct s2h *st, double t0)
{
	char text[64];
	double slept = boottime_now() - t0;

	if (text_read_small(st->alarm, text, sizeof(text)) >= 0 &&
	    text[strspn(text, " \n")] == '\0') {
		log_notice("the RTC alarm has rung: awake after %.1f s", slept);
		return true;
	}
	if (slept + 1.0 >= (double)st->delay) {
		log_notice("awake after %.1f s: the delay has passed", slept);
		return true;
	}
	log_notice("awake after %.1f s, before the RTC alarm", slept);
	return false;
}

/*
 * One suspend to RAM with the hooks around it, told action; with an alarm
 * (st->delay > 0 and alarm), the RTC wakes the machine after st->delay
 * seconds.  1 when the alarm woke it, 0 when something else did, -errno
 * when it did not suspend.
 */
static int
suspend_step(struct s2h *st, const char *action, bool alarm)
{
	char when[32];
	double t0 = 0;
	bool rang = false;
	int r;

	r = plugins_sleep_event(&st->s.reg, TORPOR_SLEEP_PRE, action);
	if (r < 0)
		return log_error_errno(r, "a plugin refused the suspend: %m");
	if (alarm) {
		snprintf(when, sizeof(when), "+%" PRIu64, st->delay);
		/* The kernel refuses a new alarm over one that is set. */
		r = write_text(st->alarm, "0");
		if (r >= 0)
			r = write_text(st->alarm, when);
		if (r < 0) {
			log_error_errno(r, "cannot set the RTC wake alarm (%s): %m",
					st->alarm);
			goto post;
		}
		t0 = boottime_now();
		log_notice("suspending ('%s'); the RTC wakes the machine in %" PRIu64 " s to hibernate",
			   st->sleep_state, st->delay);
	} else
		log_notice("suspending ('%s')", st->sleep_state);
	r = write_text(st->state, st->sleep_state);
	if (r < 0)
		log_error_errno(r, "could not suspend (%s '%s'): %m", st->state,
				st->sleep_state);
	if (alarm) {
		rang = alarm_rang(st, t0);
		if (write_text(st->alarm, "0") < 0)
			log_warning("could not clear the RTC wake alarm (%s)",
				    st->alarm);
	}
post:
	plugins_sleep_event(&st->s.reg, TORPOR_SLEEP_POST, action);
	return r < 0 ? r : rang;
}

static int
open_session(struct s2h *st, const struct s2h_args *a)
{
	int r = session_open(&st->s, a->config, a->plugin_dir, false);

	st->open = r >= 0;
	if (r < 0)
		session_close(&st->s);
	return r;
}

static void
close_session(struct s2h *st)
{
	if (st->open)
		session_close(&st->s);
	st->open = false;
}

static void
set_paths(struct s2h *st)
{
	const char *root = sysroot();

	snprintf(st->state, sizeof(st->state), "%s/sys/power/state", root);
	snprintf(st->mem_sleep, sizeof(st->mem_sleep), "%s/sys/power/mem_sleep",
		 root);
	snprintf(st->alarm, sizeof(st->alarm), "%s/sys/class/rtc/rtc0/wakealarm",
		 root);
}

/* The hibernation failed: suspend as systemd-sleep then does, without an
 * alarm; the exit status says the hibernation failed. */
static int
suspend_after_failed_hibernate(struct s2h *st, const struct s2h_args *a)
{
	if (!st->sleep_state[0]) {	/* delay 0: nothing was checked */
		log_notice("could not hibernate");
		return EXIT_FAILURE;
	}
	log_notice("could not hibernate: suspending instead");
	if (open_session(st, a) >= 0) {
		suspend_step(st, "suspend-then-hibernate/suspend-after-failed-hibernate",
			     false);
		close_session(st);
	}
	return EXIT_FAILURE;
}

int
torpor_suspend_then_hibernate(const struct s2h_args *a)
{
	struct s2h st = { .open = false };
	char from[PATH_MAX + 64];
	struct sleep_conf sc;
	int r;

	set_paths(&st);
	if (open_session(&st, a) < 0)
		return EXIT_FAILURE;
	read_sleep_conf(sysroot(), &sc);
	r = choose_delay(a, st.s.config, &sc, &st.delay, from, sizeof(from));
	if (r >= 0 && st.delay > 0)
		r = check_machine(&st, &sc);
	if (r < 0) {
		close_session(&st);
		return EXIT_FAILURE;
	}
	log_info("hibernate delay %" PRIu64 " s (%s)", st.delay, from);
	if (st.delay > 0) {
		r = suspend_step(&st, "suspend-then-hibernate/suspend", true);
		close_session(&st);
		if (r < 0)
			return EXIT_FAILURE;
		if (r == 0) {
			log_notice("woken up before the RTC alarm: staying up");
			return EXIT_SUCCESS;
		}
		log_notice("the RTC alarm woke the machine: hibernating");
	} else {
		close_session(&st);
		log_notice("hibernate delay 0: hibernating without suspending");
	}
	if (a->hibernate() == EXIT_SUCCESS)
		return EXIT_SUCCESS;
	return suspend_after_failed_hibernate(&st, a);
}
