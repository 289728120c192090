/* The mount table (see mountinfo.h).  A line is "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...", the
 * mount point with octal escapes for space, tab, newline and backslash (proc(5)). */
#include "common/mountinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Undoes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash) in
 * place. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Reads the whole of fd from offset 0 into a malloc'd, NUL-terminated buffer (NULL, errno
 * set, on failure). */
static char *read_all(int fd)
{
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap), *nbuf;
	ssize_t n;

	if (!buf)
		return NULL;
	if (lseek(fd, 0, SEEK_SET) < 0)
		goto fail;
	for (;;) {
		if (cap - len < 4096) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf)
				goto fail;
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (!n)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
fail:
	free(buf);
	return NULL;
}

int mountinfo_has(int fd, const char *path, const dev_t *dev)
{
	char *text = read_all(fd), *line, *save = NULL;
	int found = 0;

	if (!text)
		return errno ? -errno : -EIO;
	for (line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *p = line;
		unsigned maj, min;

		for (int i = 0; i < 5; i++) { /* the first five fields, cut at spaces */
			f[i] = p;
			p = p ? strchr(p, ' ') : NULL;
			if (p)
				*p++ = '\0';
		}
		if (!f[4])
			continue;
		unescape(f[4]);
		found = !strcmp(f[4], path) &&
			(!dev || (sscanf(f[2], "%u:%u", &maj, &min) == 2 && maj == major(*dev) &&
				  min == minor(*dev)));
	}
	free(text);
	return found;
}
