/* The 7z unit tests' folder, commands and archives (sevenzip_fixtures.h). */
#include "sevenzip_fixtures.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "containers/container.h"
#include "testutil.h"

char sz7_tmp[64];

void sz7_begin(const char *name)
{
	snprintf(sz7_tmp, sizeof(sz7_tmp), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(sz7_tmp)) {
		perror("mkdtemp");
		exit(1);
	}
	sz7_sh("mkdir -p %s/src", sz7_tmp);
}

void sz7_end(void)
{
	sz7_sh("rm -rf %s", sz7_tmp);
}

void sz7_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "command failed: %s\n", cmd);
		exit(1);
	}
}

void sz7_write(const char *rel, const uint8_t *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/src/%s", sz7_tmp, rel);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

uint8_t *sz7_src(const char *rel, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/src/%s", sz7_tmp, rel);
	return tu_read_file(path, len);
}

int sz7_parse(const uint8_t *a, size_t len, const struct cont_sink *sink)
{
	struct src *in = src_from_mem(a, len);
	int err = in ? cont_7z.parse(in, sink, NULL) : -ENOMEM;

	src_free(in);
	return err;
}

uint8_t *sz7_make(const char *name, const char *switches, const char *files, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", sz7_tmp, name);
	unlink(path);
	sz7_sh("cd %s/src && LC_ALL=C.UTF-8 7zz a -bd -bso0 -bsp0 -y %s %s %s", sz7_tmp, switches,
	       path, files);
	return tu_read_file(path, len);
}
