/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz the configuration reader: the input is a configuration file, read
 * through config_load() as `--config FILE` reads one (a memfd stands in
 * for the file).  What loads is looked up and printed back; the size
 * parser gets the same bytes as a value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "log.h"

static const char *const lookups[][2] = {
	{ "torpor", "filters" }, { "torpor", "writer" },
	{ "torpor", "threads" }, { "torpor", "snapshot" },
	{ "raw", "device" }, { "zlib", "level" }, { "", "" },
};

static void
parse_value(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	uint64_t v;

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	config_parse_size(s, &v);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct torpor_config *c = NULL;
	char path[64];
	int fd;

	if (!null) {
		log_set_max_level(getenv("FUZZ_VERBOSE") ? TORPOR_LOG_DEBUG : 0);
		null = fopen("/dev/null", "we");
		if (!null)
			abort();
	}
	fd = memfd_create("fuzz-config", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (config_load(path, false, &c) == 0) {
		if (!c)
			abort();
		for (size_t i = 0; i < sizeof(lookups) / sizeof(lookups[0]); i++)
			config_get(c, lookups[i][0], lookups[i][1]);
		config_dump(c, NULL, null);
		config_free(c);
	}
	close(fd);
	if (size < 64)
		parse_value(data, size);
	return 0;
}

static const char *const seeds[] = {
	"[torpor]\nfilters = checksum lzo\nwriter = swap\nthreads = 4\n"
	"snapshot = sim:64M:3\nafter = reboot\n\n[swap]\ndevice = UUID=0f1e\n",
	"# comment\n; other\n[torpor]\nfilters =\nwriter = raw\n"
	"[raw]\ndevice = /dev/vdb\n[zlib]\nlevel = 9\n",
	"[torpor]\nfilters = crypt, zlib\n[crypt]\nmode = keyfile\n"
	"key_file = /etc/torpor/crypt.keyfile\n[file]\npath = /swapfile\n"
	"size = 2G\n",
	"[torpor]\nimage_size = 512M\nplugin_dir = /usr/lib/torpor\n"
	"[checksum]\nalgorithm = sha256\n[sleep-hooks]\n",
};

size_t
fuzz_seed(unsigned int i, uint8_t *buf, size_t size)
{
	size_t len;

	if (i >= sizeof(seeds) / sizeof(seeds[0]))
		return 0;
	len = strlen(seeds[i]);
	if (len > size)
		return 0;
	memcpy(buf, seeds[i], len);
	return len;
}
