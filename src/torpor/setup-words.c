/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel command line words of the image's location (torpor
 * resume-args), and what the running kernel's command line and GRUB's
 * have of them: which are needed, which are in the way.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kernel-location.h"
#include "log.h"
#include "setup.h"
#include "sysroot.h"

int
location_of(struct setup *st, const char *conf)
{
	static const char *const words[] = { "resume-args", "--location", NULL };
	int r = setup_run_self(st, conf, words, st->words, sizeof(st->words));

	st->words[strcspn(st->words, "\n")] = '\0';
	if (r != 0 || !st->words[0]) {
		st->words[0] = '\0';
		return -EINVAL;
	}
	return 0;
}

/* The location's words for the configuration conf, said with whether the
 * command line needs them. */
int
setup_resume_words(struct setup *st, const char *conf)
{
	if (location_of(st, conf) < 0) {
		log_warning("setup: 'torpor resume-args' could not name the resume location");
		return -EINVAL;
	}
	printf("setup: the image's location as kernel command line words (torpor resume-args): %s%s\n",
	       st->words, kernel_location_words_needed(st->words) ? "" :
	       "; not needed: torpor-resume reads it from the configuration in the initramfs");
	return 0;
}

/* The resume= and resume_offset= words of a command line, into buf. */
void
location_words(const char *cmdline, char *buf, size_t size)
{
	const char *p = cmdline;
	size_t used = 0;

	buf[0] = '\0';
	while (*p) {
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if ((strncmp(p, "resume=", 7) == 0 ||
		     strncmp(p, "resume_offset=", 14) == 0) && used + n + 2 < size)
			used += (size_t)snprintf(buf + used, size - used, "%s%.*s",
						 used ? " " : "", (int)n, p);
		p += n;
	}
}

/* What the location words of a command line mean (which ones are
 * needed: kernel_location_words_needed()). */
static void
judge_words(const struct setup *st, const char *where, const char *cmdline)
{
	bool needed = kernel_location_words_needed(st->words);
	char found[1024];

	location_words(cmdline, found, sizeof(found));
	if (needed && strcmp(found, st->words) == 0)
		printf("setup: %s has them\n", where);
	else if (needed)
		printf("setup: %s %s%s%s: it needs '%s'\n", where,
		       found[0] ? "has '" : "lacks them", found,
		       found[0] ? "' instead" : "", st->words);
	else if (!found[0])
		printf("setup: %s has no resume= word: good\n", where);
	else
		printf("setup: %s has '%s': remove it; %s\n", where, found,
		       strcmp(found, st->words) == 0 ?
		       "the generators' own resume step would wait for a swap signature torpor's image replaces" :
		       "torpor-resume would look for the image there");
}

/* GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub,
 * into buf; -ENOENT. */
int
grub_cmdline(char *buf, size_t size)
{
	char text[16384], *line, *save = NULL;
	size_t used = 0;

	if (sysroot_read("/etc/default/grub", text, sizeof(text)) < 0)
		return -ENOENT;
	buf[0] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " \t");
		if (strncmp(line, "GRUB_CMDLINE_LINUX=", 19) == 0)
			line += 19;
		else if (strncmp(line, "GRUB_CMDLINE_LINUX_DEFAULT=", 27) == 0)
			line += 27;
		else
			continue;
		line += strspn(line, "\"'");
		line[strcspn(line, "\"'")] = '\0';
		if (used + 1 < size)
			used += (size_t)snprintf(buf + used, size - used, " %s", line);
	}
	return 0;
}

/* The running kernel's words and the next boot's (grub); nothing is
 * edited. */
void
setup_check_boot_loader(const struct setup *st)
{
	char text[4096];

	if (!st->words[0])
		return;
	if (sysroot_read("/proc/cmdline", text, sizeof(text)) >= 0)
		judge_words(st, "the running kernel's command line", text);
	if (grub_cmdline(text, sizeof(text)) == 0)
		judge_words(st, "GRUB_CMDLINE_LINUX in /etc/default/grub (the next boot; setup does not edit it, run update-grub after a change)",
			    text);
	else if (kernel_location_words_needed(st->words))
		printf("setup: no /etc/default/grub: add '%s' to the kernel command line of your boot loader\n",
		       st->words);
}
