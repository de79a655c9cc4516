/* Two guards around iobuf for the preview bridge: an empty iobuf has no
 * memory at all (data == NULL), and NULL + 0 or memcpy (NULL, p, 0) is
 * undefined behaviour that UBSan reports; so empty buffers read as "" and
 * empty appends do nothing. */
#ifndef AB_NET_PREVIEW_BUF_H
#define AB_NET_PREVIEW_BUF_H

#include "net/iobuf.h"

static inline const char *
ab_preview_bytes (const struct ab_iobuf_s *b)
{
	return b->data != NULL ? b->data + b->start : "";
}

static inline void
ab_preview_append (struct ab_iobuf_s *b, const void *p, size_t n)
{
	if (n > 0)
		ab_iobuf_append (b, p, n);
}

#endif
