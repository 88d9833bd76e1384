/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging for the programs: one line per message on stderr. */
#ifndef TORPOR_LOG_H
#define TORPOR_LOG_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <torpor/plugin.h>

/* Messages above this level are dropped (default TORPOR_LOG_NOTICE). */
void log_set_max_level(int level);
int log_get_max_level(void);

/* -q: only errors are shown (the level is below notices), so reports
 * that are not messages (phase lines, summaries) stay out too. */
bool log_quiet(void);

/* Prefix for every line, e.g. "torpor-resume" (default "torpor"). */
void log_set_program(const char *name);

/* Also write every line logged to f (NULL: stop), e.g. a memory stream
 * that torpord sends to the client whose request is running. */
void log_set_tee(FILE *f);

/*
 * While buf is set, the text of the first message at TORPOR_LOG_ERR or
 * more urgent goes into buf (size bytes; the caller empties buf to catch
 * the next one: the first says most, later ones add context), and with mute
 * nothing is printed at all: a report that says the reason itself
 * (torpor status).  log_capture(NULL, 0, false) ends it.
 */
void log_capture(char *buf, size_t size, bool mute);

void log_full(int level, const char *plugin, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_fullv(int level, const char *plugin, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * A line of its own, without the program's prefix, for a report a person
 * reads as it comes ("hibernate: 40% ...", the phase times, the
 * footprint): the level and the capture apply as to any message, the tee
 * does not (torpord prints these for its journal while the client, frozen
 * with the rest of user space, could not read them).
 */
void log_line(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Log, then return the negative errno r (errno is set to -r for %m). */
int log_errno(int level, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_error(...)   log_full(TORPOR_LOG_ERR, NULL, __VA_ARGS__)
#define log_warning(...) log_full(TORPOR_LOG_WARNING, NULL, __VA_ARGS__)
#define log_notice(...)  log_full(TORPOR_LOG_NOTICE, NULL, __VA_ARGS__)
#define log_info(...)    log_full(TORPOR_LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(...)   log_full(TORPOR_LOG_DEBUG, NULL, __VA_ARGS__)
#define log_error_errno(r, ...) log_errno(TORPOR_LOG_ERR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_errno(TORPOR_LOG_WARNING, (r), __VA_ARGS__)

#endif
