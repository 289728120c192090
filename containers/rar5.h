/* Which files of a rar 5 archive have encrypted data, found by walking its block headers.
 *
 * libarchive reads rar for the libarchive container (libarchive.c), but before 3.8.0 its rar 5
 * reader does not say which entries are encrypted (archive_entry_is_data_encrypted is 0: it
 * skips the file encryption record), and decoding one fails as damage -- EIO, where tarseek
 * promises EACCES.  rar5_scan reads the headers itself to tell: the files in header order
 * (file headers, type 2; service headers are not files and libarchive lists none of them),
 * each with its unpacked size and whether its extra area holds a file encryption record
 * (type 0x01).  libarchive.c pairs them with libarchive's entries by their order, and trusts
 * a pair only when the sizes agree.
 *
 * The walk stops, keeping what it found, at the end of archive header, at an archive
 * encryption header (encrypted headers, which libarchive refuses), at a header whose CRC-32
 * does not match or that does not fit the file (damage: libarchive says so itself), and at
 * the end of the source.  An archive that does not start with the rar 5 signature (another
 * format, or a rar behind a self-extracting stub) yields no files.
 *
 * Not thread-safe on one struct rar5_files; the source is only read.
 */
#ifndef TARSEEK_RAR5_H
#define TARSEEK_RAR5_H

#include <stdbool.h>
#include <stdint.h>

#include "common/source.h"

struct rar5_file {
	uint64_t usize;	 /* unpacked size, as the file header says */
	bool encrypted; /* a file encryption record in its extra area */
};

struct rar5_files {
	struct rar5_file *f; /* n files in header order; malloc'd, freed by rar5_files_free */
	uint64_t n;
	uint64_t encrypted; /* how many of them are */
};

/* Walks in's headers into *out (cleared on entry; out->n = 0 if in is not a rar 5 archive).
 * 0, -ENOMEM, or the source's -errno (-EIO, a remote source's -ESTALE, ...), with *out freed
 * and cleared.  Logs nothing. */
int rar5_scan(struct src *in, struct rar5_files *out);

/* Frees what rar5_scan put in f and clears it; NULL or a cleared f does nothing. */
void rar5_files_free(struct rar5_files *f);

#endif
