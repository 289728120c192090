/* Each configuration's working files and mounts (see bench_cfg.h).  Everything a run creates
 * lives in one temporary folder, so one rmdir at the end tells whether anything was left
 * behind; the mechanics of a mount (spawn, readiness, unmount, RSS) are bench_mount.c's, this
 * file only says what to mount where and records the samples.
 */
#include "tools/bench/bench_cfg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "shadow/shadow.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_list.h"
#include "tools/bench/bench_mount.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"

/* 'it'\''s' for sh. */
static char *shell_quote(const char *s)
{
	size_t n = 2;
	char *q, *w;

	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	q = w = bench_xmalloc(n + 1);
	*w++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(w, "'\\''", 4);
			w += 4;
		} else {
			*w++ = *p;
		}
	}
	*w++ = '\'';
	*w = '\0';
	return q;
}

/* The mount command with {archive}, {mnt} and {index} replaced by shell-quoted paths. */
static char *expand_command(const struct bench_cfg *c)
{
	const char *keys[] = {"{archive}", "{mnt}", "{index}"};
	const char *vals[] = {c->source, c->mountpoint, c->index_path};
	size_t len = 0, cap = strlen(c->command) + 1;
	char *out = bench_xmalloc(cap);

	for (const char *p = c->command; *p;) {
		const char *add = NULL;
		char *quoted = NULL;
		size_t alen, klen = 0;

		for (int k = 0; k < 3; k++) {
			if (vals[k] && !strncmp(p, keys[k], strlen(keys[k]))) {
				quoted = shell_quote(vals[k]);
				klen = strlen(keys[k]);
				break;
			}
		}
		add = quoted ? quoted : p;
		alen = quoted ? strlen(quoted) : 1;
		if (len + alen + 1 > cap) {
			cap = 2 * (len + alen + 1);
			out = bench_xrealloc(out, cap);
		}
		memcpy(out + len, add, alen);
		len += alen;
		p += quoted ? klen : 1;
		free(quoted);
	}
	out[len] = '\0';
	return out;
}

static char *sanitize(const char *name)
{
	char *s = bench_xstrdup(name);

	for (char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			*p = '_';
	return s;
}

int bench_cfg_setup(struct bench *b)
{
	const char *t = getenv("TMPDIR");
	char *tmpl = bench_xasprintf("%s/tarseek-bench.XXXXXX", t && *t ? t : "/tmp"), *canon;
	char *index_dir;

	if (!mkdtemp(tmpl)) {
		bench_err("cannot create a temporary folder %s: %s", tmpl, strerror(errno));
		free(tmpl);
		return -errno;
	}
	canon = realpath(tmpl, NULL);
	free(tmpl);
	if (!canon)
		return -errno;
	b->tmpdir = canon;
	if (b->o.index_dir) {
		if (mkdir(b->o.index_dir, 0755) < 0 && errno != EEXIST) {
			bench_err("--index-dir %s: %s", b->o.index_dir, strerror(errno));
			return -errno;
		}
		index_dir = realpath(b->o.index_dir, NULL);
		if (!index_dir) {
			bench_err("--index-dir %s: %s", b->o.index_dir, strerror(errno));
			return -errno;
		}
	} else {
		index_dir = bench_xstrdup(b->tmpdir);
	}
	for (size_t i = 0; i < b->ncfg; i++) {
		struct bench_cfg *c = &b->cfg[i];
		char *safe;

		if (c->kind == BENCH_CFG_DIR)
			continue;
		c->mountpoint = bench_xasprintf("%s/mnt-%zu", b->tmpdir, i);
		if (mkdir(c->mountpoint, 0755) < 0) {
			bench_err("cannot create %s: %s", c->mountpoint, strerror(errno));
			free(index_dir);
			return -errno;
		}
		c->log_path = bench_xasprintf("%s/mounter-%zu.log", b->tmpdir, i);
		safe = sanitize(c->name);
		if (c->index_given) {
			/* the archive's own index, written by tarseek-convert */
		} else if (c->kind == BENCH_CFG_TARSEEK || strstr(c->command, "{index}")) {
			c->index_path = bench_xasprintf("%s/%s.index.sqlite", index_dir, safe);
			for (size_t j = 0; j < i; j++) {
				if (b->cfg[j].index_path &&
				    !strcmp(b->cfg[j].index_path, c->index_path)) {
					free(c->index_path);
					c->index_path = bench_xasprintf("%s/%s-%zu.index.sqlite",
									index_dir, safe, i);
					break;
				}
			}
		}
		free(safe);

		size_t n = 0;

		if (c->kind == BENCH_CFG_TARSEEK) {
			c->argv = bench_xcalloc(b->o.ntarseek_opts + 8, sizeof(*c->argv));
			c->argv[n++] = bench_xstrdup(b->tarseek);
			c->argv[n++] = bench_xstrdup("-f");
			c->argv[n++] = bench_xstrdup("--index-file");
			c->argv[n++] = bench_xstrdup(c->index_path);
			for (size_t k = 0; k < b->o.ntarseek_opts; k++)
				c->argv[n++] = bench_xstrdup(b->o.tarseek_opts[k]);
			c->argv[n++] = bench_xstrdup(c->source);
			c->argv[n++] = bench_xstrdup(c->mountpoint);
		} else {
			c->argv = bench_xcalloc(4, sizeof(*c->argv));
			c->argv[n++] = bench_xstrdup("sh");
			c->argv[n++] = bench_xstrdup("-c");
			c->argv[n++] = expand_command(c);
		}
	}
	free(index_dir);
	return 0;
}

static void remove_file(const char *p)
{
	if (p && unlink(p) < 0 && errno != ENOENT)
		bench_warn("cannot remove %s: %s", p, strerror(errno));
}

void bench_cfg_remove_index(const char *path)
{
	static const char *const suffix[] = {"", "-journal", "-wal", "-shm"};
	char *shadow = shadow_path(path);

	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		char *p = bench_xasprintf("%s%s", path, suffix[i]);

		remove_file(p);
		free(p);
	}
	remove_file(shadow);
	free(shadow);
}

void bench_cfg_cleanup(struct bench *b)
{
	if (!b->tmpdir)
		return;
	for (size_t i = 0; i < b->ncfg; i++) {
		struct bench_cfg *c = &b->cfg[i];

		if (c->mount) {
			bench_mount_stop(c->mount);
			c->mount = NULL;
		}
		if (c->mountpoint && rmdir(c->mountpoint) < 0 && errno != ENOENT)
			bench_warn("cannot remove %s: %s", c->mountpoint, strerror(errno));
		if (c->log_path)
			unlink(c->log_path);
		if (c->index_path && !b->o.index_dir && !c->index_given)
			bench_cfg_remove_index(c->index_path);
	}
	if (rmdir(b->tmpdir) < 0)
		bench_warn("cannot remove %s: %s (left for you to look at)", b->tmpdir,
			   strerror(errno));
}

struct wait_ui {
	struct bench_ui *ui;
	const char *what;
};

static void mount_progress(void *opaque, double waited)
{
	struct wait_ui *u = opaque;

	bench_ui_show(u->ui, 0, "%s %.1f s", u->what, waited);
}

int bench_cfg_mount(struct bench *b, struct bench_cfg *c, struct bench_samples *m, const char *what)
{
	struct wait_ui u = {&b->ui, what};
	struct bench_mount_spec spec = {
	    .name = c->name,
	    .argv = c->argv,
	    .mountpoint = c->mountpoint,
	    .log_path = c->log_path,
	    .timeout = b->o.mount_timeout,
	    .may_exit = c->kind == BENCH_CFG_COMMAND,
	    .progress = mount_progress,
	    .opaque = &u,
	};
	double t;
	int ret;

	bench_ui_show(&b->ui, 1, "%s", what);
	ret = bench_mount_start(&spec, &c->mount, &t);
	if (ret)
		return ret;
	c->died = 0;
	if (m)
		bench_samples_add(m, t);
	if (b->o.verbose)
		bench_info("%s: %s: %.3f s", c->name, what, t);
	return 0;
}

void bench_cfg_unmount(struct bench *b, struct bench_cfg *c, struct bench_samples *rss)
{
	long kib = bench_mount_peak_rss(c->mount);

	if (rss && kib > 0)
		bench_samples_add(rss, (double)kib / 1024);
	bench_mount_stop(c->mount);
	c->mount = NULL;
}

const char *bench_cfg_root(const struct bench_cfg *c)
{
	return c->kind == BENCH_CFG_DIR ? c->source : c->mountpoint;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

void bench_cfg_sizes(struct bench *b)
{
	b->plain_size = NAN;
	b->plain_from = NULL;
	for (size_t i = 0; i < b->ncfg; i++) {
		struct bench_cfg *c = &b->cfg[i];
		struct stat st;
		uint64_t bytes;

		c->size = NAN;
		if (stat(c->source, &st) < 0) /* a URL, or gone */
			continue;
		if (S_ISDIR(st.st_mode)) { /* --dir, or a folder a --mount-cmd binds */
			if (bench_list_tree_size(c->source, &bytes))
				bench_warn(
				    "%s: some files of %s could not be read; its size counts "
				    "the others",
				    c->name, c->source);
			c->size = (double)bytes;
		} else {
			c->size = (double)st.st_size;
		}
	}
	/* the plain tar: an archive named .tar, else the extracted tree */
	for (int pass = 0; pass < 2 && !b->plain_from; pass++) {
		for (size_t i = 0; i < b->ncfg && !b->plain_from; i++) {
			const struct bench_cfg *c = &b->cfg[i];

			if (isnan(c->size) ||
			    (pass == 0 ? c->kind == BENCH_CFG_DIR || !ends_with(c->source, ".tar")
				       : c->kind != BENCH_CFG_DIR))
				continue;
			b->plain_size = c->size;
			b->plain_from = c->name;
		}
	}
	for (size_t i = 0; i < b->ncfg; i++)
		b->cfg[i].size_ratio = bench_times(b->cfg[i].size, b->plain_size);
}

int bench_cfg_io_pids(struct bench_cfg *c, pid_t *pids, size_t max)
{
	char buf[32];
	ssize_t n;

	if (c->kind == BENCH_CFG_DIR) {
		pids[0] = 0; /* this process: the reader */
		return 1;
	}
	if (!c->mount)
		return 0;
	if (c->kind == BENCH_CFG_TARSEEK) {
		n = getxattr(c->mountpoint, "user.tarseek.pid", buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			pids[0] = (pid_t)atoi(buf);
			if (pids[0] > 0)
				return 1;
		}
	}
	return bench_mount_pids(c->mount, pids, max);
}
