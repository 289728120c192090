/* The file list of tarseek-bench (see bench_list.h).  A list is read with getdelim(), so a
 * name may hold any byte but the separator; --unquote accepts the escapes `tar -t` prints.  A
 * sample walks the tree with openat()/fdopendir() from the root down, never following a link,
 * then sorts before drawing so that directory order does not change the draw.
 */
#include "tools/bench/bench_list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tools/bench/bench.h"
#include "tools/bench/bench_stats.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"

/* GNU tar's unquoting of a name read with --unquote: \\ \n \t \r \a \b \f \v \ooo. */
static void unquote(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r != '\\' || !r[1]) {
			*w++ = *r;
			continue;
		}
		r++;
		switch (*r) {
		case 'n':
			*w++ = '\n';
			break;
		case 't':
			*w++ = '\t';
			break;
		case 'r':
			*w++ = '\r';
			break;
		case 'a':
			*w++ = '\a';
			break;
		case 'b':
			*w++ = '\b';
			break;
		case 'f':
			*w++ = '\f';
			break;
		case 'v':
			*w++ = '\v';
			break;
		default:
			if (*r >= '0' && *r <= '7') {
				int v = 0;

				for (int i = 0; i < 3 && *r >= '0' && *r <= '7'; i++, r++)
					v = v * 8 + (*r - '0');
				r--;
				*w++ = (char)v;
			} else {
				*w++ = *r; /* \\ and any other escaped character */
			}
		}
	}
	*w = '\0';
}

static void add_file(struct bench *b, const char *path, size_t *cap)
{
	while (*path == '/')
		path++; /* names are relative to the root, as tar strips leading slashes */
	if (!*path)
		return;
	if (b->nfiles == *cap) {
		*cap = *cap ? 2 * *cap : 1024;
		b->files = bench_xrealloc(b->files, *cap * sizeof(*b->files));
	}
	b->files[b->nfiles++] = bench_xstrdup(path);
}

int bench_list_load(struct bench *b)
{
	char sep = b->o.null ? '\0' : '\n';
	FILE *f = strcmp(b->o.list, "-") ? fopen(b->o.list, "re") : stdin;
	char *line = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;

	if (!f) {
		fprintf(stderr, "tarseek-bench: --list %s: %s\n", b->o.list, strerror(errno));
		return -errno;
	}
	while ((n = getdelim(&line, &len, sep, f)) > 0) {
		if (line[n - 1] == sep)
			line[n - 1] = '\0';
		if (b->o.unquote)
			unquote(line);
		add_file(b, line, &cap);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (!b->nfiles) {
		fprintf(stderr, "tarseek-bench: --list %s names no files\n", b->o.list);
		return -EINVAL;
	}
	return 0;
}

struct walk {
	char **paths;
	size_t n, cap;
	size_t errors;
	int sizes_only; /* sum the regular files' sizes into bytes, keep no paths */
	uint64_t bytes;
};

/* Collects the regular files under dirfd (path prefix `rel`, "" at the root).  Symbolic
 * links are not followed: a link to a file is not a member file of its own. */
static void walk_dir(struct walk *w, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;

	if (!d) {
		close(dirfd);
		w->errors++;
		return;
	}
	while ((e = readdir(d))) {
		unsigned char type = e->d_type;
		char *path;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (type == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				w->errors++;
				continue;
			}
			type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : DT_LNK;
		}
		if (type != DT_REG && type != DT_DIR)
			continue;
		if (type == DT_REG && w->sizes_only) {
			struct stat st;

			if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				w->errors++;
			else if (S_ISREG(st.st_mode))
				w->bytes += (uint64_t)st.st_size;
			continue;
		}
		path = *rel ? bench_xasprintf("%s/%s", rel, e->d_name) : bench_xstrdup(e->d_name);
		if (type == DT_DIR) {
			int fd = openat(dirfd, e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0)
				w->errors++;
			else
				walk_dir(w, fd, path);
			free(path);
			continue;
		}
		if (w->n == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 4096;
			w->paths = bench_xrealloc(w->paths, w->cap * sizeof(*w->paths));
		}
		w->paths[w->n++] = path;
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int bench_list_sample(struct bench *b, const char *root)
{
	struct walk w = {0};
	size_t *pick, cap = 0;
	long got;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		bench_err("cannot read %s: %s", root, strerror(errno));
		return -errno;
	}
	walk_dir(&w, fd, "");
	if (w.errors)
		bench_warn("%zu entries of %s could not be read while drawing the sample", w.errors,
			   root);
	if (!w.n) {
		bench_err("%s holds no regular files to sample", root);
		free(w.paths);
		return -ENOENT;
	}
	qsort(w.paths, w.n, sizeof(*w.paths), cmp_str);
	pick = bench_xmalloc((b->o.sample < w.n ? b->o.sample : w.n) * sizeof(*pick));
	got = bench_sample(&b->rng, w.n, b->o.sample, pick);
	if (got < 0)
		bench_oom();
	if ((size_t)got < b->o.sample)
		bench_warn("--sample %zu: the tree has only %zu regular files; taking them all",
			   b->o.sample, w.n);
	for (long i = 0; i < got; i++)
		add_file(b, w.paths[pick[i]], &cap);
	for (size_t i = 0; i < w.n; i++)
		free(w.paths[i]);
	free(w.paths);
	free(pick);
	return 0;
}

int bench_list_tree_size(const char *root, uint64_t *bytes)
{
	struct walk w = {.sizes_only = 1};
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*bytes = 0;
	if (fd < 0)
		return -errno;
	walk_dir(&w, fd, "");
	*bytes = w.bytes;
	return w.errors ? -EIO : 0;
}
