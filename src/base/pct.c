#include "base/pct.h"

#include <stdlib.h>

#include "base/hex.h"
#include "base/xalloc.h"

char *
ab_pct_decode (const char *s, size_t len, bool plus_is_space)
{
	char *out = xmalloc (len + 1), *o = out;

	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			*o++ = plus_is_space && s[i] == '+' ? ' ' : s[i];
			continue;
		}
		int hi = i + 2 < len ? ab_hex_digit (s[i + 1]) : -1;
		int lo = i + 2 < len ? ab_hex_digit (s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free (out);
			return NULL;
		}
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = '\0';
	return out;
}
