/* Unix ar archives ("!<arch>\n"): static libraries, .deb packages, Windows import libraries.
 * The container "ar" (container.h).  Every member is a regular file stored as it is, read in
 * place (stream 0 at its file offset), as GNU ar extracts it.
 *
 * The format: an 8-byte magic, then one 60-byte header per member -- name[16], mtime[12] and
 * uid[6], gid[6] in decimal, mode[8] in octal, size[10] in decimal, "`\n" -- then its data,
 * padded with '\n' to an even offset.  The variants name members differently:
 *   - GNU and SysV: "name/" (the '/' ends the name, so it may hold spaces); "/N" names the
 *     string N bytes into the long-name table, the member "//", where names end with "/\n";
 *     "/" is the symbol table, "/SYM64/" the 64-bit one.
 *   - BSD (and macOS): the name padded with spaces; "#1/N": the name is the first N bytes of
 *     the data (NUL-padded), which the member's size includes; "__.SYMDEF" (", SORTED",
 *     "_64") is the symbol table.
 *   - COFF (Microsoft lib.exe, llvm-ar --format=coff, llvm-lib): two "/" linker members, then
 *     "//", whose names end with NUL rather than "/\n"; "/<ECSYMBOLS>/" and "/<HYBRIDMAP>/"
 *     are ARM64EC tables.  (libarchive 3.6 stops at the second "/" with "Invalid string
 *     table"; GNU ar extracts every member: it is followed.)
 * Symbol and name tables are not members: GNU ar t does not list them.  Thin archives
 * ("!<thin>\n") name files outside the archive and are not read.
 *
 * Damage: a header that is not one (no "`\n", a size that is no number) ends the listing
 * there -- what came before is kept and the archive is reported damaged; a member whose data
 * the file does not hold whole is listed, unreadable (EIO: "the archive ends inside it"); a
 * long name that the table does not hold is left out with a warning.
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define AR_MAGIC "!<arch>\n"
#define AR_HDR 60
#define AR_TABLE_MAX ((uint64_t)64 << 20) /* a long-name table larger than this is refused */
#define AR_NAME_MAX 4096		  /* a longer name (BSD "#1/N") is left out */

struct ar {
	struct src *in;
	const struct cont_sink *sink;
	const char *name; /* the archive's, for messages */
	uint64_t size;	  /* of the file */
	uint8_t *table;	  /* the long-name table "//", or NULL */
	size_t table_len;
	uint8_t path[AR_NAME_MAX + 1];
	bool damaged;
};

static bool ar_probe(struct src *in, const uint8_t *h, size_t len)
{
	(void)in;
	return len >= 8 && !memcmp(h, AR_MAGIC, 8);
}

/* A decimal (base 10) or octal (base 8) field: digits, then only spaces.  An empty field is 0
 * (BSD ar leaves uid and gid blank); false if it holds anything else. */
static bool ar_number(const uint8_t *f, size_t n, unsigned base, uint64_t *v)
{
	size_t i = 0;

	*v = 0;
	while (i < n && f[i] >= '0' && f[i] < '0' + base) {
		*v = *v * base + (uint64_t)(f[i] - '0'); /* at most 12 digits: no overflow */
		i++;
	}
	while (i < n && f[i] == ' ')
		i++;
	return i == n;
}

/* The table's name at offset off: it ends at "/\n" (GNU), '\n' or NUL (COFF).  Its length,
 * or -1 if the table does not hold it. */
static ssize_t ar_long_name(const struct ar *a, uint64_t off, const uint8_t **p)
{
	size_t end;

	if (!a->table || off >= a->table_len)
		return -1;
	end = (size_t)off;
	while (end < a->table_len && a->table[end] != '\n' && a->table[end] != '\0')
		end++;
	if (end > off && a->table[end - 1] == '/')
		end--;
	*p = a->table + off;
	return end - (size_t)off > AR_NAME_MAX ? -1 : (ssize_t)(end - (size_t)off);
}

/* Is this member a table rather than a file?  "/", "/SYM64/", "/<ECSYMBOLS>/",
 * "/<HYBRIDMAP>/", "__.SYMDEF..." (the name field, trailing spaces cut). */
static bool ar_is_table(const uint8_t *f, size_t n)
{
	return (n == 1 && f[0] == '/') || (n == 7 && !memcmp(f, "/SYM64/", 7)) ||
	       (n == 13 && (!memcmp(f, "/<ECSYMBOLS>/", 13) || !memcmp(f, "/<HYBRIDMAP>/", 13))) ||
	       (n >= 9 && !memcmp(f, "__.SYMDEF", 9));
}

/* Reads the long-name table "//" of size bytes at off. */
static int ar_read_table(struct ar *a, uint64_t off, uint64_t size)
{
	int err;

	if (a->table) {
		tfs_log(TFS_LOG_NOTICE, "%s: a second long-name table at offset %" PRIu64
			" replaces the first", a->name, off - AR_HDR);
		free(a->table);
		a->table = NULL;
	}
	if (size > AR_TABLE_MAX || size > a->size - off) {
		tfs_log(TFS_LOG_WARNING, "%s: the long-name table at offset %" PRIu64 " is %s; "
			"long names left out", a->name, off - AR_HDR,
			size > a->size - off ? "cut short" : "too large");
		a->damaged = true;
		return 0;
	}
	a->table = malloc(size ? size : 1);
	if (!a->table)
		return -ENOMEM;
	err = src_pread_full(a->in, a->table, (size_t)size, off);
	if (err) {
		free(a->table);
		a->table = NULL;
		return err;
	}
	a->table_len = (size_t)size;
	return 0;
}

/* The member whose 60-byte header h sits at off: reported, or skipped (a table, a name that
 * cannot be read).  0 or -errno. */
static int ar_member(struct ar *a, const uint8_t *h, uint64_t off, uint64_t size,
		     struct cont_stats *st)
{
	struct arc_member m = {0};
	const uint8_t *name = h;
	size_t n = 16;
	uint64_t v, data = off + AR_HDR;
	ssize_t ln;

	while (n && name[n - 1] == ' ')
		n--;
	if (ar_is_table(name, n))
		return 0;
	if (n == 2 && !memcmp(name, "//", 2))
		return ar_read_table(a, data, size);
	if (n >= 2 && name[0] == '/' && ar_number(name + 1, n - 1, 10, &v)) {
		ln = ar_long_name(a, v, &name);
		if (ln < 0) {
			tfs_log(TFS_LOG_WARNING, "%s: member at offset %" PRIu64 ": its long name "
				"(/%" PRIu64 ") is not in the name table; left out", a->name, off, v);
			a->damaged = true;
			return 0;
		}
		n = (size_t)ln;
	} else if (n > 3 && !memcmp(name, "#1/", 3) && ar_number(name + 3, n - 3, 10, &v)) {
		if (v > size || v > AR_NAME_MAX ||
		    src_pread_full(a->in, a->path, (size_t)v, data)) {
			tfs_log(TFS_LOG_WARNING, "%s: member at offset %" PRIu64 ": its name "
				"(%" PRIu64 " bytes of its data) cannot be read; left out",
				a->name, off, v);
			a->damaged = true;
			return 0;
		}
		name = a->path;
		n = strnlen((const char *)a->path, (size_t)v);
		data += v;
		size -= v;
	} else if (n && name[n - 1] == '/') {
		n--; /* GNU: "name/" */
	}
	if (name != a->path)
		memcpy(a->path, name, n);
	a->path[n] = '\0';
	m.path = a->path;
	m.path_len = n;
	m.link = (const uint8_t *)"";
	m.type = MEMBER_REG;
	m.hdr_off = off;
	m.data_off = data;
	m.size = size;
	m.stored = size;
	if (ar_number(h + 16, 12, 10, &v))
		m.mtime_sec = (int64_t)v;
	if (ar_number(h + 28, 6, 10, &v))
		m.uid = v;
	if (ar_number(h + 34, 6, 10, &v))
		m.gid = v;
	m.mode = ar_number(h + 40, 8, 8, &v) ? (uint32_t)v & 07777 : 0644;
	m.uname = m.gname = "";
	if (data > a->size || size > a->size - data) {
		tfs_log(TFS_LOG_WARNING, "%s: '%s': the archive ends inside its data (truncated)",
			a->name, (const char *)a->path);
		m.unreadable = -EIO;
		m.why = "the archive ends inside it (truncated)";
		m.stored = 0;
		a->damaged = true;
	}
	if (a->sink->progress)
		a->sink->progress(a->sink->opaque, off);
	if (st)
		st->members++;
	return a->sink->member(a->sink->opaque, &m);
}

static int ar_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct ar a = {.in = in, .sink = sink, .name = sink->name ? sink->name : "archive",
		       .size = src_size(in)};
	struct cont_stats st = {0};
	uint64_t off = 8;
	int err = 0;

	while (off < a.size) {
		uint8_t h[AR_HDR];
		uint64_t size;
		ssize_t got = src_pread(in, h, sizeof(h), off);

		if (got < 0) {
			err = (int)got;
			break;
		}
		if (got == 1 && h[0] == '\n')
			break; /* the last member's padding, written as a whole byte by some */
		if ((size_t)got < sizeof(h) || h[58] != '`' || h[59] != '\n' ||
		    !ar_number(h + 48, 10, 10, &size)) {
			tfs_log(TFS_LOG_WARNING, "%s: no member header at offset %" PRIu64
				" (%s): the listing ends there", a.name, off,
				(size_t)got < sizeof(h) ? "truncated" : "damaged");
			a.damaged = true;
			break;
		}
		err = ar_member(&a, h, off, size, &st);
		if (err)
			break;
		if (size > a.size - off - AR_HDR)
			break; /* the data runs past the end: nothing follows */
		off += AR_HDR + size + (size & 1);
	}
	st.damaged = a.damaged;
	if (stats)
		*stats = st;
	free(a.table);
	return err;
}

const struct container cont_ar = {
	.name = "ar",
	.probe = ar_probe,
	.parse = ar_parse,
};
