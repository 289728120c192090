/* libFuzzer harness: the partition-table container (containers/image/parttable.c) on
 * arbitrary bytes.
 *
 * cont_parttable.probe and .parse over the input in memory, with a sink that checks what
 * container.h and member.h promise for it: no streams; every member a regular file named
 * "pN.img" or "pN-NAME.img" (NUL-terminated, one path component, read whole), no sparse map,
 * permission bits only, size == stored with its bytes inside the input -- or unreadable (-EIO,
 * with a reason) and nothing stored; partition numbers never repeat; the count in the stats.
 * Every member's bytes are read as the mount would.  The parse returns 0, -EINVAL (not a
 * table after all), -EIO (a GPT whose copies are both damaged) or -ENOMEM.
 *
 *   build-fuzz/tests/fuzz/fuzz_parttable -max_len=131072 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

struct fz_walk {
	const uint8_t *data;
	uint64_t size;
	uint64_t members;
	uint8_t seen[1024]; /* partition numbers reported (a bit each) */
	uint64_t sum;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	FZ_ASSERT(!"a partition table declares no stream");
	return -EINVAL;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;
	unsigned long num;
	char *end;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0' && m->path_len >= 6);
	FZ_ASSERT(memchr(m->path, '/', m->path_len) == NULL);
	FZ_ASSERT(m->path[0] == 'p' && !memcmp(m->path + m->path_len - 4, ".img", 4));
	num = strtoul((const char *)m->path + 1, &end, 10);
	FZ_ASSERT(num >= 1 && (*end == '.' || *end == '-'));
	if (num < sizeof(w->seen) * 8) {
		FZ_ASSERT(!(w->seen[num / 8] & (1u << (num % 8))));
		w->seen[num / 8] |= (uint8_t)(1u << (num % 8));
	}
	FZ_ASSERT(m->link && m->link[0] == '\0' && m->uname && m->gname);
	FZ_ASSERT(m->type == MEMBER_REG && m->stream == 0 && (m->mode & ~07777u) == 0);
	FZ_ASSERT(!m->sparse && !m->nsparse);
	if (m->unreadable) {
		FZ_ASSERT(m->unreadable == -EIO && m->why && m->stored == 0);
	} else {
		FZ_ASSERT(m->size == m->stored);
		FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
		for (uint64_t i = 0; i < m->stored; i += 4096) /* the bytes the mount reads */
			w->sum += w->data[m->data_off + i];
		if (m->stored)
			w->sum += w->data[m->data_off + m->stored - 1];
	}
	w->members++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.data = data, .size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz.img"};
	struct cont_stats st = {0};
	struct src *in;
	int err;

	fz_init_log();
	in = src_from_mem(data, size);
	if (!in)
		return 0;
	if (cont_parttable.probe(in, data, size < 512 ? size : 512)) {
		err = cont_parttable.parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOMEM);
		if (!err)
			FZ_ASSERT(st.members == w.members);
	}
	src_free(in);
	return 0;
}
