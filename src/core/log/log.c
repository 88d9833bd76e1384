/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static int max_level = TORPOR_LOG_NOTICE;
static const char *program = "torpor";
static FILE *tee;
static char *capture;
static size_t capture_size;
static bool capture_mute;

void
log_capture(char *buf, size_t size, bool mute)
{
	capture = size ? buf : NULL;
	capture_size = size;
	capture_mute = capture && mute;
	if (capture)
		capture[0] = '\0';
}

void
log_set_tee(FILE *f)
{
	tee = f;
}

void
log_set_max_level(int level)
{
	max_level = level;
}

int
log_get_max_level(void)
{
	return max_level;
}

bool
log_quiet(void)
{
	return max_level < TORPOR_LOG_NOTICE;
}

void
log_set_program(const char *name)
{
	program = name;
}

/* The one way out of the logger: to stderr with the program's prefix
 * (and the plugin's), to the tee unless bare, into the capture. */
static void
emit(int level, bool bare, const char *plugin, const char *fmt, va_list ap)
{
	char line[2048];
	int saved = errno;

	if (level > max_level && !(capture && level <= TORPOR_LOG_ERR))
		return;
	errno = saved;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (capture && level <= TORPOR_LOG_ERR && !capture[0])
		snprintf(capture, capture_size, "%s", line);
	if (capture_mute || level > max_level) {
		errno = saved;
		return;
	}
	if (bare) {
		fprintf(stderr, "%s\n", line);
		fflush(stderr);
		errno = saved;
		return;
	}
	if (plugin)
		fprintf(stderr, "%s: %s: %s\n", program, plugin, line);
	else
		fprintf(stderr, "%s: %s\n", program, line);
	if (tee && plugin)
		fprintf(tee, "%s: %s: %s\n", program, plugin, line);
	else if (tee)
		fprintf(tee, "%s: %s\n", program, line);
	errno = saved;
}

void
log_fullv(int level, const char *plugin, const char *fmt, va_list ap)
{
	emit(level, false, plugin, fmt, ap);
}

void
log_line(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, true, NULL, fmt, ap);
	va_end(ap);
}

void
log_full(int level, const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_fullv(level, plugin, fmt, ap);
	va_end(ap);
}

int
log_errno(int level, int r, const char *fmt, ...)
{
	va_list ap;

	if (r < 0)
		errno = -r;
	va_start(ap, fmt);
	log_fullv(level, NULL, fmt, ap);
	va_end(ap);
	return r < 0 ? r : -r;
}
