/* SPDX-License-Identifier: MIT */
/* JSON written as it goes, in jansson's compact format (json_out.h). */
#include "json_out.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at `s` (first byte >= 0x80), or 0 when it is not
 * one (overlong forms, surrogates and values past U+10FFFF included, as jansson refuses). */
static size_t utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void sc_json_put_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;

	putc_unlocked('"', f);
	while (*p) {
		const char *esc = NULL;
		char seq[8];
		size_t n = 1;

		if (*p >= 0x80) {
			n = utf8_len(p);
			if (!n) {
				esc = "\xef\xbf\xbd"; /* U+FFFD */
				n = 1;
			}
		} else if (*p == '"') {
			esc = "\\\"";
		} else if (*p == '\\') {
			esc = "\\\\";
		} else if (*p < 0x20) {
			switch (*p) {
			case '\b':
				esc = "\\b";
				break;
			case '\f':
				esc = "\\f";
				break;
			case '\n':
				esc = "\\n";
				break;
			case '\r':
				esc = "\\r";
				break;
			case '\t':
				esc = "\\t";
				break;
			default:
				snprintf(seq, sizeof(seq), "\\u%04X", *p);
				esc = seq;
			}
		}
		if (esc) {
			fwrite(run, 1, (size_t)(p - run), f);
			fputs(esc, f);
			run = p + n;
		}
		p += n;
	}
	fwrite(run, 1, (size_t)(p - run), f);
	putc_unlocked('"', f);
}

void sc_json_put_real(FILE *f, double v)
{
	sc_json_put_real_precision(f, v, 9);
}

void sc_json_put_real_precision(FILE *f, double v, int precision)
{
	char buf[48], *e;
	int len;

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	len = snprintf(buf, sizeof(buf) - 3, "%.*g", precision, v);
	if (!strchr(buf, '.') && !strchr(buf, 'e')) {
		memcpy(buf + len, ".0", 3);
		len += 2;
	}
	e = strchr(buf, 'e');
	if (e) { /* as jansson: e+09 -> e9, e-07 -> e-7 */
		char *start = e + 1, *end = start + 1;

		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start)
			memmove(start, end, strlen(end) + 1);
	}
	fputs(buf, f);
}

void sc_json_put_int(FILE *f, long long v)
{
	char buf[24], *p = buf + sizeof(buf);
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), f);
}

void sc_json_put_key(FILE *f, const char *key)
{
	putc_unlocked('"', f);
	fputs(key, f);
	fputs("\":", f);
}

void sc_json_put_value(FILE *f, json_t *v)
{
	if (!v) {
		fputs("null", f);
		return;
	}
	json_dumpf(v, f, JSON_COMPACT | JSON_REAL_PRECISION(9) | JSON_ENCODE_ANY);
	json_decref(v);
}
