/* The digest pass of tarseek-bench (see bench_digest.h).  Both ways of computing a digest fill
 * the same `struct one` (the bytes, or an error message), so recording and comparing do not
 * care which was used.  --exec is spawned with posix_spawn and a pipe; its output is read up
 * to 511 bytes and the rest drained, so a chatty program cannot block on a full pipe.
 */
#include "bench_digest.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_cfg.h"
#include "bench_mount.h"
#include "bench_ui.h"
#include "bench_util.h"
#include "clock.h"
#include "md5.h"

extern char **environ;

struct one {
	uint8_t bytes[BENCH_MAX_DIGEST];
	size_t len;
	char error[256];
};

static int digest_inproc(struct bench *b, int rootfd, const char *path, struct one *r)
{
	struct md5_ctx ctx;
	ssize_t n;
	int ret, saved;
	int fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		saved = errno;
		goto fail;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ret = md5_init(&ctx);
	if (ret) {
		saved = -ret;
		goto out_close;
	}
	while ((n = read(fd, b->buf, BENCH_READ_BUF)) != 0) {
		if (n < 0) {
			if (errno == EINTR && !bench_interrupted)
				continue;
			saved = errno;
			md5_final(&ctx, r->bytes);
			goto out_close;
		}
		md5_update(&ctx, b->buf, (size_t)n);
	}
	close(fd);
	ret = md5_final(&ctx, r->bytes);
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
			md5_hex(d->bytes, d->len, a);
			md5_hex(r->bytes, r->len, x);
			d->state = 2;
			d->error =
			    bench_xasprintf("the digest changed between runs: %s, later %s", a, x);
		}
		break;
	default:
		break; /* keep the first error */
	}
}

double bench_digest_pass(struct bench *b, struct bench_cfg *c, const char *label)
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
	for (size_t i = 0; i < b->nfiles; i++) {
		int ok;

		r.error[0] = '\0';
		ok = (b->o.exec_argv ? digest_exec(b, rootfd, b->files[i], &r)
				     : digest_inproc(b, rootfd, b->files[i], &r)) == 0;
		if (bench_interrupted)
			break;
		if (!ok && !errors++)
			first_error = i;
		record(&c->dig[i], ok, &r);
		bench_ui_show(&b->ui, 0, "%s  %zu/%zu files  %.1f s", label, i + 1, b->nfiles,
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
