/* The RISC-V branch converter (7-Zip's method 0B, xz's filter 0x0B), decoder only
 * (bcj_riscv.c); the 7z graph's node that applies it is in sevenzip_graph.c.
 *
 * The encoder makes the pc-relative targets of calls absolute so that repeated calls to one
 * function compress alike: a JAL whose rd is x1 or x5 gets its 20-bit immediate replaced by
 * the absolute target (bits 20:1, in a big-endian-ish order), and an AUIPC (rd not x0 or x2)
 * followed by an instruction whose rs1 is that rd (any 32-bit instruction: its two low bits
 * set) becomes a "special" AUIPC (rd x2, holding inst2's low 20 bits) and the absolute 32-bit
 * address, big endian.  An input that already looks like a special AUIPC is swapped into a
 * "fake" pair so that the transform is a bijection on any bytes.  The decoder undoes all of
 * it.  Instructions are 2-byte aligned (the C extension); a match needs 8 bytes.
 *
 * bcj_riscv_decode converts buf[0..size) in place, buf[0] being at stream position pos (mod
 * 2^32), and returns how many leading bytes are final (never more than size; up to 7 may be
 * left for the next call, which must start with them and the bytes after them).  At the
 * stream's end the bytes left are final as they are.
 */
#ifndef TARSEEK_BCJ_RISCV_H
#define TARSEEK_BCJ_RISCV_H

#include <stddef.h>
#include <stdint.h>

size_t bcj_riscv_decode(uint8_t *buf, size_t size, uint32_t pos);

#endif
