/* Split archives (see parts.h): the parts found by their names, checked, and joined.
 *
 * Finding is by names only, then stat(2): the part after the first is the first's name with
 * the next number, until one is missing.  A run that stops early is told from a missing part
 * in the middle by a later number beside it (NAME.004 beside NAME.001 and NAME.002 means
 * NAME.003 is missing): when parts were found, by listing the folder once; when none was (a
 * NAME.zip or NAME.001 alone: every zip opened, every -r probe of one), by a stat of the next
 * LOOKAHEAD numbers only, so that a folder of many zips costs no readdir per zip.
 *
 * The joined source keeps the parts' starts (n + 1 offsets) and finds the part of a read by
 * binary search; a read never spans two parts (src_pread loops, asking again at the next
 * part's start).  The starts are fixed when joined: a part that has since become shorter
 * answers short, which is a read error here, never a shorter archive.
 */
#include "common/parts.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"

/* ---- names --------------------------------------------------------------------------------- */

enum parts_kind { PK_NONE, PK_NUM, PK_ZIP };

/* How path is named: a numbered part (*prefix_len: up to and with the dot, *width: its digits,
 * *first: its number, 0 or 1) or a split zip's NAME.zip or NAME.z01 (*prefix_len: up to and
 * with "NAME.", *upper: ZIP and Z01 rather than zip and z01). */
struct parts_name {
	enum parts_kind kind;
	size_t prefix_len;
	int width;
	unsigned first;
	bool upper;
};

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

static struct parts_name name_kind(const char *path)
{
	struct parts_name k = {PK_NONE, 0, 0, 0, false};
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *dot = strrchr(base, '.');
	size_t n;

	if (!dot || dot == base)
		return k;
	n = strlen(dot + 1);
	k.prefix_len = (size_t)(dot + 1 - path);
	if (n >= 2 && n <= 9 && all_digits(dot + 1, n)) {
		unsigned v = (unsigned)strtoul(dot + 1, NULL, 10);
		if (v <= 1) {
			k.kind = PK_NUM;
			k.width = (int)n;
			k.first = v;
		}
	} else if (strcmp(dot + 1, "zip") == 0 || strcmp(dot + 1, "z01") == 0) {
		k.kind = PK_ZIP;
	} else if (strcmp(dot + 1, "ZIP") == 0 || strcmp(dot + 1, "Z01") == 0) {
		k.kind = PK_ZIP;
		k.upper = true;
	}
	return k;
}

char *parts_whole_name(const char *path)
{
	struct parts_name k = name_kind(path);
	char *out = NULL;

	if (k.kind == PK_NUM)
		return strndup(path, k.prefix_len - 1);
	if (k.kind == PK_ZIP &&
	    asprintf(&out, "%.*s%s", (int)k.prefix_len, path, k.upper ? "ZIP" : "zip") < 0)
		return NULL;
	return out;
}

/* The name of part number i (numbered as the tool numbers them: from k->first, or z01 on). */
static char *part_name(const char *path, const struct parts_name *k, unsigned i)
{
	char *out;
	int r = k->kind == PK_NUM
		    ? asprintf(&out, "%.*s%0*u", (int)k->prefix_len, path, k->width, i)
		    : asprintf(&out, "%.*s%c%02u", (int)k->prefix_len, path, k->upper ? 'Z' : 'z', i);

	return r < 0 ? NULL : out;
}

#define LOOKAHEAD 3

/* A part numbered above last beside path, when no part after the first was found: the next
 * LOOKAHEAD numbers.  The lowest such number, or 0. */
static unsigned later_near(const char *path, const struct parts_name *k, unsigned last)
{
	struct stat st;

	for (unsigned i = last + 2; i <= last + 1 + LOOKAHEAD; i++) {
		char *p = part_name(path, k, i);
		bool there = p && stat(p, &st) == 0;
		free(p);
		if (there)
			return i;
	}
	return 0;
}

/* The lowest number above last of a part beside path's parts (the same prefix, then digits:
 * 2 or more after 'z' for a zip, at least k->width for the others), or 0 if there is none. */
static unsigned later_part(const char *path, const struct parts_name *k, unsigned last)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *dir = base == path ? strdup(".") : strndup(path, (size_t)(base - path));
	size_t plen = k->prefix_len - (size_t)(base - path);
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	unsigned found = 0;

	while (d && (de = readdir(d))) {
		const char *num = de->d_name + plen;
		if (strncmp(de->d_name, base, plen) != 0)
			continue;
		if (k->kind == PK_ZIP && *num++ != (k->upper ? 'Z' : 'z'))
			continue;
		size_t n = strlen(num);
		if (n < (k->kind == PK_NUM ? (size_t)k->width : 2) || n > 9 || !all_digits(num, n))
			continue;
		unsigned v = (unsigned)strtoul(num, NULL, 10);
		if (v > last && (!found || v < found))
			found = v;
	}
	if (d)
		closedir(d);
	free(dir);
	return found;
}

void parts_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/* Appends name (taken) to *names.  0 or -ENOMEM (name freed). */
static int push(char ***names, size_t *n, char *name)
{
	char **more = name ? realloc(*names, (*n + 1) * sizeof(**names)) : NULL;

	if (!more) {
		free(name);
		return -ENOMEM;
	}
	more[(*n)++] = name;
	*names = more;
	return 0;
}

/* The run of numbered parts from number `from` on, appended to *names while they exist. */
static int collect_run(const char *path, const struct parts_name *k, unsigned from,
		       char ***names, size_t *n, unsigned *last)
{
	struct stat st;

	for (unsigned i = from;; i++) {
		char *p = part_name(path, k, i);
		if (!p)
			return -ENOMEM;
		if (stat(p, &st) < 0) {
			free(p);
			return 0;
		}
		int err = push(names, n, p);
		if (err)
			return err;
		*last = i;
	}
}

/* Every part is a regular file, and every one but the last as long as the first. */
static int check_sizes(char **names, size_t n, bool quiet)
{
	struct stat st;
	uint64_t first = 0;

	for (size_t i = 0; i < n; i++) {
		if (stat(names[i], &st) < 0) {
			int err = -errno;
			if (!quiet)
				tfs_log(TFS_LOG_ERR, "%s: a part of a split archive: %s", names[i],
					strerror(errno));
			return err;
		}
		if (!S_ISREG(st.st_mode)) {
			if (!quiet)
				tfs_log(TFS_LOG_ERR, "%s: a part of a split archive that is not a "
					"regular file", names[i]);
			return -EINVAL;
		}
		if (i == 0)
			first = (uint64_t)st.st_size;
		else if (i + 1 < n && (uint64_t)st.st_size != first) {
			if (!quiet)
				tfs_log(TFS_LOG_ERR, "%s: a part of a split archive of %llu bytes, "
					"where %s has %llu: cut short, or not a part of it", names[i],
					(unsigned long long)st.st_size, names[0],
					(unsigned long long)first);
			return -EIO;
		}
	}
	return 0;
}

int parts_find(const char *path, bool quiet, char ***names, size_t *n)
{
	struct parts_name k = name_kind(path);
	char *zip = NULL, *missing = NULL;
	unsigned last = 0, later;
	struct stat st;
	int err = 0;

	*names = NULL;
	*n = 0;
	if (k.kind == PK_NONE || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	if (k.kind == PK_NUM) {
		err = push(names, n, strdup(path));
		last = k.first;
		err = err ? err : collect_run(path, &k, k.first + 1, names, n, &last);
	} else {
		err = collect_run(path, &k, 1, names, n, &last);
		zip = parts_whole_name(path);
		if (!err && !zip)
			err = -ENOMEM;
	}
	if (err)
		goto fail;
	/* parts found: the folder listed; the first alone (*n 1, or a NAME.zip's 0): a few stats */
	later = *n > (k.kind == PK_NUM) ? later_part(path, &k, last) : later_near(path, &k, last);
	if (later) {
		missing = part_name(path, &k, last + 1);
		err = -ENOENT;
		if (!quiet)
			tfs_log(TFS_LOG_ERR, "%s: part %s of the split archive is missing",
				path, missing ? missing : "?");
		goto fail;
	}
	if (k.kind == PK_ZIP && *n) { /* NAME.z01 ... and NAME.zip last */
		if (stat(zip, &st) < 0) {
			err = -errno;
			if (!quiet)
				tfs_log(TFS_LOG_ERR, "%s: the last part %s of the split zip is "
					"missing", path, zip);
			goto fail;
		}
		err = push(names, n, zip);
		zip = NULL;
		if (err)
			goto fail;
	}
	if (*n < 2) {
		parts_names_free(*names, *n);
		*names = NULL;
		*n = 0;
		goto out;
	}
	err = check_sizes(*names, *n, quiet);
	if (err)
		goto fail;
	goto out;
fail:
	parts_names_free(*names, *n);
	*names = NULL;
	*n = 0;
out:
	free(zip);
	free(missing);
	return err;
}

/* ---- the joined source --------------------------------------------------------------------- */

struct joined {
	size_t n;
	struct src **parts;
	char **names;	  /* or NULL */
	uint64_t *starts; /* n + 1 */
	atomic_bool said; /* a part found short was logged */
};

static ssize_t joined_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct joined *j = opaque;
	size_t lo = 0, hi = j->n;

	if (off >= j->starts[j->n])
		return 0;
	while (hi - lo > 1) { /* the last part starting at or before off */
		size_t mid = lo + (hi - lo) / 2;
		if (j->starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t in = off - j->starts[lo], left = j->starts[lo + 1] - off;
	if (len > left)
		len = (size_t)left;
	ssize_t r = src_pread(j->parts[lo], buf, len, in);
	if (r >= 0 && (size_t)r < len) {
		if (!atomic_exchange(&j->said, true))
			tfs_log(TFS_LOG_ERR, "%s: a part of the split archive is shorter than when "
				"it was opened (changed since?)", j->names ? j->names[lo] : "?");
		return -EIO;
	}
	return r;
}

static void joined_advise(void *opaque, uint64_t off, uint64_t len)
{
	struct joined *j = opaque;

	for (size_t i = 0; i < j->n && len; i++) {
		uint64_t s = j->starts[i], e = j->starts[i + 1];
		if (off >= e || off + len <= s)
			continue;
		uint64_t a = off > s ? off : s, b = off + len < e ? off + len : e;
		src_advise(j->parts[i], a - s, b - a);
	}
}

static void joined_close(void *opaque)
{
	struct joined *j = opaque;

	for (size_t i = 0; i < j->n; i++)
		src_free(j->parts[i]);
	parts_names_free(j->names, j->names ? j->n : 0);
	free(j->parts);
	free(j->starts);
	free(j);
}

static const struct src_ops joined_ops = {
	.pread = joined_pread,
	.close = joined_close,
	.advise = joined_advise,
};

struct src *parts_join(struct src **parts, char *const *names, size_t n)
{
	struct joined *j = calloc(1, sizeof(*j));
	struct src *s = NULL;

	if (!j)
		goto fail;
	j->parts = calloc(n ? n : 1, sizeof(*j->parts));
	j->starts = calloc(n + 1, sizeof(*j->starts));
	if (!j->parts || !j->starts)
		goto fail;
	j->n = n;
	for (size_t i = 0; i < n; i++) {
		j->parts[i] = parts[i];
		parts[i] = NULL;
		j->starts[i + 1] = j->starts[i] + src_size(j->parts[i]);
	}
	if (names) {
		j->names = calloc(n ? n : 1, sizeof(*j->names));
		for (size_t i = 0; j->names && i < n; i++)
			if (!(j->names[i] = strdup(names[i])))
				goto fail;
		if (!j->names)
			goto fail;
	}
	atomic_init(&j->said, false);
	s = src_new(&joined_ops, j, j->starts[n]);
	if (s)
		return s;
fail:
	if (j && j->parts) {
		joined_close(j);
	} else if (j) {
		free(j->starts);
		free(j);
	}
	for (size_t i = 0; i < n; i++)
		src_free(parts[i]);
	return NULL;
}

size_t parts_starts(const struct src *s, const uint64_t **starts)
{
	const struct joined *j = src_opaque_if(s, &joined_ops);

	*starts = j ? j->starts : NULL;
	return j ? j->n : 0;
}

/* ---- files --------------------------------------------------------------------------------- */

int parts_open(const char *path, struct src **out)
{
	struct src **parts = NULL;
	char **names;
	size_t n;
	int err = parts_find(path, false, &names, &n);

	*out = NULL;
	if (err)
		return err;
	if (n == 0)
		return src_open_file(path, out);
	parts = calloc(n, sizeof(*parts));
	if (!parts) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		err = src_open_file(names[i], &parts[i]);
		if (err) {
			tfs_log(TFS_LOG_ERR, "%s: cannot open this part of a split archive: %s",
				names[i], strerror(-err));
			goto out;
		}
	}
	*out = parts_join(parts, names, n); /* takes the parts, also on error */
	err = *out ? 0 : -ENOMEM;
	free(parts);
	parts = NULL;
out:
	for (size_t i = 0; parts && i < n; i++)
		src_free(parts[i]);
	free(parts);
	parts_names_free(names, n);
	return err;
}

int parts_stat(const char *path, struct stat *st)
{
	char **names;
	size_t n;
	int err = parts_find(path, true, &names, &n);

	if (err)
		return err;
	if (stat(path, st) < 0) {
		err = -errno;
		goto out;
	}
	if (n)
		st->st_size = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat p;
		if (stat(names[i], &p) < 0) {
			err = -errno;
			goto out;
		}
		st->st_size += p.st_size;
		if (p.st_mtim.tv_sec > st->st_mtim.tv_sec ||
		    (p.st_mtim.tv_sec == st->st_mtim.tv_sec &&
		     p.st_mtim.tv_nsec > st->st_mtim.tv_nsec))
			st->st_mtim = p.st_mtim;
	}
out:
	parts_names_free(names, n);
	return err;
}
