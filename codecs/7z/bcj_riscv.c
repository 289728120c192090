/* The RISC-V branch converter, decoder side (bcj_riscv.h). */
#include "codecs/7z/bcj_riscv.h"

#include <string.h>

#include "common/byteio.h"

#define RV_OP_JAL_RA 0xEFu /* JAL's opcode with rd's low bit set: x1 or x5 (checked below) */
#define RV_OP_AUIPC 0x17u

/* A JAL at p (rd x1 or x5): the encoder stored the absolute target, bits 20:1, as
 * [bits 20:17 in p[1]'s high nibble][bits 16:9 in p[2]][bits 8:1 in p[3]]; put back the J-type
 * immediate of target - pc: imm[20|10:1|11|19:12] in instruction bits 31:12. */
static void rv_jal(uint8_t *p, uint32_t pc)
{
	uint32_t abs = ((uint32_t)(p[1] & 0xF0) << 13) | ((uint32_t)p[2] << 9) |
		       ((uint32_t)p[3] << 1);
	uint32_t rel = abs - pc;
	uint32_t imm = ((rel >> 20) & 1) << 19 | ((rel >> 1) & 0x3FF) << 9 |
		       ((rel >> 11) & 1) << 8 | ((rel >> 12) & 0xFF); /* bits 31:12 */

	p[1] = (uint8_t)((p[1] & 0x0F) | (imm & 0x0F) << 4);
	p[2] = (uint8_t)(imm >> 4);
	p[3] = (uint8_t)(imm >> 12);
}

/* An AUIPC at p whose rd is neither x0 nor x2 and the word after it, inst2: if inst2 reads
 * that rd (rs1, bits 19:15) and is a 32-bit instruction, the encoder saw it as one of its
 * special pairs, which it swapped ("fake" pair): swap back.  Returns the bytes to skip. */
static size_t rv_auipc_fake(uint8_t *p, uint32_t inst)
{
	uint32_t inst2 = le32(p + 4);
	uint32_t rd = (inst >> 7) & 0x1F, rs1 = (inst2 >> 15) & 0x1F;

	if (rd != rs1 || (inst2 & 3) != 3)
		return 6; /* the next AUIPC's first two bytes must not be taken (see the header) */
	put_le32(p, RV_OP_AUIPC | 2u << 7 | inst2 << 12);
	put_le32(p + 4, (inst & 0xFFFFF000u) + (inst2 >> 20));
	return 8;
}

/* A special AUIPC at p (rd x2): bits 31:12 hold inst2's low 20 bits, whose rs1 (bits 19:15 of
 * inst2, 31:27 here) is neither x0 nor x2, and the two low bits of inst2 set (bits 13:12 here);
 * the next word, big endian, is the absolute address.  Rebuild AUIPC rs1, hi20 and inst2 with
 * the low 12 bits of address - pc (AUIPC's part rounded for inst2's sign-extended 12 bits). */
static size_t rv_auipc_special(uint8_t *p, uint32_t inst, uint32_t pc)
{
	uint32_t rs1 = inst >> 27;
	uint32_t rel;

	if (((inst >> 7) & 0x1F) != 2 || ((inst >> 12) & 3) != 3 || rs1 == 0 || rs1 == 2)
		return 4;
	rel = be32(p + 4) - pc;
	put_le32(p, RV_OP_AUIPC | rs1 << 7 | ((rel + 0x800) & 0xFFFFF000u));
	put_le32(p + 4, (inst >> 12) | rel << 20);
	return 8;
}

size_t bcj_riscv_decode(uint8_t *buf, size_t size, uint32_t pos)
{
	size_t i = 0;

	while (i + 8 <= size) {
		uint8_t *p = buf + i;
		uint32_t pc = pos + (uint32_t)i;

		if (p[0] == RV_OP_JAL_RA) {
			if (p[1] & 0x0D) { /* rd is not x1 or x5 */
				i += 2;
				continue;
			}
			rv_jal(p, pc);
			i += 4;
		} else if ((p[0] & 0x7F) == RV_OP_AUIPC) {
			uint32_t inst = le32(p);

			if (inst & 0xE80) /* rd is neither x0 nor x2 */
				i += rv_auipc_fake(p, inst);
			else
				i += rv_auipc_special(p, inst, pc);
		} else {
			i += 2;
		}
	}
	return i < size ? i : size;
}
