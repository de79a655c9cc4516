/* One hexadecimal digit's value (RFC 3986 2.1 percent escapes, RFC 9112
 * 7.1 chunk sizes): 0-15, or -1 for any other character. */
#ifndef AB_BASE_HEX_H
#define AB_BASE_HEX_H

static inline int
ab_hex_digit (char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
