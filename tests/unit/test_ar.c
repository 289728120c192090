/* The ar container (containers/ar.c) on archives built in memory: each variant's names (GNU
 * "name/" and "/N" in a "/\n" table, BSD "#1/N", COFF's NUL-ended table after two linker
 * members), the tables left out, the header fields, the padding byte; and damage: a header
 * cut or not one, data cut, a long name past its table, a "#1/N" longer than its member, a
 * table larger than the file.  Every member must be reported in place (stream 0) with what
 * the header says, or left out / marked unreadable with a message. */
#include "containers/container.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "testutil.h"

#define MAXM 16

struct got {
	char path[MAXM][256];
	uint64_t data_off[MAXM], size[MAXM], mtime[MAXM], uid[MAXM], gid[MAXM];
	uint32_t mode[MAXM];
	int unreadable[MAXM];
	size_t n;
};

struct buf {
	uint8_t p[8192];
	size_t len;
};

static char last_log[512];

static void log_sink(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)opaque;
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void put(struct buf *b, const void *p, size_t n)
{
	CHECK(b->len + n <= sizeof(b->p));
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* A member: the 16-byte name field as given (padded with spaces), its fields, its data. */
static void mem(struct buf *b, const char *name, const char *mode, const void *data, size_t n)
{
	char h[61];

	snprintf(h, sizeof(h), "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "1600000000", "1000",
		 "100", mode, n);
	put(b, h, 60);
	put(b, data, n);
	if (n & 1)
		put(b, "\n", 1);
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct got *g = opaque;

	CHECK(g->n < MAXM);
	CHECK(m->path[m->path_len] == '\0' && m->stream == 0 && m->type == MEMBER_REG);
	snprintf(g->path[g->n], sizeof(g->path[0]), "%s", (const char *)m->path);
	g->data_off[g->n] = m->data_off;
	g->size[g->n] = m->size;
	g->mtime[g->n] = (uint64_t)m->mtime_sec;
	g->uid[g->n] = m->uid;
	g->gid[g->n] = m->gid;
	g->mode[g->n] = m->mode;
	g->unreadable[g->n] = m->unreadable;
	g->n++;
	return 0;
}

static int parse(const struct buf *b, struct got *g, struct cont_stats *st)
{
	struct src *in = src_from_mem(b->p, b->len);
	struct cont_sink sink = {.member = on_member, .opaque = g, .name = "t.a"};
	int err;

	memset(g, 0, sizeof(*g));
	last_log[0] = '\0';
	CHECK(cont_ar.probe(in, b->p, b->len < 512 ? b->len : 512));
	CHECK(cont_probe(in, b->p, b->len < 512 ? b->len : 512) == &cont_ar);
	err = cont_ar.parse(in, &sink, st);
	src_free(in);
	return err;
}

static void gnu(void)
{
	static const char table[] = "a_name_longer_than_sixteen.o/\nsecond_long_name_here.o/\n";
	struct buf b = {0};
	struct got g;
	struct cont_stats st;
	size_t at;

	put(&b, "!<arch>\n", 8);
	mem(&b, "/", "0", "\0\0\0\0", 4);	 /* symbol table */
	mem(&b, "/SYM64/", "0", "\0\0\0\0\0\0\0\0", 8);
	mem(&b, "//", "0", table, sizeof(table) - 1);
	at = b.len;
	mem(&b, "odd.txt/", "100640", "abc", 3); /* padded */
	mem(&b, "/30", "100755", "xy", 2);
	mem(&b, "/0", "644", "", 0);
	mem(&b, "with space/", "100600", "s", 1);
	CHECK_EQ(parse(&b, &g, &st), 0);
	CHECK_EQ(g.n, 4);
	CHECK_EQ(st.members, 4);
	CHECK(!st.damaged);
	CHECK(!strcmp(g.path[0], "odd.txt") && g.size[0] == 3 && g.data_off[0] == at + 60);
	CHECK(!memcmp(b.p + g.data_off[0], "abc", 3));
	CHECK_EQ(g.mode[0], 0640);
	CHECK(g.mtime[0] == 1600000000 && g.uid[0] == 1000 && g.gid[0] == 100);
	CHECK(!strcmp(g.path[1], "second_long_name_here.o") && g.mode[1] == 0755);
	CHECK(!memcmp(b.p + g.data_off[1], "xy", 2));
	CHECK(!strcmp(g.path[2], "a_name_longer_than_sixteen.o") && g.size[2] == 0);
	CHECK(!strcmp(g.path[3], "with space"));
	CHECK(!memcmp(b.p + g.data_off[3], "s", 1));
}

static void bsd_and_coff(void)
{
	struct buf b = {0};
	struct got g;
	struct cont_stats st;

	put(&b, "!<arch>\n", 8);
	mem(&b, "__.SYMDEF SORTED", "0", "\0\0\0\0", 4);
	mem(&b, "#1/20", "100644", "a_long_bsd_name.o\0\0\0DATA", 24);
	mem(&b, "short.o", "100644", "1", 1);
	CHECK_EQ(parse(&b, &g, &st), 0);
	CHECK_EQ(g.n, 2);
	CHECK(!strcmp(g.path[0], "a_long_bsd_name.o") && g.size[0] == 4);
	CHECK(!memcmp(b.p + g.data_off[0], "DATA", 4));
	CHECK(!strcmp(g.path[1], "short.o"));

	static const char names[] = "first_long_object.obj\0second_long_object.obj\0";
	memset(&b, 0, sizeof(b));
	put(&b, "!<arch>\n", 8);
	mem(&b, "/", "0", "\0\0\0\0", 4);
	mem(&b, "/", "0", "\0\0\0\0\0\0\0\0", 8); /* the second linker member */
	mem(&b, "//", "0", names, sizeof(names) - 1);
	mem(&b, "/<ECSYMBOLS>/", "0", "\0\0\0\0", 4);
	mem(&b, "/22", "100644", "two", 3);
	mem(&b, "/0", "100644", "one", 3);
	mem(&b, "x.obj/", "100644", "x", 1);
	CHECK_EQ(parse(&b, &g, &st), 0);
	CHECK_EQ(g.n, 3);
	CHECK(!strcmp(g.path[0], "second_long_object.obj"));
	CHECK(!strcmp(g.path[1], "first_long_object.obj"));
	CHECK(!strcmp(g.path[2], "x.obj"));
	CHECK(!st.damaged);
}

static void damage(void)
{
	struct buf b = {0}, c;
	struct got g;
	struct cont_stats st;

	put(&b, "!<arch>\n", 8);
	mem(&b, "a.o/", "100644", "aaaa", 4);
	mem(&b, "b.o/", "100644", "bbbbbbbb", 8);

	c = b; /* cut in b's data: listed, unreadable */
	c.len -= 3;
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 2 && g.unreadable[0] == 0 && g.unreadable[1] == -EIO && st.damaged);
	CHECK(strstr(last_log, "truncated") != NULL);

	for (size_t cut = 72 + 1; cut < 72 + 60; cut += 7) { /* cut in b's header */
		c = b;
		c.len = cut;
		CHECK_EQ(parse(&c, &g, &st), 0);
		CHECK(g.n == 1 && !strcmp(g.path[0], "a.o") && st.damaged);
		CHECK(strstr(last_log, "no member header") != NULL);
	}

	c = b; /* not a header: the listing ends */
	c.p[72 + 58] = 'x';
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 1 && st.damaged);
	c = b; /* a size that is no number */
	memcpy(c.p + 72 + 48, "12a", 3);
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 1 && st.damaged);
	c = b; /* a size past the end: the member is the last */
	memcpy(c.p + 72 + 48, "9999999999", 10);
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 2 && g.unreadable[1] == -EIO);

	memset(&c, 0, sizeof(c)); /* a long name past the table; no table at all */
	put(&c, "!<arch>\n", 8);
	mem(&c, "/0", "100644", "lost", 4);
	mem(&c, "//", "0", "n/\n", 3);
	mem(&c, "/7", "100644", "lost", 4);
	mem(&c, "/0", "100644", "kept", 4);
	mem(&c, "#1/99", "100644", "short", 5); /* a name longer than the member */
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 1 && !strcmp(g.path[0], "n") && st.damaged);
	CHECK(!memcmp(c.p + g.data_off[0], "kept", 4));

	memset(&c, 0, sizeof(c)); /* a table larger than the file */
	put(&c, "!<arch>\n", 8);
	put(&c, "//              0           0     0     0       4000000000`\n", 60);
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 0 && st.damaged);

	memset(&c, 0, sizeof(c)); /* only the magic; a trailing padding byte */
	put(&c, "!<arch>\n", 8);
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 0 && !st.damaged);
	mem(&c, "a/", "644", "abc", 3);
	CHECK_EQ(parse(&c, &g, &st), 0);
	CHECK(g.n == 1 && !st.damaged);
}

int main(void)
{
	tfs_log_set_sink(log_sink, NULL);
	gnu();
	bsd_and_coff();
	damage();
	return tu_exit();
}
