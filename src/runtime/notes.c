/* SPDX-License-Identifier: MIT */
/*
 * Notes: messages from the runtime for the end-of-run summary ("wall-clock sampling could
 * not start: ..."). They are records in the session, never text on the program's stderr.
 * Not async-signal-safe (vsnprintf); signal handlers count problems instead.
 */
#include "rt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_NOTES 64 /* a program that triggers the same note in a loop must not flood */

static atomic_int notes_written;

void rt_note(enum sc_note_level level, const char *fmt, ...)
{
	struct sc_rec_note note = { .ts = rt_now_ns(), .level = (uint32_t)level };
	char text[512];
	va_list ap;

	if (atomic_fetch_add(&notes_written, 1) >= MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	note.text_len = (uint32_t)strlen(text) + 1;
	rt_record(SC_REC_NOTE, 0, &note.ts, sizeof(note) - sizeof(note.hdr), text, note.text_len);
}
