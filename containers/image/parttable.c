/* Partition tables: GPT and MBR (with extended partitions).  The container "parttable"
 * (container.h, one of cont_images: probed only with -r).  Every partition becomes a regular
 * member read in place (stream 0, data_off its first byte, size its length), named as fdisk
 * and sfdisk number it: "pN.img", or "pN-NAME.img" when a GPT partition has a name, or else
 * its file system a label (ext2/3/4, FAT: the number keeps two of one name apart).  The
 * nested pass of -r then shows the ones it can read (a file system, an archive) as folders.
 *
 * GPT: the header at LBA 1 of 512-byte sectors, else of 4096-byte ones; its CRC-32 (over
 * header_size bytes with the CRC field zeroed) and the entry array's CRC-32 both checked.  A
 * primary header or entry array that fails is replaced by the backup -- the header in the
 * last sector of the image, its own copy of the array before it -- with a warning; if both
 * fail the table is refused (-EIO).  Entry N (from 0) with a non-zero type GUID is partition
 * N+1.  The name (36 UTF-16LE units) becomes UTF-8, with '/' and control characters replaced
 * by '_' so that it stays one path component.
 *
 * MBR: the four entries of sector 0 are partitions 1-4 (an empty slot keeps its number); an
 * extended one (0x05, 0x0F, 0x85) is not a member but holds a chain of EBRs, each with one
 * logical partition (start relative to that EBR) and a link to the next EBR (relative to the
 * extended partition's start): logical partitions are 5, 6, ... in chain order.  The chain is
 * bounded (MBR_LOGICAL_MAX), every EBR must lie inside the extended partition and come after
 * the one before it (which refuses loops); a broken link ends the chain with a warning, what
 * came before is kept.  A protective MBR (type 0xEE) means GPT.  Sectors are 512 bytes.
 *
 * Probing: "EFI PART" at LBA 1 (512 or 4096), or a protective MBR; else an MBR only if the
 * 0x55AA signature is there, sector 0 is not a FAT/NTFS boot sector (which has 0x55AA too:
 * its BPB is checked), and its non-empty entries are sane: status 0x00 or 0x80, a start
 * and size that are not 0, a start inside the image, no two overlapping.
 *
 * A partition that runs past the end of the image (a truncated image) is clipped to it with a
 * warning; one that starts past the end is listed, unreadable (EIO).
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"

#define GPT_SIG "EFI PART"
#define GPT_HDR_MIN 92
#define GPT_ENTRY_MIN 128
#define GPT_ENTRIES_MAX_BYTES ((uint64_t)4 << 20) /* a larger entry array is refused */
#define GPT_NAME_UNITS 36
#define MBR_SECTOR 512
#define MBR_LOGICAL_MAX 256 /* logical partitions followed, at most */
#define PT_NAME_MAX 160	    /* "p" + number + "-" + 36 units as UTF-8 + ".img" */

struct pt {
	struct src *in;
	const struct cont_sink *sink;
	const char *name; /* the image's, for messages */
	uint64_t size;	  /* of the image */
	uint64_t members;
	bool damaged;
};

struct gpt_hdr {
	unsigned ss; /* sector size */
	uint64_t entries_lba;
	uint32_t nentries, entry_size, entries_crc;
};

static bool is_extended(uint8_t type)
{
	return type == 0x05 || type == 0x0F || type == 0x85;
}

/* Does sector 0 hold a FAT or NTFS boot sector (a BPB) rather than an MBR? */
static bool is_boot_sector(const uint8_t *s)
{
	unsigned bps = le16(s + 11), spc = s[13];

	if (!memcmp(s + 3, "NTFS    ", 8) || !memcmp(s + 3, "EXFAT   ", 8))
		return true;
	if (s[0] != 0xEB && s[0] != 0xE9) /* the jump over the BPB (as fat.c's probe reads it) */
		return false;
	return bps >= 512 && bps <= 4096 && !(bps & (bps - 1)) && spc && !(spc & (spc - 1)) &&
	       le16(s + 14) >= 1 && s[16] >= 1 && s[16] <= 4;
}

/* ---- reporting a partition --------------------------------------------------------------- */

/* UTF-16LE units (up to NUL) as UTF-8 into out, path-safe; its length. */
static size_t utf16_name(const uint8_t *u, size_t units, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < units; i++) {
		uint32_t c = le16(u + 2 * i);
		if (!c)
			break;
		if (c >= 0xD800 && c < 0xDC00 && i + 1 < units && le16(u + 2 * i + 2) >= 0xDC00 &&
		    le16(u + 2 * i + 2) < 0xE000) {
			c = 0x10000 + ((c - 0xD800) << 10) + (le16(u + 2 * i + 2) - 0xDC00);
			i++;
		} else if (c >= 0xD800 && c < 0xE000) {
			c = 0xFFFD; /* a lone surrogate */
		}
		if (c < 0x20 || c == 0x7F || c == '/')
			c = '_';
		if (n + 4 >= cap)
			break;
		if (c < 0x80) {
			out[n++] = (char)c;
		} else if (c < 0x800) {
			out[n++] = (char)(0xC0 | c >> 6);
			out[n++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			out[n++] = (char)(0xE0 | c >> 12);
			out[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[n++] = (char)(0x80 | (c & 0x3F));
		} else {
			out[n++] = (char)(0xF0 | c >> 18);
			out[n++] = (char)(0x80 | ((c >> 12) & 0x3F));
			out[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[n++] = (char)(0x80 | (c & 0x3F));
		}
	}
	out[n] = '\0';
	return n;
}

/* A label of n bytes (padded with spaces or NULs) into out, path-safe: printable ASCII kept,
 * '/' and everything else '_'.  Its length (0: none). */
static size_t label_bytes(const uint8_t *l, size_t n, char *out)
{
	while (n && (l[n - 1] == ' ' || l[n - 1] == '\0'))
		n--;
	for (size_t i = 0; i < n; i++)
		out[i] = l[i] > 0x20 && l[i] < 0x7F && l[i] != '/' ? (char)l[i] : '_';
	out[n] = '\0';
	return n;
}

/* The label of the file system at off (len bytes), for a partition the GPT names not: an
 * ext2/3/4 volume name, a FAT volume label ("NO NAME" is none).  NTFS keeps its label in a
 * file ($Volume): not read.  false when there is none. */
static bool fs_label(struct pt *p, uint64_t off, uint64_t len, char *out)
{
	uint8_t b[2048];

	if (off >= p->size || len < sizeof(b) || src_pread_full(p->in, b, sizeof(b), off))
		return false;
	if (le16(b + 1024 + 56) == 0xEF53) /* ext2/3/4: s_magic, s_volume_name */
		return label_bytes(b + 1024 + 120, 16, out) > 0;
	if (!is_boot_sector(b) || !memcmp(b + 3, "NTFS    ", 8) || !memcmp(b + 3, "EXFAT   ", 8))
		return false;
	const uint8_t *l = le16(b + 22) == 0 && b[66] == 0x29 ? b + 71 /* FAT32 */
			   : b[38] == 0x29			? b + 43
								: NULL;
	return l && memcmp(l, "NO NAME    ", 11) != 0 && label_bytes(l, 11, out) > 0;
}

/* Partition number num: len bytes at off of the image, described at hdr_off; label (UTF-8,
 * path-safe; a GPT name) or NULL: then the file system's label, if it has one.  0 or the sink's -errno. */
static int pt_report(struct pt *p, unsigned num, uint64_t off, uint64_t len, uint64_t hdr_off,
		     const char *label)
{
	char path[PT_NAME_MAX + 48], fsl[17];
	struct arc_member m = {0};

	if ((!label || !*label) && fs_label(p, off, len, fsl))
		label = fsl;
	if (label && *label)
		snprintf(path, sizeof(path), "p%u-%s.img", num, label);
	else
		snprintf(path, sizeof(path), "p%u.img", num);
	m.path = (const uint8_t *)path;
	m.path_len = strlen(path);
	m.link = (const uint8_t *)"";
	m.uname = m.gname = "";
	m.type = MEMBER_REG;
	m.hdr_off = hdr_off;
	m.data_off = off;
	m.size = len;
	m.stored = len;
	m.mode = 0644;
	m.no_owner = true;
	if (off >= p->size) {
		tfs_log(TFS_LOG_WARNING, "%s: partition %u starts at byte %" PRIu64 ", past the end "
			"of the image (%" PRIu64 " bytes): truncated", p->name, num, off, p->size);
		m.unreadable = -EIO;
		m.why = "the partition lies past the end of the image (truncated)";
		m.stored = 0;
		p->damaged = true;
	} else if (len > p->size - off) {
		tfs_log(TFS_LOG_WARNING, "%s: partition %u runs %" PRIu64 " bytes past the end of "
			"the image: clipped to it", p->name, num, len - (p->size - off));
		m.size = m.stored = p->size - off;
		p->damaged = true;
	}
	p->members++;
	if (p->sink->progress)
		p->sink->progress(p->sink->opaque, hdr_off);
	return p->sink->member(p->sink->opaque, &m);
}

/* ---- GPT --------------------------------------------------------------------------------- */

/* The GPT header in the sector at lba (sector size ss), checked: 0, or -EINVAL (none there,
 * or damaged), or the source's -errno. */
static int gpt_header(struct pt *p, unsigned ss, uint64_t lba, struct gpt_hdr *h)
{
	uint8_t s[4096];
	uint32_t hsize, crc;
	int err;

	if (lba > p->size / ss - 1 || p->size / ss == 0)
		return -EINVAL;
	err = src_pread_full(p->in, s, ss, lba * ss);
	if (err)
		return err == -EIO ? -EINVAL : err;
	if (memcmp(s, GPT_SIG, 8))
		return -EINVAL;
	hsize = le32(s + 12);
	if (hsize < GPT_HDR_MIN || hsize > ss)
		return -EINVAL;
	crc = le32(s + 16);
	memset(s + 16, 0, 4);
	if (tfs_crc32(0, s, hsize) != crc)
		return -EINVAL;
	h->ss = ss;
	h->entries_lba = le64(s + 72);
	h->nentries = le32(s + 80);
	h->entry_size = le32(s + 84);
	h->entries_crc = le32(s + 88);
	if (h->entry_size < GPT_ENTRY_MIN || (h->entry_size & (h->entry_size - 1)) ||
	    (uint64_t)h->nentries * h->entry_size > GPT_ENTRIES_MAX_BYTES ||
	    h->entries_lba > p->size / ss)
		return -EINVAL;
	return 0;
}

/* The entry array h names, read into *out and checked against its CRC: 0, -EINVAL (damaged
 * or cut), -ENOMEM or the source's -errno. */
static int gpt_entries(struct pt *p, const struct gpt_hdr *h, uint8_t **out)
{
	size_t len = (size_t)h->nentries * h->entry_size;
	uint8_t *a = malloc(len ? len : 1);
	int err;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	err = src_pread_full(p->in, a, len, h->entries_lba * h->ss);
	if (!err && tfs_crc32(0, a, len) != h->entries_crc)
		err = -EINVAL;
	if (err) {
		free(a);
		return err == -EIO ? -EINVAL : err;
	}
	*out = a;
	return 0;
}

/* The primary header, or the backup: the sector size where "EFI PART" is found.  The backup
 * (the last sector) is looked at only where a GPT is known to be: a primary signature, or a
 * protective MBR (protective).  0, -EINVAL (no GPT there), -EIO (one there, damaged and its
 * backup too: logged), or -errno.  *entries the checked array (malloc'd). */
static int gpt_find(struct pt *p, struct gpt_hdr *h, uint8_t **entries, bool protective)
{
	static const unsigned sizes[] = {512, 4096};
	bool seen = false;
	int err;

	*entries = NULL;
	for (size_t i = 0; i < 2; i++) {
		unsigned ss = sizes[i];
		uint8_t sig[8];
		bool primary;

		if (p->size < 2 * (uint64_t)ss)
			break;
		err = src_pread_full(p->in, sig, 8, ss);
		if (err)
			return err;
		primary = !memcmp(sig, GPT_SIG, 8);
		seen |= primary;
		err = gpt_header(p, ss, 1, h);
		if (!err)
			err = gpt_entries(p, h, entries);
		if (err != -EINVAL)
			return err;
		if (!primary && !protective)
			continue;
		err = gpt_header(p, ss, p->size / ss - 1, h);
		if (!err)
			err = gpt_entries(p, h, entries);
		if (!err) {
			tfs_log(TFS_LOG_WARNING, "%s: the primary GPT header or partition array is "
				"damaged: the backup at the end of the image is used", p->name);
			p->damaged = true;
		}
		if (err != -EINVAL)
			return err;
	}
	if (!seen && !protective)
		return -EINVAL;
	tfs_log(TFS_LOG_ERR, "%s: the GPT header or its partition array is %s, and so is the "
		"backup at the end of the image", p->name, seen ? "damaged (CRC)" : "missing");
	return -EIO;
}

static int gpt_parse(struct pt *p, bool protective)
{
	struct gpt_hdr h;
	uint8_t *a;
	int err = gpt_find(p, &h, &a, protective);

	if (err == -EINVAL) {
		tfs_log(TFS_LOG_ERR, "%s: neither an MBR nor a GPT", p->name);
		return -EINVAL;
	}
	for (uint32_t i = 0; !err && i < h.nentries; i++) {
		const uint8_t *e = a + (size_t)i * h.entry_size;
		static const uint8_t zero[16];
		uint64_t first = le64(e + 32), last = le64(e + 40);
		char label[PT_NAME_MAX];

		if (!memcmp(e, zero, 16))
			continue;
		if (last < first || first > UINT64_MAX / h.ss || last - first >= UINT64_MAX / h.ss) {
			tfs_log(TFS_LOG_WARNING, "%s: GPT entry %" PRIu32 ": LBAs %" PRIu64 "..%" PRIu64
				" make no partition; left out", p->name, i + 1, first, last);
			p->damaged = true;
			continue;
		}
		utf16_name(e + 56, GPT_NAME_UNITS, label, sizeof(label));
		err = pt_report(p, i + 1, first * h.ss, (last - first + 1) * h.ss,
				h.entries_lba * h.ss + (uint64_t)i * h.entry_size, label);
	}
	free(a);
	return err;
}

/* ---- MBR --------------------------------------------------------------------------------- */

struct mbr_ent {
	uint8_t status, type;
	uint32_t start, count;
};

static void mbr_entries(const uint8_t *s, struct mbr_ent e[4])
{
	for (int i = 0; i < 4; i++) {
		const uint8_t *q = s + 446 + 16 * i;
		e[i] = (struct mbr_ent){.status = q[0], .type = q[4], .start = le32(q + 8),
					.count = le32(q + 12)};
	}
}

/* Is sector s an MBR: signature, not a boot sector, sane entries, one at least? gpt set if
 * one entry is protective. */
static bool mbr_sane(const uint8_t *s, uint64_t size, bool *gpt)
{
	struct mbr_ent e[4];
	int used = 0;

	*gpt = false;
	if (s[510] != 0x55 || s[511] != 0xAA || is_boot_sector(s))
		return false;
	mbr_entries(s, e);
	for (int i = 0; i < 4; i++) {
		if (!e[i].type)
			continue;
		if ((e[i].status & 0x7F) || !e[i].start || !e[i].count)
			return false;
		if (e[i].type == 0xEE) {
			*gpt = true;
			continue;
		}
		if ((uint64_t)e[i].start * MBR_SECTOR >= size)
			return false;
		for (int j = 0; j < i; j++)
			if (e[j].type && e[j].type != 0xEE &&
			    e[i].start < (uint64_t)e[j].start + e[j].count &&
			    e[j].start < (uint64_t)e[i].start + e[i].count)
				return false;
		used++;
	}
	return used > 0 || *gpt;
}

/* The logical partitions in the extended partition x (slot slot). */
static int mbr_logical(struct pt *p, const struct mbr_ent *x)
{
	uint64_t base = x->start, end = base + x->count, ebr = base;
	unsigned num = 5;
	int err = 0;

	for (unsigned k = 0; k < MBR_LOGICAL_MAX; k++) {
		uint8_t s[MBR_SECTOR];
		struct mbr_ent e[4];
		uint64_t next;

		err = src_pread_full(p->in, s, sizeof(s), ebr * MBR_SECTOR);
		if (err == -EIO || (!err && (s[510] != 0x55 || s[511] != 0xAA))) {
			tfs_log(TFS_LOG_WARNING, "%s: no extended boot record at sector %" PRIu64
				"%s: the logical partitions end there", p->name, ebr,
				err ? " (past the end of the image)" : "");
			p->damaged = true;
			return 0;
		}
		if (err)
			return err;
		mbr_entries(s, e);
		if (e[0].type && e[0].count && !is_extended(e[0].type)) {
			uint64_t start = ebr + e[0].start;
			if (start + e[0].count > end)
				tfs_log(TFS_LOG_WARNING, "%s: logical partition %u runs past its "
					"extended partition", p->name, num);
			err = pt_report(p, num, start * MBR_SECTOR, (uint64_t)e[0].count * MBR_SECTOR,
					ebr * MBR_SECTOR + 446, NULL);
			if (err)
				return err;
			num++;
		}
		if (!is_extended(e[1].type) || !e[1].count)
			return 0;
		next = base + e[1].start;
		if (next <= ebr || next >= end) {
			tfs_log(TFS_LOG_WARNING, "%s: the extended boot record at sector %" PRIu64
				" links to sector %" PRIu64 ", %s: the logical partitions end there",
				p->name, ebr, next, next <= ebr ? "backwards (a loop?)"
							: "outside the extended partition");
			p->damaged = true;
			return 0;
		}
		ebr = next;
	}
	tfs_log(TFS_LOG_WARNING, "%s: more than %d logical partitions: the rest left out",
		p->name, MBR_LOGICAL_MAX);
	p->damaged = true;
	return 0;
}

static int mbr_parse(struct pt *p, const uint8_t *s)
{
	struct mbr_ent e[4];
	bool ext_seen = false;
	int err = 0;

	mbr_entries(s, e);
	for (int i = 0; !err && i < 4; i++) {
		if (!e[i].type || !e[i].count)
			continue;
		if (is_extended(e[i].type)) {
			if (ext_seen) {
				tfs_log(TFS_LOG_WARNING, "%s: a second extended partition (%d): "
					"left out", p->name, i + 1);
				p->damaged = true;
				continue;
			}
			ext_seen = true;
			err = mbr_logical(p, &e[i]);
			continue;
		}
		err = pt_report(p, (unsigned)i + 1, (uint64_t)e[i].start * MBR_SECTOR,
				(uint64_t)e[i].count * MBR_SECTOR, 446 + 16 * (uint64_t)i, NULL);
	}
	return err;
}

/* ---- the container ----------------------------------------------------------------------- */

static bool pt_probe(struct src *in, const uint8_t *head, size_t len)
{
	uint64_t size = src_size(in);
	uint8_t s[MBR_SECTOR], sig[8];
	bool gpt;

	/* a stream being decoded (disk.img.gz) has no size yet: UINT64_MAX, bounds nothing */
	if (size < 2 * MBR_SECTOR)
		return false;
	if (len >= MBR_SECTOR)
		memcpy(s, head, MBR_SECTOR);
	else if (src_pread_full(in, s, MBR_SECTOR, 0))
		return false;
	if (mbr_sane(s, size, &gpt))
		return true;
	/* no MBR (or an odd one): "EFI PART" at LBA 1 (the parse checks the rest) */
	for (uint64_t ss = 512; ss <= 4096; ss *= 8)
		if (size >= 2 * ss && !src_pread_full(in, sig, 8, ss) && !memcmp(sig, GPT_SIG, 8))
			return true;
	return false;
}

static int pt_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct pt p = {.in = in, .sink = sink, .name = sink->name ? sink->name : "image",
		       .size = src_size(in)};
	uint8_t s[MBR_SECTOR];
	bool gpt = false;
	int err;

	if (p.size == SRC_SIZE_UNKNOWN)
		return -EINVAL;
	err = src_pread_full(in, s, sizeof(s), 0);
	if (err)
		return err;
	if (mbr_sane(s, p.size, &gpt) && !gpt)
		err = mbr_parse(&p, s);
	else
		err = gpt_parse(&p, gpt);
	if (stats)
		*stats = (struct cont_stats){.members = p.members, .damaged = p.damaged};
	return err;
}

const struct container cont_parttable = {
	.name = "parttable",
	.probe = pt_probe,
	.parse = pt_parse,
};
