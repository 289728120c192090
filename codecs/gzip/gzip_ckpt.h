/* gzip's checkpoint flags (the fields are described at the top of gzip.c), shared by the
 * codec and the encoder that writes checkpoints with the file (enc_gzip.c). */
#ifndef TARSEEK_GZIP_CKPT_H
#define TARSEEK_GZIP_CKPT_H

#define GZ_CK_MEMBER 0x1u /* checkpoint flag: coff is the first byte of a member header */

#endif
