/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sleep-hooks: run the system-sleep hooks as systemd-sleep would.
 *
 * torpor's systemd drop-in runs the hibernation itself instead of
 * systemd-sleep, which is what runs the executables in
 * /usr/lib/systemd/system-sleep.  Drivers and tools rely on those hooks
 * (NVIDIA, network managers, tlp),
 * so this plugin runs them: every executable of the directory, with the
 * arguments "pre" or "post" and the action ("hibernate", "hybrid-sleep",
 * "suspend-then-hibernate"), SYSTEMD_SLEEP_ACTION set to the action (for
 * suspend-then-hibernate to its step: "suspend", "hibernate",
 * "suspend-after-failed-hibernate"), started in name order and run in
 * parallel; the cycle goes on once all have finished or the timeout has
 * passed.  A failing hook is logged and does not stop the hibernation.
 *
 * The machine's own hooks, the default directory, run only when the
 * machine really sleeps: the host says whether the snapshot is the
 * running kernel's.  A cycle on a stand-in (the tests' and the demo's
 * simulated device) runs the hooks of another directory it names, never
 * those.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <torpor/plugin-util.h>
#include <torpor/plugin.h>

#define NAME "sleep-hooks"
#define MAX_HOOKS 256
/* What systemd-sleep runs: the machine's own hooks. */
#define MACHINE_HOOKS "/usr/lib/systemd/system-sleep"

static const struct torpor_host *host;

static const struct torpor_config_key sleep_hooks_keys[] = {
	{ .name = "directory", .type = TORPOR_CONFIG_PATH,
	  .default_value = MACHINE_HOOKS,
	  .help = "the hooks to run, as systemd-sleep does (these, the default, only when the machine really sleeps)" },
	{ .name = "timeout", .type = TORPOR_CONFIG_INT, .min = 1, .max = 3600,
	  .default_value = "90",
	  .help = "seconds the hooks may take before they are killed" },
	{ .name = NULL },
};

struct hook {
	char *path;
	pid_t pid;
	int status;
	bool done;
};

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The executables of dir (regular files, after symbolic links), sorted;
 * *ret_n of them.  A missing directory has none. */
static int
list_hooks(const char *dir, char ***ret, size_t *ret_n)
{
	char **names = calloc(MAX_HOOKS, sizeof(*names));
	struct dirent *de;
	struct stat st;
	size_t n = 0;
	DIR *d;

	if (!names)
		return -ENOMEM;
	d = opendir(dir);
	while (d && (de = readdir(d)) && n < MAX_HOOKS) {
		char *path;

		if (de->d_name[0] == '.' ||
		    asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			continue;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(path, X_OK) == 0)
			names[n++] = path;
		else
			free(path);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(*names), compare_names);
	*ret = names;
	*ret_n = n;
	return 0;
}

/*
 * Start one hook.  action is the verb, or "VERB/STEP" for a step of
 * suspend-then-hibernate: the hooks get the verb as their second argument
 * and the step in SYSTEMD_SLEEP_ACTION, as from systemd-sleep.
 */
static pid_t
start_hook(const char *path, const char *phase, const char *action)
{
	const char *step = strchr(action, '/');
	pid_t pid = fork();

	if (pid == 0) {
		char verb[64];
		char *argv[] = { (char *)path, (char *)phase, verb, NULL };

		snprintf(verb, sizeof(verb), "%.*s",
			 step ? (int)(step - action) : (int)strlen(action),
			 action);
		setenv("SYSTEMD_SLEEP_ACTION", step ? step + 1 : action, 1);
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

/* Wait for every started hook until the deadline; kill the rest. */
static void
wait_hooks(struct hook *h, size_t n, unsigned timeout)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	size_t left = 0, i;
	time_t deadline = time(NULL) + timeout;

	for (i = 0; i < n; i++)
		left += h[i].pid > 0;
	while (left && time(NULL) < deadline) {
		for (i = 0; i < n; i++)
			if (h[i].pid > 0 && !h[i].done &&
			    waitpid(h[i].pid, &h[i].status, WNOHANG) == h[i].pid) {
				h[i].done = true;
				left--;
			}
		if (left)
			nanosleep(&tick, NULL);
	}
	for (i = 0; i < n; i++)
		if (h[i].pid > 0 && !h[i].done) {
			kill(h[i].pid, SIGKILL);
			waitpid(h[i].pid, &h[i].status, 0);
			torpor_log(host, NAME, TORPOR_LOG_WARNING,
				  "%s did not finish within %u s: killed",
				  h[i].path, timeout);
			h[i].status = 0;
			h[i].done = true;
		}
}

/* One log line for each hook that could not start or failed. */
static void
report_hooks(const struct hook *h, size_t n, const char *phase)
{
	for (size_t i = 0; i < n; i++) {
		if (h[i].pid < 0)
			torpor_log(host, NAME, TORPOR_LOG_WARNING,
				  "could not start %s %s", h[i].path, phase);
		else if (WIFEXITED(h[i].status) && WEXITSTATUS(h[i].status))
			torpor_log(host, NAME, TORPOR_LOG_WARNING,
				  "%s %s failed with exit status %d",
				  h[i].path, phase, WEXITSTATUS(h[i].status));
		else if (WIFSIGNALED(h[i].status))
			torpor_log(host, NAME, TORPOR_LOG_WARNING,
				  "%s %s was killed by signal %d", h[i].path,
				  phase, WTERMSIG(h[i].status));
	}
}

static void
run_hooks(const char *dir, const char *phase, const char *action,
	  unsigned timeout)
{
	struct hook *h;
	char **paths;
	size_t n, i;

	if (list_hooks(dir, &paths, &n) < 0)
		return;
	h = calloc(n ? n : 1, sizeof(*h));
	for (i = 0; h && i < n; i++) {
		h[i].path = paths[i];
		h[i].pid = start_hook(paths[i], phase, action);
	}
	if (h) {
		wait_hooks(h, n, timeout);
		report_hooks(h, n, phase);
		torpor_log(host, NAME, TORPOR_LOG_INFO, "ran %zu %s hook(s) from %s",
			  n, phase, dir);
	}
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(h);
}

/* Whether dir is the machine's own hooks, under whatever path names
 * them (/lib/systemd/system-sleep, a symbolic link). */
static bool
machine_hooks(const char *dir)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (strcmp(dir, MACHINE_HOOKS) == 0)
		return true;
	return realpath(dir, a) && realpath(MACHINE_HOOKS, b) &&
	       strcmp(a, b) == 0;
}

static int
sleep_hooks_event(int event, const char *action)
{
	const char *dir = host->config_get(NAME, "directory");
	int64_t timeout = 90;

	host->config_number(NAME, "timeout", &timeout);
	if (!dir || (event != TORPOR_SLEEP_PRE && event != TORPOR_SLEEP_POST))
		return 0;
	if (host->snapshot_kind() != TORPOR_SNAPSHOT_KERNEL &&
	    machine_hooks(dir)) {
		torpor_log(host, NAME, TORPOR_LOG_INFO, "the machine does not sleep (the snapshot is not the running kernel's): its own hooks in %s are not run",
			   dir);
		return 0;
	}
	run_hooks(dir, event == TORPOR_SLEEP_PRE ? "pre" : "post",
		  action ? action : "hibernate", (unsigned)timeout);
	/* As with systemd-sleep, a failing hook never stops the sleep. */
	return 0;
}

static int
sleep_hooks_load(const struct torpor_host *h)
{
	if (!TORPOR_HOST_HAS(h, config_number))
		return -EPROTO;
	host = h;
	return 0;
}

static int
sleep_hooks_print_debug_info(char *buf, size_t size)
{
	const char *dir = host ? host->config_get(NAME, "directory") : NULL;

	return torpor_filter_print(buf, size, "hooks in %s",
				   dir ? dir : "(unset)");
}

static const struct torpor_misc sleep_hooks_plugin = {
	.plugin = {
		.name = NAME,
		.description = "runs the system-sleep hooks before and after a hibernation, as systemd-sleep does",
		.config_keys = sleep_hooks_keys,
		.load = sleep_hooks_load,
		.print_debug_info = sleep_hooks_print_debug_info,
	},
	.sleep_event = sleep_hooks_event,
};

TORPOR_MISC_REGISTER(sleep_hooks_plugin)
