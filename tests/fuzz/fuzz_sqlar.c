/* libFuzzer harness: SQLite archives -- the sqlar container (containers/sqlar.c: the database
 * read by SQLite through a VFS over the source, codecs/sqlar/sqlite_src.c, schema untrusted)
 * and the codec "sqlar" of its files' streams (codecs/sqlar/sqlar_codec.c over
 * codecs/pieces.c: blobs read with sqlite3_blob_read, zlib's inflated), on arbitrary bytes.
 * The checks are fuzz_image.h's.
 *
 * SQLite (the system's) is built without the fuzzer's coverage: the mutations are guided by
 * our side (the VFS's reads, the rows, the pieces).  Inputs that do not start with SQLite's
 * magic are left to the probe, which refuses them at once.
 *
 *   build-fuzz/tests/fuzz/fuzz_sqlar -max_len=65536 CORPUS_DIR
 */
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fzi_one(&cont_sqlar, "sqlar", data, size);
	return 0;
}
