/* --convert: see bench_convert.h. */
#include "tools/bench/bench_convert.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/size.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"

extern char **environ;

/* The extensions --convert knows, as tarseek-convert writes them. */
static const char *form_ext(const char *form)
{
	static const char *const forms[][2] = {{"zst", ".tar.zst"}, {"xz", ".tar.xz"},
					       {"gz", ".tar.gz"},   {"lzo", ".tar.lzo"},
					       {"tar", ".tar"}};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!strcmp(form, forms[i][0]))
			return forms[i][1];
	return NULL;
}

/* The archive's name without its archive extension: backup.tar.gz -> backup. */
static char *stem(const char *path)
{
	static const char *const exts[] = {".tar.gz", ".tar.xz", ".tar.zst", ".tar.bz2", ".tar.lzo",
					   ".tar.lz4", ".tar.lz", ".tar.pxz", ".tgz", ".txz",
					   ".tzst", ".tbz2", ".tar", ".gz", ".xz", ".zst"};
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *s = bench_xstrdup(base);
	size_t n = strlen(s);

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t e = strlen(exts[i]);
		if (n > e && !strcmp(s + n - e, exts[i])) {
			s[n - e] = '\0';
			break;
		}
	}
	return s;
}

/* tarseek-convert beside this program (tools/ of a build, or the same bin folder), else on
 * PATH (posix_spawnp looks). */
static char *find_tool(void)
{
	char self[PATH_MAX], *p;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		p = bench_xasprintf("%s/tarseek-convert", self);
		if (!access(p, X_OK))
			return p;
		free(p);
	}
	return bench_xstrdup("tarseek-convert");
}

static int run_convert(struct bench *b, const char *tool, const char *src, const char *out)
{
	size_t n = 0;
	char **argv = bench_xcalloc(b->o.nconvert_opts + 6, sizeof(*argv));
	pid_t pid;
	int status, err;

	argv[n++] = (char *)tool;
	argv[n++] = "-q";
	argv[n++] = "--force";
	for (size_t i = 0; i < b->o.nconvert_opts; i++)
		argv[n++] = b->o.convert_opts[i];
	argv[n++] = (char *)src;
	argv[n++] = (char *)out;
	err = posix_spawnp(&pid, tool, NULL, NULL, argv, environ);
	free(argv);
	if (err) {
		bench_err("cannot run %s: %s", tool, strerror(err));
		return -err;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		bench_err("%s %s %s failed (status %d)", tool, src, out, status);
		return -EIO;
	}
	return 0;
}

int bench_convert(struct bench *b)
{
	const char *t = getenv("TMPDIR");
	struct bench_cfg *first = NULL;
	char *list, *save = NULL, *tool, *base;
	int err = 0;

	for (size_t i = 0; i < b->ncfg && !first; i++)
		if (b->cfg[i].kind != BENCH_CFG_DIR && !bench_is_url(b->cfg[i].source))
			first = &b->cfg[i];
	if (!first) {
		bench_err("--convert needs a local archive to convert");
		return -EINVAL;
	}
	if (b->o.convert_dir) {
		if (mkdir(b->o.convert_dir, 0755) < 0 && errno != EEXIST) {
			bench_err("--convert-dir %s: %s", b->o.convert_dir, strerror(errno));
			return -errno;
		}
		b->convert_dir = realpath(b->o.convert_dir, NULL);
	} else {
		char *tmpl = bench_xasprintf("%s/tarseek-bench-convert.XXXXXX", t && *t ? t : "/tmp");
		b->convert_dir = mkdtemp(tmpl) ? realpath(tmpl, NULL) : NULL;
		free(tmpl);
	}
	if (!b->convert_dir) {
		bench_err("cannot make a folder for the conversions: %s", strerror(errno));
		return -errno;
	}
	tool = find_tool();
	base = stem(first->source);
	/* first may move: add_cfg reallocates b->cfg */
	char *src = bench_xstrdup(first->source), *src_name = bench_xstrdup(first->name);
	list = bench_xstrdup(b->o.convert);
	for (char *f = strtok_r(list, ",", &save); f && !err; f = strtok_r(NULL, ",", &save)) {
		const char *ext = form_ext(f);
		if (!ext) {
			bench_err("--convert: %s is not a form (zst, xz, gz, lzo, tar)", f);
			err = -EINVAL;
			break;
		}
		char *out = bench_xasprintf("%s/%s%s", b->convert_dir, base, ext), sz[32];
		struct stat st;
		double t0 = mono_now();

		bench_ui_status(&b->ui, "[converting] %s to %s", src_name, ext + 1);
		err = run_convert(b, tool, src, out);
		if (!err && stat(out, &st) < 0)
			err = -errno;
		if (!err) {
			format_size(sz, sizeof(sz), (double)st.st_size);
			bench_info("converted %s to %s: %s in %.1f s", src_name, out, sz,
				   mono_now() - t0);
			char *name = bench_xasprintf("%s%s (converted)", base, ext);
			struct bench_cfg *c = bench_cfg_add(b, BENCH_CFG_TARSEEK, out, name);
			free(name);
			c->index_path = bench_xasprintf("%s.index.sqlite", out);
			c->index_given = 1;
		}
		free(out);
	}
	free(list);
	free(src);
	free(src_name);
	free(base);
	free(tool);
	return err;
}

void bench_convert_cleanup(struct bench *b)
{
	if (!b->convert_dir)
		return;
	if (!b->o.convert_dir) {
		for (size_t i = 0; i < b->ncfg; i++) {
			struct bench_cfg *c = &b->cfg[i];
			if (!c->index_given)
				continue;
			unlink(c->index_path);
			unlink(c->source);
		}
		if (rmdir(b->convert_dir) < 0)
			bench_warn("cannot remove %s: %s", b->convert_dir, strerror(errno));
	}
	free(b->convert_dir);
	b->convert_dir = NULL;
}
