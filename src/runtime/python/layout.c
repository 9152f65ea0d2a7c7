/* SPDX-License-Identifier: MIT */
/*
 * The per-version layouts of CPython's structures (layout.h), and the check of 3.13's own
 * description of itself (_Py_DebugOffsets) against ours.
 */
#include "layout.h"

#include <string.h>

/* Fields every version from 3.10 to 3.13 has at the same place. */
#define COMMON_OBJECTS                                                                    \
	.ob_type = 8, .ob_size = 16, .tp_name = 24, .tp_basicsize = 32, .bytes_data = 32, \
	.str_length = 16, .str_state = 32

static const struct rt_py_layout layouts[] = {
	{
		.minor = 10,
		.rt_tss_key = 584,
		.rt_gil = 352,
		.interp_gil = -1,
		.gil_holder = 8,
		.gil_locked = 16,
		.rt_interp_main = 40,
		.ts_interp = 16,
		.ts_native_tid = -1,
		.ts_frame = 24,
		.cframe_current = -1,
		.fr_code = 32,
		.fr_previous = 24,
		.fr_instr = 96,
		.fr_owner = -1,
		.fr_is_entry = -1,
		.instr_is_index = true,
		.frame_bytes = 100,
		.co_filename = 104,
		.co_name = 112,
		.co_qualname = -1,
		.co_linetable = 120,
		.co_firstlineno = 40,
		.co_code = -1,
		.co_basicsize = 176,
		COMMON_OBJECTS,
		.str_ascii_data = 48,
		.str_compact_data = 72,
	},
	{
		.minor = 11,
		.rt_tss_key = 592,
		.rt_gil = 360,
		.interp_gil = -1,
		.gil_holder = 8,
		.gil_locked = 16,
		.rt_interp_main = 48,
		.ts_interp = 16,
		.ts_native_tid = 160,
		.ts_frame = 56,
		.cframe_current = 8,
		.fr_code = 32,
		.fr_previous = 48,
		.fr_instr = 56,
		.fr_owner = 69,
		.fr_is_entry = 68,
		.frame_bytes = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 72,
		.co_code = 184,
		.co_basicsize = 184,
		COMMON_OBJECTS,
		.str_ascii_data = 48,
		.str_compact_data = 72,
	},
	{
		.minor = 12,
		.rt_tss_key = 1544,
		.rt_gil = -1,
		.interp_gil = 384,
		.gil_holder = 8,
		.gil_locked = 16,
		.rt_interp_main = 48,
		.ts_interp = 16,
		.ts_native_tid = 144,
		.ts_frame = 56,
		.cframe_current = 0,
		.fr_code = 0,
		.fr_previous = 8,
		.fr_instr = 56,
		.fr_owner = 70,
		.fr_is_entry = -1,
		.frame_bytes = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.co_code = 192,
		.co_basicsize = 192,
		COMMON_OBJECTS,
		.str_ascii_data = 40,
		.str_compact_data = 56,
	},
	{
		.minor = 13,
		.rt_tss_key = 2160,
		.rt_gil = -1,
		.interp_gil = 16,
		.gil_holder = 8,
		.gil_locked = 16,
		.rt_interp_main = 640,
		.ts_interp = 16,
		.ts_native_tid = 160,
		.ts_frame = 72,
		.cframe_current = -1,
		.fr_code = 0,
		.fr_previous = 8,
		.fr_instr = 56,
		.fr_owner = 70,
		.fr_is_entry = -1,
		.frame_bytes = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.co_code = 200,
		.co_basicsize = 200,
		COMMON_OBJECTS,
		.str_ascii_data = 40,
		.str_compact_data = 56,
	},
};

const struct rt_py_layout *rt_py_layout_of_minor(unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/*
 * _Py_DebugOffsets of 3.13 read as an array of uint64: the index of each value we use. The
 * struct's own layout is fixed within a minor version only, so these are 3.13's.
 */
enum debug_offset_index {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_INTERP_CEVAL_GIL = 14,
	DO_TS_INTERP = 22,
	DO_TS_CURRENT_FRAME = 23,
	DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30,
	DO_FRAME_INSTR_PTR = 31,
	DO_FRAME_OWNER = 33,
	DO_CODE_FILENAME = 35,
	DO_CODE_NAME = 36,
	DO_CODE_QUALNAME = 37,
	DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39,
	DO_CODE_ADAPTIVE = 43,
	DO_OB_TYPE = 45,
	DO_TP_NAME = 47,
	DO_BYTES_OB_SIZE = 65,
	DO_BYTES_OB_SVAL = 66,
	DO_STR_STATE = 68,
	DO_STR_LENGTH = 69,
	DO_STR_ASCII_SIZE = 70,
};

struct debug_field {
	enum debug_offset_index index;
	const char *name;
	size_t offset; /* of the int32_t in struct rt_py_layout */
};

#define FIELD(idx, member)                                          \
	{                                                           \
		idx, #member, offsetof(struct rt_py_layout, member) \
	}

static const struct debug_field debug_fields[] = {
	FIELD(DO_INTERP_CEVAL_GIL, interp_gil),
	FIELD(DO_TS_INTERP, ts_interp),
	FIELD(DO_TS_CURRENT_FRAME, ts_frame),
	FIELD(DO_FRAME_PREVIOUS, fr_previous),
	FIELD(DO_FRAME_EXECUTABLE, fr_code),
	FIELD(DO_FRAME_INSTR_PTR, fr_instr),
	FIELD(DO_FRAME_OWNER, fr_owner),
	FIELD(DO_CODE_FILENAME, co_filename),
	FIELD(DO_CODE_NAME, co_name),
	FIELD(DO_CODE_QUALNAME, co_qualname),
	FIELD(DO_CODE_LINETABLE, co_linetable),
	FIELD(DO_CODE_FIRSTLINENO, co_firstlineno),
	FIELD(DO_CODE_ADAPTIVE, co_code),
	FIELD(DO_OB_TYPE, ob_type),
	FIELD(DO_TP_NAME, tp_name),
	FIELD(DO_BYTES_OB_SIZE, ob_size),
	FIELD(DO_BYTES_OB_SVAL, bytes_data),
	FIELD(DO_STR_STATE, str_state),
	FIELD(DO_STR_LENGTH, str_length),
	FIELD(DO_STR_ASCII_SIZE, str_ascii_data),
};

bool rt_py_layout_from_debug_offsets(const struct rt_py_layout *base, const void *runtime,
				     uint32_t version, struct rt_py_layout *out,
				     bool *free_threaded, struct rt_py_mismatch *m)
{
	const uint64_t *d = runtime;
	bool same = true;

	*out = *base;
	*free_threaded = false;
	if (memcmp(runtime, "xdebugpy", 8)) {
		*m = (struct rt_py_mismatch){ "cookie", d[0], 0 };
		return false;
	}
	if ((d[DO_VERSION] >> 16) != (version >> 16)) {
		*m = (struct rt_py_mismatch){ "version", d[DO_VERSION], version };
		return false;
	}
	*free_threaded = d[DO_FREE_THREADED] != 0;
	for (size_t i = 0; i < sizeof(debug_fields) / sizeof(debug_fields[0]); i++) {
		const struct debug_field *f = &debug_fields[i];
		int32_t *field = (int32_t *)((char *)out + f->offset);
		uint64_t v = d[f->index];

		if (v > INT32_MAX || (int32_t)v != *field) {
			if (same)
				*m = (struct rt_py_mismatch){ f->name, v, *field };
			same = false;
		}
		if (v <= INT32_MAX)
			*field = (int32_t)v;
	}
	/* The interpreter's own non-ASCII string header follows its ASCII one. */
	out->str_compact_data = out->str_ascii_data + 16;
	return same;
}
