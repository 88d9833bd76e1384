/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor setup --undo: give the machine back to the kernel's own
 * hibernation.
 *
 *   torpor setup --undo [--dry-run] [--yes] [--keep-config] [--root DIR]
 *
 * Puts back the configuration setup replaced (its .bak), or removes it
 * when setup found none: without a configuration torpor's initramfs hooks
 * do nothing, and the dracut configuration torpor installs no longer
 * leaves dracut's resume module out.  Gives initramfs-tools' RESUME= (in
 * /etc/initramfs-tools/conf.d/resume) the swap area again where the
 * README's manual steps set it to none, rebuilds the initramfs, and says
 * which words the kernel's own resume needs on the command line, since
 * the boot loader is not edited.  --keep-config is for the package's
 * prerm: the configuration stays (a removed package keeps it until purge)
 * and the initramfs is left to the update-initramfs trigger that runs
 * once the hooks are gone.
 *
 * Every file it replaces or removes lies in a directory that root alone
 * may write, and is a regular file of root's (never through a symbolic
 * link): a local user must not be able to make root put their file in
 * place of the configuration or the initramfs's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "kernel-location.h"
#include "log.h"
#include "setup.h"
#include "sysroot.h"

#define RESUME_CONF_DIR	"/etc/initramfs-tools/conf.d"
#define RESUME_CONF	"resume"

struct undo {
	struct setup *st;

	/* the configuration: its directory (-1: none), its name there */
	int conf_dfd;
	char conf_dir[PATH_MAX], conf_base[NAME_MAX + 1], bak_base[NAME_MAX + 1];
	bool has_conf, has_bak, bak_by_setup;
	bool swap_writer;		/* writer = swap */
	char image_file[PATH_MAX];	/* [file] path, "" none */

	/* what the kernel's own resume needs on the command line, "" none */
	char kernel_words[1024];
	char resume_value[512];		/* the resume= word's value */
	bool words_needed;

	/* initramfs-tools' resume configuration: directory (-1: none) */
	int resume_dfd;
	char resume_path[PATH_MAX];
	char resume_old[4096];		/* its text */
	char resume_line[256];		/* the RESUME=none line found, "" none */
	char *resume_new;		/* the text to write, NULL: leave it */
	bool resume_remove;		/* nothing but RESUME=none: remove it */

	bool has_generator, dracut;
};

/* dir opened without following a symbolic link at its last step, and
 * refused unless root (or this process's owner, for a dry run) alone may
 * write there.  -ENOENT, not said, when it does not exist. */
static int
open_owned_dir(const char *dir)
{
	struct stat sb;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0)
		return log_error_errno(-errno, "setup: cannot open the directory %s (a symbolic link is refused): %m",
				       dir);
	if (fstat(fd, &sb) < 0) {
		int r = log_error_errno(-errno, "setup: %s: %m", dir);

		close(fd);
		return r;
	}
	if ((sb.st_uid != 0 && sb.st_uid != geteuid()) || (sb.st_mode & 022)) {
		log_error("setup: %s is not root's alone (owner %u, mode %03o): refused; nothing was changed",
			  dir, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 0777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* base in dfd: 1 a regular file of root's, 0 none; refused (said)
 * otherwise. */
static int
regular_at(int dfd, const char *base, const char *dir)
{
	struct stat sb;

	if (fstatat(dfd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 :
		       log_error_errno(-errno, "setup: %s/%s: %m", dir, base);
	if (!S_ISREG(sb.st_mode)) {
		log_error("setup: refusing to touch %s/%s: it is not a regular file (a symbolic link?); nothing was changed",
			  dir, base);
		return -EPERM;
	}
	if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
		log_error("setup: refusing to touch %s/%s: it belongs to user %u, not root; nothing was changed",
			  dir, base, (unsigned)sb.st_uid);
		return -EPERM;
	}
	return 1;
}

/* base in dfd (never through a symbolic link), NUL-ended; with whole,
 * -EFBIG when it does not fit, else its start. */
static int
read_at(int dfd, const char *base, char *buf, size_t size, bool whole)
{
	char more;
	int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (read_bounded(fd, buf, size) + 1 == size && whole &&
	    read(fd, &more, 1) == 1) {
		close(fd);
		return -EFBIG;
	}
	close(fd);
	return 0;
}

/* The configuration and its .bak; what the current one names. */
static int
plan_config(struct undo *u)
{
	struct setup *st = u->st;
	struct torpor_config *c = NULL;
	const char *slash = strrchr(st->conf_path, '/');
	char head[64];
	int r;

	if (!slash || !slash[1] || strlen(slash + 1) + 5 > NAME_MAX) {
		log_error("setup: '%s' does not name a file", st->conf_path);
		return -EINVAL;
	}
	snprintf(u->conf_dir, sizeof(u->conf_dir), "%.*s",
		 (int)(slash - st->conf_path), st->conf_path);
	if (!u->conf_dir[0])
		snprintf(u->conf_dir, sizeof(u->conf_dir), "/");
	snprintf(u->conf_base, sizeof(u->conf_base), "%s", slash + 1);
	snprintf(u->bak_base, sizeof(u->bak_base), "%s.bak", slash + 1);
	u->conf_dfd = open_owned_dir(u->conf_dir);
	if (u->conf_dfd == -ENOENT)
		return 0;
	if (u->conf_dfd < 0)
		return u->conf_dfd;
	r = regular_at(u->conf_dfd, u->conf_base, u->conf_dir);
	if (r < 0)
		return r;
	u->has_conf = r;
	r = regular_at(u->conf_dfd, u->bak_base, u->conf_dir);
	if (r < 0)
		return r;
	u->has_bak = r;
	if (u->has_bak && read_at(u->conf_dfd, u->bak_base, head, sizeof(head), false) == 0)
		u->bak_by_setup = strncmp(head, SETUP_WRITTEN_BY,
					  strlen(SETUP_WRITTEN_BY)) == 0;
	if (!u->has_conf)
		return 0;

	/* What the image's place was: for the kernel's own resume a swap
	 * area's words stay right; the file and raw writers' are torpor's. */
	if (config_load(st->conf_path, false, &c) < 0) {
		log_warning("setup: %s cannot be read: the words of the swap area are not known",
			    st->conf_path);
		return 0;
	}
	u->swap_writer = c->writer && strcmp(c->writer, "swap") == 0;
	if (c->writer && strcmp(c->writer, "file") == 0 && config_get(c, "file", "path"))
		snprintf(u->image_file, sizeof(u->image_file), "%s",
			 config_get(c, "file", "path"));
	config_free(c);
	if (location_of(st, st->conf_path) < 0)
		log_warning("setup: 'torpor resume-args' could not name the image's location: the words of the swap area are not known");
	return 0;
}

/* The value of the resume= word of words, into buf. */
static void
resume_value(const char *words, char *buf, size_t size)
{
	const char *p = strstr(words, "resume=");

	buf[0] = '\0';
	if (p && (p == words || p[-1] == ' '))
		snprintf(buf, size, "%.*s", (int)strcspn(p + 7, " "), p + 7);
}

/* A RESUME=none line (quoted or not), as the README's manual steps
 * write it. */
static bool
is_resume_none(const char *line, size_t n)
{
	static const char *const forms[] = {
		"RESUME=none", "RESUME=\"none\"", "RESUME='none'",
	};

	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (n == strlen(forms[i]) && memcmp(line, forms[i], n) == 0)
			return true;
	return false;
}

/* initramfs-tools' RESUME=none replaced by the swap area (or dropped,
 * when none is known: initramfs-tools then takes the largest swap). */
static int
plan_resume_conf(struct undo *u)
{
	const char *p;
	size_t used = 0, size;
	bool other = false;
	int r;

	sysroot_path(RESUME_CONF_DIR, u->resume_path, sizeof(u->resume_path));
	u->resume_dfd = open_owned_dir(u->resume_path);
	if (u->resume_dfd == -ENOENT)
		return 0;
	if (u->resume_dfd < 0)
		return u->resume_dfd;
	r = regular_at(u->resume_dfd, RESUME_CONF, u->resume_path);
	if (r <= 0)
		return r;
	snprintf(u->resume_path + strlen(u->resume_path),
		 sizeof(u->resume_path) - strlen(u->resume_path), "/%s", RESUME_CONF);
	r = read_at(u->resume_dfd, RESUME_CONF, u->resume_old, sizeof(u->resume_old), true);
	if (r < 0)
		return log_error_errno(r, "setup: cannot read %s: %m", u->resume_path);
	size = strlen(u->resume_old) + sizeof(u->resume_value) + 16;
	u->resume_new = calloc(1, size);
	if (!u->resume_new)
		return -ENOMEM;
	for (p = u->resume_old; *p; ) {
		size_t n = strcspn(p, "\n");
		size_t lead = strspn(p, " \t");

		if (is_resume_none(p, n) && !u->resume_line[0]) {
			snprintf(u->resume_line, sizeof(u->resume_line), "%.*s", (int)n, p);
			if (u->resume_value[0])
				used += (size_t)snprintf(u->resume_new + used, size - used,
							 "RESUME=%s\n", u->resume_value);
		} else {
			used += (size_t)snprintf(u->resume_new + used, size - used,
						 "%.*s\n", (int)n, p);
			if (lead < n && p[lead] != '#')
				other = true;
		}
		p += n + (p[n] == '\n');
	}
	if (!u->resume_line[0]) {
		free(u->resume_new);
		u->resume_new = NULL;
	} else {
		u->resume_remove = !u->resume_value[0] && !other;
	}
	return 0;
}

/* What the kernel's own resume needs from the command line. */
static void
plan_words(struct undo *u)
{
	const char *w = u->st->words;

	if (!u->swap_writer || !w[0])
		return;
	snprintf(u->kernel_words, sizeof(u->kernel_words), "%s", w);
	resume_value(w, u->resume_value, sizeof(u->resume_value));
	/* A swap file's place is found from the command line alone;
	 * dracut's resume module (and the initrd's systemd) want resume=
	 * for a partition too, initramfs-tools has RESUME=. */
	u->words_needed = kernel_location_words_needed(w) || u->dracut;
}

/* One command line against the words the kernel's own resume needs. */
static void
judge_line(const struct undo *u, const char *where, const char *cmdline)
{
	char found[1024];

	location_words(cmdline, found, sizeof(found));
	if (u->words_needed && strcmp(found, u->kernel_words) == 0)
		printf("setup: %s has '%s': keep it\n", where, found);
	else if (u->words_needed)
		printf("setup: %s %s%s%s: add '%s' for the kernel's own resume\n",
		       where, found[0] ? "has '" : "has no resume= word",
		       found, found[0] ? "' instead" : "", u->kernel_words);
	else if (found[0] && !u->swap_writer && strcmp(found, u->st->words) == 0)
		printf("setup: %s has '%s': remove it: it names torpor's image, not a swap area\n",
		       where, found);
}

/* The running kernel's command line and the next boot's: what the user
 * must change by hand (nothing edits the boot loader). */
static void
say_boot_loader(const struct undo *u)
{
	char text[4096];

	if (sysroot_read("/proc/cmdline", text, sizeof(text)) >= 0)
		judge_line(u, "the running kernel's command line", text);
	if (grub_cmdline(text, sizeof(text)) == 0)
		judge_line(u, "GRUB_CMDLINE_LINUX in /etc/default/grub (the next boot; edit it by hand, then run update-grub)",
			   text);
	else if (u->words_needed)
		printf("setup: no /etc/default/grub: add '%s' to your boot loader's kernel command line by hand\n",
		       u->kernel_words);
	if (u->kernel_words[0] && !u->words_needed)
		printf("setup: the kernel's own resume finds %s through initramfs-tools (RESUME=): no resume= word is needed\n",
		       u->resume_value);
}

static int
plan_undo(struct undo *u)
{
	struct setup *st = u->st;
	int r;

	if (!st->dry_run && geteuid() != 0) {
		log_error("setup: --undo changes the configuration and the initramfs, which needs root: sudo torpor setup --undo (--dry-run says what it would do)");
		return -EPERM;
	}
	u->has_generator = find_generator(st, false) == 0;
	u->dracut = u->has_generator && strstr(st->generator[0], "dracut");
	r = plan_config(u);
	if (r >= 0) {
		plan_words(u);
		r = plan_resume_conf(u);
	}
	return r;
}

static void
print_undo_plan(const struct undo *u)
{
	const struct setup *st = u->st;
	const char *would = st->dry_run ? "would " : "";

	if (!u->has_conf && !u->has_bak)
		printf("setup: no %s: torpor is not set up\n", st->conf_path);
	else if (st->keep_config)
		printf("setup: %s is kept (--keep-config)\n", st->conf_path);
	else if (u->has_bak)
		printf("setup: %sput back %s/%s as %s: the configuration from before setup%s\n",
		       would, u->conf_dir, u->bak_base, st->conf_path,
		       u->bak_by_setup ? ", itself written by an earlier torpor setup: torpor stays set up (run --undo again to remove it)" :
		       ": torpor stays set up as it was before");
	else
		printf("setup: %sremove %s (setup found none to keep): without it torpor's initramfs hooks do nothing\n",
		       would, st->conf_path);
	if (u->resume_new && u->resume_remove)
		printf("setup: %sremove %s (it says only '%s'): initramfs-tools then finds the swap area itself\n",
		       would, u->resume_path, u->resume_line);
	else if (u->resume_new && u->resume_value[0])
		printf("setup: %sreplace '%s' in %s with 'RESUME=%s'\n", would,
		       u->resume_line, u->resume_path, u->resume_value);
	else if (u->resume_new)
		printf("setup: %sdrop '%s' from %s: initramfs-tools then finds the swap area itself\n",
		       would, u->resume_line, u->resume_path);
	else if (u->resume_old[0])
		printf("setup: %s is left as it is (no RESUME=none in it)\n",
		       u->resume_path);
	if (st->keep_config)
		printf("setup: the initramfs is not rebuilt here: removing the package takes torpor's hooks away and rebuilds it (the update-initramfs trigger)\n");
	else if (u->has_generator)
		printf("setup: %srebuild the initramfs: %s %s %s %s\n", would,
		       st->generator[0], st->generator[1], st->generator[2],
		       st->generator[3]);
	else
		printf("setup: no initramfs generator (update-initramfs or dracut): no initramfs to rebuild\n");
}

/* The configuration: the .bak renamed over it, or it removed. */
static int
apply_config(const struct undo *u)
{
	const char *path = u->st->conf_path;

	if (u->st->keep_config || u->conf_dfd < 0)
		return 0;
	if (u->has_bak) {
		if (renameat(u->conf_dfd, u->bak_base, u->conf_dfd, u->conf_base) < 0)
			return log_error_errno(-errno, "setup: cannot put back %s/%s: %m",
					       u->conf_dir, u->bak_base);
		printf("setup: put back %s from its .bak\n", path);
	} else if (u->has_conf) {
		if (unlinkat(u->conf_dfd, u->conf_base, 0) < 0)
			return log_error_errno(-errno, "setup: cannot remove %s: %m", path);
		printf("setup: removed %s\n", path);
	}
	fsync(u->conf_dfd);
	return 0;
}

static int
apply_resume_conf(const struct undo *u)
{
	int r;

	if (!u->resume_new)
		return 0;
	if (u->resume_remove) {
		if (unlinkat(u->resume_dfd, RESUME_CONF, 0) < 0)
			return log_error_errno(-errno, "setup: cannot remove %s: %m",
					       u->resume_path);
		fsync(u->resume_dfd);
		printf("setup: removed %s\n", u->resume_path);
		return 0;
	}
	r = replace_file_at(u->resume_dfd, RESUME_CONF, u->resume_new,
			    u->resume_path);
	if (r >= 0)
		printf("setup: wrote %s\n", u->resume_path);
	return r;
}

/* What is left to the user once the rest is done. */
static void
say_left(const struct undo *u)
{
	say_boot_loader(u);
	if (u->image_file[0])
		printf("setup: the image file %s is left: remove it (rm) when nothing is stored there; purging the package removes /var/lib/torpor\n",
		       u->image_file);
	if (!u->st->keep_config)
		printf("setup: 'systemctl hibernate' goes through torpor while its systemd drop-ins are installed: remove the package (apt remove torpor), or the drop-ins of a meson install, to give it back to the kernel\n");
}

int
setup_undo(struct setup *st)
{
	struct undo u = { .st = st, .conf_dfd = -1, .resume_dfd = -1 };
	int r;

	r = plan_undo(&u);
	if (r >= 0) {
		print_undo_plan(&u);
		if (st->dry_run) {
			say_left(&u);
			printf("setup: dry run: nothing was changed\n");
		} else {
			r = confirm(st);
		}
	}
	if (r >= 0 && !st->dry_run) {
		r = apply_config(&u);
		if (r >= 0)
			r = apply_resume_conf(&u);
		if (r >= 0 && !st->keep_config && u.has_generator) {
			r = run_program(st->generator, NULL, 0);
			if (r != 0) {
				log_error("setup: %s failed (exit status %d): run it again once it is fixed",
					  st->generator[0], r);
				r = -EIO;
			}
		}
		if (r >= 0) {
			say_left(&u);
			printf("setup: undone\n");
		}
	}
	if (u.conf_dfd >= 0)
		close(u.conf_dfd);
	if (u.resume_dfd >= 0)
		close(u.resume_dfd);
	free(u.resume_new);
	return r;
}
