/* Zip archives: the container (cont_zip, container.h) and what a reader needs of the format.
 *
 * What a zip says of its members is in its central directory, at the end: found from the
 * end-of-central-directory record (searched for in the last 64 KiB + 22 bytes, the longest a
 * comment can make it), or its zip64 record through the zip64 locator.  Data prepended to the
 * archive (a self-extracting stub, a zip appended to something) shifts every offset the
 * directory gives by the same amount: that amount is found from where the directory really
 * is.  A zip split over several disks is refused.
 *
 * Per entry, from the central directory: the name (raw bytes as stored; the Info-ZIP Unicode
 * Path extra field's UTF-8 name when its CRC matches the stored name), the type and mode
 * (from the external attributes of entries made on unix -- a symlink's data is its target;
 * else a name ending in '/' or the MS-DOS directory attribute is a folder, 0755, and the
 * rest files, 0644), the mtime (the extended timestamp extra field, else NTFS times, else the
 * local header's extended timestamp -- macOS's archivers write it there only, and unzip,
 * bsdtar and 7-Zip show it -- else the DOS date and time, which have no zone: see member.h
 * dos_time), uid/gid from the Info-ZIP unix extra field, the sizes and the local header offset
 * (zip64 extra field where the 32-bit fields say so).  The data follows the local header,
 * whose name and extra lengths need not be the central directory's: it is read when the data
 * is (zip_local_data), and while indexing only for the time of an entry whose directory
 * record has none but the DOS one -- and no more once 8 local headers in a row had none
 * either (Windows', Java's and Python's zips) -- so a zip of 70,000 files made by Info-ZIP
 * or 7-Zip is indexed from its directory alone.
 *
 * Methods: stored (read in place), deflate ("deflate": raw deflate), Deflate64 ("deflate64"),
 * bzip2, LZMA ("lzma-zip"), xz, zstd, PPMd ("ppmd-zip").  Others (implode, ...) are listed and
 * fail to read with EOPNOTSUPP.
 *
 * Encrypted entries (flag bit 0): traditional PKWARE encryption ("ZipCrypto") and WinZip's
 * AES (method 99, extra field 0x9901 with the AE version, the strength and the real method)
 * are streams like the others, of the real method's codec, with the encryption described in
 * the stream's record (cont_stream.crypt, crypto/zip_crypt.h: the scheme, ZipCrypto's check
 * byte -- the CRC's high byte, or the DOS time's when the entry has a data descriptor -- and
 * the method); the index decrypts them with the passwords given (crypto/keyring.h), below
 * the codec.  An AE-2 entry has no CRC-32 (it writes 0 there: its authentication code is the
 * check), so it is not taken for one.  PKWARE's strong encryption (flag bits 6 and 13) is
 * listed and fails to read with EOPNOTSUPP; an AES entry without its extra field with EIO.
 *
 * No central directory (a truncated zip): the entries are read from their local headers,
 * from the start, as far as they tell their sizes (an entry that puts them in a data
 * descriptor ends the walk), and the archive counts as damaged.
 */
#ifndef TARSEEK_ZIP_H
#define TARSEEK_ZIP_H

#include <stdint.h>

#include "common/source.h"
#include "containers/container.h"

/* The offset of the data that follows the local header at lho in file: 0 and *data, -EIO
 * when there is no valid local header there, or the source's -errno when it cannot be read
 * (-EIO, -ENOMEM, a remote source's -ESTALE, ...); either logged, naming archive. */
int zip_local_data(struct src *file, uint64_t lho, const char *archive, uint64_t *data);

#endif
