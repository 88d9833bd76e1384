/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpord: loads the configuration and the plugins once, checks them, and
 * serves torpor's requests on a Unix socket (doc/protocol.md), running
 * the hibernation cycle in-process.  Under systemd it is Type=notify and
 * socket-activated; by hand it makes its socket itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "torpor-build.h"

#include "log.h"
#include "torpord.h"

/* Connects waiting to be accepted on a socket we make (torpord.socket's
 * is systemd's default, SOMAXCONN): every turn of the loop takes them. */
#define LISTEN_BACKLOG TORPORD_MAX_CONNS

volatile sig_atomic_t torpord_got_hup, torpord_got_term, torpord_cancel;
static int signal_write_fd = -1;

/* sd_notify(3)'s protocol, by hand: one datagram to $NOTIFY_SOCKET. */
void
torpord_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* abstract */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		log_debug("sd_notify %s: %s", state, strerror(errno));
	close(fd);
}

static void
on_signal(int sig)
{
	int saved = errno;

	if (sig == SIGHUP)
		torpord_got_hup = 1;
	else
		torpord_got_term = 1;
	if (signal_write_fd >= 0) {
		ssize_t k = write(signal_write_fd, "", 1);

		(void)k;	/* the pipe is full: the loop wakes anyway */
	}
	errno = saved;
}

/* Handlers, not a blocked mask and signalfd: the mask would be inherited
 * by the programs plugins run (system-sleep hooks). */
static int
setup_signals(struct torpord *d)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	if (pipe2(d->signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return log_error_errno(-errno, "pipe: %m");
	signal_write_fd = d->signal_pipe[1];
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* The path systemd's socket is bound to, for status to name; else the
 * default stays. */
static void
name_activated_socket(struct torpord *d)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	size_t n;

	if (getsockname(d->listen_fd, (struct sockaddr *)&sa, &len) < 0 ||
	    sa.sun_family != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path))
		return;
	n = len - offsetof(struct sockaddr_un, sun_path);
	if (n > sizeof(sa.sun_path))
		n = sizeof(sa.sun_path);
	if (sa.sun_path[0] == '\0')
		return;	/* abstract */
	memcpy(d->socket_name, sa.sun_path, n);
	d->socket_name[n] = '\0';
	d->socket_path = d->socket_name;
}

/* LISTEN_FDS from systemd, for us: fd 3 is the socket. */
static int
activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct stat st;
	int fd = 3;

	if (!pid || !fds || strtol(pid, NULL, 10) != getpid())
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (strtol(fds, NULL, 10) != 1) {
		log_error("systemd passed %s sockets, expected 1", fds);
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		log_error("systemd passed fd 3, which is not a socket");
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* The socket's directory: made 0755 when missing; a symlink, a
 * non-directory, or one that others own or may write to is refused. */
static int
check_socket_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "could not create %s: %m", dir);
	if (lstat(dir, &st) < 0)
		return log_error_errno(-errno, "%s: %m", dir);
	if (!S_ISDIR(st.st_mode))
		return log_error_errno(-ENOTDIR, "%s is not a directory (a symlink?): refused", dir);
	/* Whoever may write there could put their own socket in our place. */
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return log_error_errno(-EPERM, "%s is not ours alone (owner %u, mode %03o): refused",
				       dir, (unsigned)st.st_uid,
				       (unsigned)(st.st_mode & 0777));
	return 0;
}

/* A socket already at path: a live daemon's (refused), or a stale one
 * (removed).  Anything else there is refused. */
static int
check_old_socket(const char *path, const struct sockaddr_un *sa, socklen_t len)
{
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : log_error_errno(-errno, "%s: %m", path);
	if (!S_ISSOCK(st.st_mode))
		return log_error_errno(-EEXIST, "%s exists and is not a socket: refused", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sa, len);
	close(fd);
	if (r == 0)
		return log_error_errno(-EADDRINUSE, "another torpord answers on %s", path);
	if (unlink(path) < 0)
		return log_error_errno(-errno, "could not remove the stale %s: %m", path);
	return 0;
}

static int
make_socket(struct torpord *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = strlen(d->socket_path);
	socklen_t len;
	mode_t old;
	int fd, r;

	if (plen >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "socket path too long: %s", d->socket_path);
	memcpy(sa.sun_path, d->socket_path, plen);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen + 1);
	r = check_socket_dir(d->socket_path);
	if (r >= 0)
		r = check_old_socket(d->socket_path, &sa, len);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(-errno, "socket: %m");
	/* Anyone may connect (0666): each request is authorised by itself. */
	old = umask(0111);
	r = bind(fd, (struct sockaddr *)&sa, len);
	umask(old);
	if (r < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		r = log_error_errno(-errno, "could not listen on %s: %m", d->socket_path);
		close(fd);
		return r;
	}
	d->socket_created = true;
	return fd;
}

static const struct option longs[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "socket", required_argument, NULL, 's' },
	{ "plugin-dir", required_argument, NULL, 'p' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

static void
usage(FILE *f)
{
	fprintf(f, "Usage: torpord [OPTIONS]\n\n"
		   "The torpor daemon: loads the configuration and plugins, serves\n"
		   "torpor's requests and runs the hibernation cycle.\n\n"
		   "  -c, --config FILE      configuration (default " TORPOR_DEFAULT_CONFIG ")\n"
		   "  -s, --socket PATH      socket (default " PROTOCOL_DEFAULT_SOCKET ")\n"
		   "  -p, --plugin-dir DIR   plugin directory\n"
		   "  -v, --verbose          say more (repeat for debug)\n"
		   "  -h, --help             this help\n"
		   "  -V, --version          the version\n");
}

/* -1: go on; else the exit status. */
static int
parse_args(struct torpord *d, int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "c:s:p:vhV", longs, NULL)) != -1) {
		switch (c) {
		case 'c':
			d->config_path = optarg;
			break;
		case 's':
			d->socket_path = optarg;
			break;
		case 'p':
			d->plugin_dir = optarg;
			break;
		case 'v':
			log_set_max_level(log_get_max_level() + 1);
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		case 'V':
			printf("torpord %s\n", TORPOR_VERSION);
			return EXIT_SUCCESS;
		default:
			fprintf(stderr, "Try 'torpord --help'.\n");
			return EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'", argv[optind]);
		return EXIT_FAILURE;
	}
	return -1;
}

static void
serve(struct torpord *d)
{
	while (!torpord_got_term) {
		if (torpord_got_hup) {
			torpord_got_hup = 0;
			torpord_notify("RELOADING=1");
			log_notice("SIGHUP: reloading the configuration");
			torpord_load(d);
			torpord_notify("READY=1");
		}
		conn_serve(d, conn_next_timeout(d));
		if (d->pending)
			request_run_cycle(d);
	}
	log_notice("stopping");
	torpord_notify("STOPPING=1");
}

int
main(int argc, char **argv)
{
	struct torpord d = {
		.listen_fd = -1,
		.signal_pipe = { -1, -1 },
		.socket_path = PROTOCOL_DEFAULT_SOCKET,
		.pending_after = -1,
	};
	int r;

	log_set_program("torpord");
	r = parse_args(&d, argc, argv);
	if (r >= 0)
		return r;
	if (setup_signals(&d) < 0)
		return EXIT_FAILURE;
	d.listen_fd = activated_socket();
	if (d.listen_fd >= 0)
		name_activated_socket(&d);
	else
		d.listen_fd = make_socket(&d);
	if (d.listen_fd < 0)
		return EXIT_FAILURE;
	/* A broken configuration does not stop the daemon: it says why to
	 * every request until a reload succeeds. */
	if (torpord_load(&d) < 0)
		log_error("no valid configuration yet: fix it and reload");
	log_notice("serving on %s", d.socket_path);
	torpord_notify("READY=1");
	serve(&d);
	while (d.conns) {
		conn_close(&d, d.conns);
		conn_serve(&d, 0);
	}
	torpord_unload(&d);
	free(d.good_text);
	if (d.socket_created)
		unlink(d.socket_path);
	close(d.listen_fd);
	return EXIT_SUCCESS;
}
