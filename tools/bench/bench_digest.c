/* The digest pass of tarseek-bench (see bench_digest.h).  Both ways of computing a digest fill
 * the same `struct one` (the bytes, or an error message), so recording and comparing do not
 * care which was used.  --exec is spawned with posix_spawn and a pipe; its output is read up
 * to 511 bytes and the rest drained, so a chatty program cannot block on a full pipe.
 */
#include "tools/bench/bench_digest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/bench/bench.h"
#include "tools/bench/bench_cfg.h"
#include "tools/bench/bench_mount.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"
#include "common/clock.h"
#include "tools/bench/md5.h"

extern char **environ;

struct one {
	uint8_t bytes[BENCH_MAX_DIGEST];
	size_t len;
	char error[256];
};

static int digest_inproc(struct bench *b, int rootfd, const char *path, struct one *r)
{
	struct bench_md5_ctx ctx;
	ssize_t n;
	int ret, saved;
	int fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		saved = errno;
		goto fail;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ret = bench_md5_init(&ctx);
	if (ret) {
		saved = -ret;
		goto out_close;
	}
	while ((n = read(fd, b->buf, BENCH_READ_BUF)) != 0) {
		if (n < 0) {
			if (errno == EINTR && !bench_interrupted)
				continue;
			saved = errno;
			bench_md5_final(&ctx, r->bytes);
			goto out_close;
		}
		bench_md5_update(&ctx, b->buf, (size_t)n);
	}
	close(fd);
	ret = bench_md5_final(&ctx, r->bytes);
	if (ret) {
		saved = -ret;
		goto fail;
	}
	r->len = MD5_DIGEST_LEN;
	return 0;
out_close:
	close(fd);
fail:
	snprintf(r->error, sizeof(r->error), "%s", strerror(saved));
	return -1;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Runs `exec... ./path` with the mount as its working directory and parses "HEX  name" (a
 * leading backslash, md5sum's mark for an escaped name, is skipped). */
static int digest_exec(struct bench *b, int rootfd, const char *path, struct one *r)
{
	posix_spawn_file_actions_t fa;
	char out[512], *rel = bench_xasprintf("./%s", path), **argv;
	size_t nargs = 0, len = 0, k = 0;
	int pipefd[2], status, ret = -1;
	ssize_t n;
	pid_t pid;

	while (b->o.exec_argv[nargs])
		nargs++;
	argv = bench_xcalloc(nargs + 2, sizeof(*argv));
	memcpy(argv, b->o.exec_argv, nargs * sizeof(*argv));
	argv[nargs] = rel;
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		snprintf(r->error, sizeof(r->error), "pipe: %s", strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addfchdir_np(&fa, rootfd);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (ret) {
		close(pipefd[0]);
		snprintf(r->error, sizeof(r->error), "cannot run %s: %s", argv[0], strerror(ret));
		ret = -1;
		goto out;
	}
	while ((n = read(pipefd[0], out + len, sizeof(out) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
		if (len == sizeof(out) - 1) {
			char sink[4096];

			while (read(pipefd[0], sink, sizeof(sink)) > 0)
				; /* the rest of a chatty output */
			break;
		}
	}
	out[len] = '\0';
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	ret = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		char *nl = strchr(out, '\n');

		if (nl)
			*nl = '\0';
		snprintf(r->error, sizeof(r->error), "%s failed (%s %d)%s%.160s", argv[0],
			 WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			 *out ? ": " : "", out);
		goto out;
	}
	const char *p = out + (out[0] == '\\');

	for (; hexval(p[0]) >= 0 && hexval(p[1]) >= 0 && k < BENCH_MAX_DIGEST; p += 2)
		r->bytes[k++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
	if (k < 4 || (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\0')) {
		snprintf(r->error, sizeof(r->error), "%s printed no digest", argv[0]);
		goto out;
	}
	r->len = k;
	ret = 0;
out:
	free(argv);
	free(rel);
	return ret;
}

/* ---- the tree walks: grep -r and tar -c ---- */

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* md5 of the lines of out (len bytes, NUL-terminated), sorted: the tools list the tree in
 * readdir order, which is the file system's. */
static int sorted_lines_md5(char *out, size_t len, uint8_t *digest)
{
	char *end = out + len, **lines;
	size_t n = 1, k = 0;
	struct bench_md5_ctx ctx;
	int ret;

	for (char *p = out; p < end; p++)
		n += *p == '\n';
	lines = bench_xcalloc(n, sizeof(*lines));
	for (char *p = out; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end; /* a last line without its newline (out[len] is a NUL) */
		*nl = '\0';
		lines[k++] = p;
		p = nl + 1;
	}
	qsort(lines, k, sizeof(*lines), cmp_lines);
	ret = bench_md5_init(&ctx);
	for (size_t i = 0; !ret && i < k; i++) {
		bench_md5_update(&ctx, lines[i], strlen(lines[i]));
		bench_md5_update(&ctx, "\n", 1);
	}
	if (!ret)
		ret = bench_md5_final(&ctx, digest);
	free(lines);
	return ret;
}

/* What tar -c writes, read as it comes: one line per member ("TYPE NAME SIZE MD5 LINK"), so
 * that two trees compare equal when they hold the same members, whatever order their
 * folders list them in.  Knows what GNU tar's default format writes: 512-byte headers,
 * octal or base-256 sizes, 'L'/'K' long names. */
struct tar_walk {
	uint8_t hdr[512];
	size_t have;	   /* bytes of hdr, or of the long name */
	uint64_t left;	   /* data bytes of the member still to come */
	uint64_t pad;	   /* padding bytes after them */
	int state;	   /* 0 header, 1 data, 2 long name, 3 long link, 4 after the end */
	char *long_name, *long_link;
	uint64_t size;
	char type;
	struct bench_md5_ctx md5;
	char *lines; /* the members' lines */
	size_t len, cap;
	int broken;
};

static uint64_t tar_number(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	if (p[0] & 0x80) { /* base-256 */
		for (size_t i = 1; i < n; i++)
			v = v << 8 | p[i];
		return v;
	}
	for (size_t i = 0; i < n && p[i] >= '0' && p[i] <= '7'; i++)
		v = v << 3 | (uint64_t)(p[i] - '0');
	return v;
}

static void tw_line(struct tar_walk *w, const char *fmt, ...)
{
	va_list ap;
	char *line;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (!line) {
		w->broken = 1;
		return;
	}
	size_t n = strlen(line);
	if (w->cap - w->len < n + 2) {
		w->cap = (w->cap + n + 2) * 2;
		w->lines = bench_xrealloc(w->lines, w->cap);
	}
	memcpy(w->lines + w->len, line, n);
	w->lines[w->len + n] = '\n';
	w->len += n + 1;
	w->lines[w->len] = '\0';
	free(line);
}

static void tw_member_done(struct tar_walk *w)
{
	uint8_t d[MD5_DIGEST_LEN];
	char hex[2 * MD5_DIGEST_LEN + 1], name[101], link[101];

	bench_md5_final(&w->md5, d);
	bench_md5_hex(d, sizeof(d), hex);
	snprintf(name, sizeof(name), "%.100s", (const char *)w->hdr);
	snprintf(link, sizeof(link), "%.100s", (const char *)w->hdr + 157);
	tw_line(w, "%c %s %" PRIu64 " %s %s", w->type, w->long_name ? w->long_name : name, w->size,
		hex, w->long_link ? w->long_link : link);
	free(w->long_name);
	free(w->long_link);
	w->long_name = w->long_link = NULL;
}

static void tw_feed(struct tar_walk *w, const uint8_t *p, size_t n)
{
	while (n && !w->broken) {
		if (w->pad && w->left == 0 && w->state != 4) { /* padding after data */
			size_t k = n < w->pad ? n : (size_t)w->pad;
			w->pad -= k, p += k, n -= k;
			continue;
		}
		if (w->state == 4)
			return; /* the zero blocks and the record's padding */
		if (w->state == 1 || w->state == 2 || w->state == 3) {
			size_t k = n < w->left ? n : (size_t)w->left;
			if (w->state == 1) {
				bench_md5_update(&w->md5, p, k);
			} else {
				char **dst = w->state == 2 ? &w->long_name : &w->long_link;
				*dst = bench_xrealloc(*dst, w->have + k + 1);
				memcpy(*dst + w->have, p, k);
				w->have += k;
				(*dst)[w->have] = '\0';
			}
			w->left -= k, p += k, n -= k;
			if (w->left == 0) {
				if (w->state == 1)
					tw_member_done(w);
				w->state = 0;
				w->have = 0;
			}
			continue;
		}
		size_t k = 512 - w->have < n ? 512 - w->have : n; /* a header */
		memcpy(w->hdr + w->have, p, k);
		w->have += k, p += k, n -= k;
		if (w->have < 512)
			continue;
		w->have = 0;
		bool zero = true;
		for (int i = 0; i < 512 && zero; i++)
			zero = w->hdr[i] == 0;
		if (zero) {
			w->state = 4;
			continue;
		}
		w->type = w->hdr[156] ? (char)w->hdr[156] : '0';
		w->size = tar_number(w->hdr + 124, 12);
		w->left = w->size;
		w->pad = (512 - w->size % 512) % 512;
		if (w->type == 'L' || w->type == 'K') {
			w->state = w->type == 'L' ? 2 : 3;
			if (w->state == 2)
				free(w->long_name), w->long_name = NULL;
			else
				free(w->long_link), w->long_link = NULL;
		} else {
			bench_md5_init(&w->md5);
			w->state = 1;
		}
		if (w->left == 0 && w->state == 1) {
			tw_member_done(w);
			w->state = 0;
		} else if (w->left == 0) {
			w->state = 0;
		}
	}
}

/* Runs the workload's tool in the root: grep's output (every line kept, then sorted and
 * hashed) or tar's (only counted); its stderr kept for the error message. */
static int digest_scan(struct bench *b, int rootfd, struct one *r)
{
	const char *grep_argv[] = {"grep", "-r", "-F", "-e", b->o.pattern, ".", NULL};
	/* every file with its bytes, hard links too: which of two links tar stores as a link
	 * depends on the order the folders list them in */
	const char *tar_argv[] = {"tar", "--hard-dereference", "-cf", "-", ".", NULL};
	char *const *argv = (char *const *)(b->o.workload == BENCH_W_GREP ? grep_argv : tar_argv);
	posix_spawn_file_actions_t fa;
	int outp[2], errp[2], status, ret;
	char err[256];
	size_t errlen = 0, len = 0, cap = 0;
	char *out = NULL;
	struct tar_walk tw = {0};
	pid_t pid;

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		snprintf(r->error, sizeof(r->error), "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addfchdir_np(&fa, rootfd);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, errp[1], STDERR_FILENO);
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(outp[1]);
	close(errp[1]);
	if (ret) {
		close(outp[0]);
		close(errp[0]);
		snprintf(r->error, sizeof(r->error), "cannot run %s: %s", argv[0], strerror(ret));
		return -1;
	}
	/* both pipes drained as they fill (not /dev/null: grep stops at the first match when
	 * its output goes nowhere, and tar does not read the files) */
	struct pollfd pf[2] = {{.fd = outp[0], .events = POLLIN}, {.fd = errp[0], .events = POLLIN}};
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR && !bench_interrupted)
				continue;
			break;
		}
		if (pf[0].revents) {
			if (b->o.workload == BENCH_W_GREP && cap - len < BENCH_READ_BUF + 1) {
				cap = cap ? cap * 2 : 4 * BENCH_READ_BUF;
				out = bench_xrealloc(out, cap);
			}
			ssize_t n = b->o.workload == BENCH_W_GREP
					? read(outp[0], out + len, cap - len - 1)
					: read(outp[0], b->buf, BENCH_READ_BUF);
			if (n > 0 && b->o.workload == BENCH_W_GREP)
				len += (size_t)n;
			else if (n > 0)
				tw_feed(&tw, b->buf, (size_t)n);
			else if (n == 0 || errno != EINTR)
				pf[0].fd = -1;
		}
		if (pf[1].revents) {
			char sink[1024];
			ssize_t n = read(errp[0], sink, sizeof(sink));
			if (n > 0 && errlen < sizeof(err) - 1) {
				size_t k = (size_t)n < sizeof(err) - 1 - errlen ? (size_t)n
										 : sizeof(err) - 1 - errlen;
				memcpy(err + errlen, sink, k);
				errlen += k;
			} else if (n == 0 || (n < 0 && errno != EINTR)) {
				pf[1].fd = -1;
			}
		}
	}
	close(outp[0]);
	close(errp[0]);
	err[errlen] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* grep: 0 found, 1 found nothing; tar: 0 */
	int worst = b->o.workload == BENCH_W_GREP ? 1 : 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > worst) {
		char *nl = strchr(err, '\n');
		if (nl)
			*nl = '\0';
		snprintf(r->error, sizeof(r->error), "%s failed (%s %d)%s%.160s", argv[0],
			 WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), *err ? ": " : "",
			 err);
		free(out);
		free(tw.lines);
		return -1;
	}
	if (b->o.workload == BENCH_W_TAR) { /* its members' lines, as grep's */
		free(tw.long_name);
		free(tw.long_link);
		if (tw.broken || tw.state != 4) {
			snprintf(r->error, sizeof(r->error), "tar wrote what is not a tar archive");
			free(tw.lines);
			return -1;
		}
		out = tw.lines;
		len = tw.len;
	}
	if (!out)
		out = bench_xmalloc(1);
	out[len] = '\0';
	ret = sorted_lines_md5(out, len, r->bytes);
	free(out);
	if (ret) {
		snprintf(r->error, sizeof(r->error), "md5: %s", strerror(-ret));
		return -1;
	}
	r->len = MD5_DIGEST_LEN;
	return 0;
}

static void record(struct bench_digest *d, int ok, const struct one *r)
{
	char a[2 * BENCH_MAX_DIGEST + 1], x[2 * BENCH_MAX_DIGEST + 1];

	switch (d->state) {
	case 0:
		if (ok) {
			d->state = 1;
			d->len = (uint8_t)r->len;
			memcpy(d->bytes, r->bytes, r->len);
		} else {
			d->state = 2;
			d->error = bench_xstrdup(r->error);
		}
		break;
	case 1:
		if (!ok) {
			d->state = 2;
			d->error =
			    bench_xasprintf("%s (in a later run; earlier runs read it)", r->error);
		} else if (r->len != d->len || memcmp(r->bytes, d->bytes, r->len)) {
			bench_md5_hex(d->bytes, d->len, a);
			bench_md5_hex(r->bytes, r->len, x);
			d->state = 2;
			d->error =
			    bench_xasprintf("the digest changed between runs: %s, later %s", a, x);
		}
		break;
	default:
		break; /* keep the first error */
	}
}

double bench_digest_pass(struct bench *b, struct bench_cfg *c, const char *label,
			 const size_t *order)
{
	const char *root = bench_cfg_root(c);
	size_t errors = 0, first_error = 0;
	struct one r;
	double t0, t;
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (rootfd < 0) {
		bench_err("%s: cannot open %s: %s", c->name, root, strerror(errno));
		for (size_t i = 0; i < b->nfiles; i++) {
			snprintf(r.error, sizeof(r.error), "cannot open the root %s: %s", root,
				 strerror(errno));
			record(&c->dig[i], 0, &r);
		}
		return NAN;
	}
	bench_ui_show(&b->ui, 1, "%s", label);
	t0 = mono_now();
	for (size_t k = 0; k < b->nfiles; k++) {
		size_t i = order ? order[k] : k;
		int ok;

		r.error[0] = '\0';
		if (b->o.workload != BENCH_W_MD5)
			ok = digest_scan(b, rootfd, &r) == 0;
		else if (b->o.exec_argv)
			ok = digest_exec(b, rootfd, b->files[i], &r) == 0;
		else
			ok = digest_inproc(b, rootfd, b->files[i], &r) == 0;
		if (bench_interrupted)
			break;
		if (!ok && !errors++)
			first_error = i;
		record(&c->dig[i], ok, &r);
		bench_ui_show(&b->ui, 0, "%s  %zu/%zu files  %.1f s", label, k + 1, b->nfiles,
			      mono_now() - t0);
	}
	t = mono_now() - t0;
	close(rootfd);
	if (bench_interrupted)
		return NAN;
	if (errors) {
		bench_warn("%s: %s: %zu of %zu files could not be read; the first: %s: %s", c->name,
			   label, errors, b->nfiles, b->files[first_error],
			   c->dig[first_error].error);
	}
	if (b->o.verbose)
		bench_info("%s: %s: %.3f s", c->name, label, t);
	return t;
}
