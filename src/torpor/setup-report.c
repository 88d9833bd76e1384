/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What torpor setup says besides its plan: the dry run, what logind
 * answers, and which kernel the next boot starts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "logind-view.h"
#include "setup.h"
#include "sysroot.h"
#include "write-all.h"

/* --dry-run: what would be done; the command line words from the
 * configuration in memory (a swap area exists already). */
int
setup_dry_run(struct setup *st)
{
	char conf[64];
	int fd;

	if (st->use_file)
		printf("setup: would create the image file %s (%" PRIu64 " MiB) as 'torpor file-setup' does; the kernel command line words are known once it exists\n",
		       st->file_path, st->file_size >> 20);
	printf("setup: would write %s (root's, 0644)%s\n", st->conf_path,
	       access(st->conf_path, F_OK) == 0 ? ", keeping the current one as .bak" : "");
	if (!st->use_file) {
		/* Inherited by the child: not close-on-exec. */
		fd = memfd_create("torpor.conf-setup", 0);
		if (fd >= 0 && write_all(fd, st->text, strlen(st->text)) == 0) {
			snprintf(conf, sizeof(conf), "/proc/%d/fd/%d", (int)getpid(), fd);
			if (setup_resume_words(st, conf) == 0)
				setup_check_boot_loader(st);
		}
		if (fd >= 0)
			close(fd);
	}
	printf("setup: would run %s %s %s %s, check the new initramfs and run 'torpor hibernate --direct --test'\n",
	       st->generator[0], st->generator[1], st->generator[2],
	       st->generator[3]);
	printf("setup: dry run: nothing was changed\n");
	return 0;
}

/* What logind answers now (desktops offer Hibernate only for "yes"). */
void
setup_print_logind(const struct setup *st)
{
	struct logind_view v;

	logind_view(&v, sysroot(), st->words);
	printf("setup: logind's CanHibernate: %s: %s\n", v.answer, v.why);
}

/* Which kernel the next boot starts, as torpor hibernate will judge it
 * (next-boot.h): whether it refuses is the next boot's, not the setup's.
 * The verdict, for apply(). */
enum next_boot_verdict
setup_print_next_boot(const struct setup *st)
{
	struct next_boot *nb = malloc(sizeof(*nb));
	enum next_boot_verdict v;

	if (!nb)
		return NEXT_BOOT_UNKNOWN;
	next_boot_plan(sysroot(), st->uts.release, nb);
	printf("setup: next boot: %s\n", nb->line);
	if (nb->verdict == NEXT_BOOT_REFUSE)
		printf("setup: until then torpor hibernate refuses: %s\n",
		       nb->fix);
	v = nb->verdict;
	free(nb);
	return v;
}
