/* SPDX-License-Identifier: MIT */
/*
 * NVTX through CUPTI's NVTX callbacks, on the thread that called NVTX:
 *   push/pop ranges    regions of the thread (MARKER_CORE_API)
 *   start/end ranges   may end on another thread: kept by id, written whole at their end as
 *                      a region of the thread that started them
 *   marks              instants
 *   messages           ASCII, wide (converted to UTF-8) and registered strings; a named
 *                      domain, the payload and the NVTX category are region arguments
 *   names              nvtxNameOsThread for the calling thread names it; nvtxNameCudaStream
 *                      and nvtxNameCuStream name the stream's track
 */
#include "nvtx.h"

#include "activity.h"

#include <cuda.h>
#include <generated_nvtx_meta.h> /* not included by cupti.h */

#include "nvtx_payload.h" /* after NVTX's own headers, which it uses without their code */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#define MAX_HANDLES 4096     /* registered strings and domains */
#define MAX_OPEN_RANGES 4096 /* start/end ranges open at once */
#define MESSAGE_MAX 1024

/* ---- handles -> text: registered strings and domain names ---- */

static struct {
	pthread_mutex_t lock;
	struct {
		const void *handle;
		char *text;
	} slot[MAX_HANDLES];
} names = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t handle_slot(const void *h)
{
	return ((uintptr_t)h >> 4) * 0x9e3779b97f4a7c15ull % MAX_HANDLES;
}

static void remember(const void *handle, const char *text)
{
	size_t i = handle_slot(handle);

	if (!handle || !text)
		return;
	pthread_mutex_lock(&names.lock);
	for (size_t n = 0; n < MAX_HANDLES; n++, i = (i + 1) % MAX_HANDLES)
		if (!names.slot[i].handle || names.slot[i].handle == handle) {
			free(names.slot[i].text);
			names.slot[i].handle = handle;
			names.slot[i].text = strdup(text);
			break;
		}
	pthread_mutex_unlock(&names.lock);
}

/*
 * When NVTX calls this library directly (cuda_nvtx_inject), the handles of domains and
 * registered strings are ours: a pointer to the text, made once at registration, so that
 * a range's name is found without a lock or a search.
 */
#define OWN_HANDLE_MAGIC 0x5c0be17eu
struct own_handle {
	uint32_t magic;
	char text[];
};
static bool own_handles;

/* The handles made, by their text and domain: a string registered again (a program that
 * registers per call) gets its first handle back instead of more memory. */
#define OWN_HANDLES 8192
static struct {
	pthread_mutex_t lock;
	struct {
		uint64_t key;
		const void *domain;
		struct own_handle *h;
	} slot[OWN_HANDLES];
} made = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t text_key(const char *text, const void *domain)
{
	uint64_t h = 1469598103934665603ull ^ (uintptr_t)domain;

	for (; *text; text++)
		h = (h ^ (unsigned char)*text) * 1099511628211ull;
	return h | 1; /* 0: a free slot */
}

static const void *own_handle_new(const void *domain, const char *text)
{
	size_t n, i;
	uint64_t key;
	struct own_handle *h = NULL;

	text = text ? text : "";
	n = strlen(text) + 1;
	key = text_key(text, domain);
	i = key % OWN_HANDLES;
	pthread_mutex_lock(&made.lock);
	for (size_t k = 0; k < OWN_HANDLES && made.slot[i].key; k++, i = (i + 1) % OWN_HANDLES)
		if (made.slot[i].key == key && made.slot[i].domain == domain &&
		    !strcmp(made.slot[i].h->text, text)) {
			h = made.slot[i].h;
			break;
		}
	if (!h && (h = malloc(sizeof(*h) + n))) {
		h->magic = OWN_HANDLE_MAGIC;
		memcpy(h->text, text, n);
		if (!made.slot[i].key) /* else the table is full: the handle is kept unlisted */
			made.slot[i].key = key, made.slot[i].domain = domain, made.slot[i].h = h;
	}
	pthread_mutex_unlock(&made.lock);
	return h; /* NULL, NVTX's own answer without a tool, when memory ran out */
}

/* The text of CUPTI's `handle` into buf; false if unknown. */
static bool recall(const void *handle, char *buf, size_t cap)
{
	size_t i = handle_slot(handle);
	bool found = false;

	if (!handle)
		return false;
	pthread_mutex_lock(&names.lock);
	for (size_t n = 0; n < MAX_HANDLES && names.slot[i].handle; n++, i = (i + 1) % MAX_HANDLES)
		if (names.slot[i].handle == handle) {
			snprintf(buf, cap, "%s", names.slot[i].text ? names.slot[i].text : "");
			found = true;
			break;
		}
	pthread_mutex_unlock(&names.lock);
	return found;
}

/* ---- messages ---- */

/* A wide string (UTF-32 on Linux) as UTF-8, cut to fit. */
static void utf8_from_wide(const wchar_t *w, char *out, size_t cap)
{
	size_t n = 0;

	for (; w && *w && n + 5 < cap; w++) {
		uint32_t c = (uint32_t)*w;

		if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
			c = 0xfffd; /* not a character: the replacement character */
		if (c < 0x80) {
			out[n++] = (char)c;
		} else if (c < 0x800) {
			out[n++] = (char)(0xc0 | c >> 6);
			out[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			out[n++] = (char)(0xe0 | c >> 12);
			out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			out[n++] = (char)(0xf0 | c >> 18);
			out[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
			out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[n] = '\0';
}

/*
 * What an NVTX event says: its message, domain, payload and category. Texts are pointed at
 * where they are (the caller's string, a handle's text) and copied once, into the record;
 * only a converted or looked-up text is kept here.
 */
#define EVENT_ARGS 8
struct event {
	const char *message;
	char text[MESSAGE_MAX]; /* a wide message as UTF-8, or one looked up in CUPTI's handles */
	char domain[128];	/* a domain's name looked up in CUPTI's handles */
	struct cuda_arg args[EVENT_ARGS];
	char numbers[EVENT_ARGS][32];
	struct nvtx_payload_arg decoded[EVENT_ARGS]; /* an extended payload's values */
	unsigned nargs;
};

/* `value` must last as long as the event. */
static void add_arg(struct event *e, char type, const char *name, const char *value)
{
	if (e->nargs < EVENT_ARGS)
		e->args[e->nargs++] = (struct cuda_arg){ type, name, value };
}

/* Decimal digits without the C library's formatting (a range's hot path). */
static const char *decimal(uint64_t v, bool negative, char *buf)
{
	char *p = buf + 31;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	if (negative)
		*--p = '-';
	return p;
}

static void add_unsigned(struct event *e, const char *name, uint64_t v)
{
	if (e->nargs < EVENT_ARGS)
		add_arg(e, SC_ARG_UINT, name, decimal(v, false, e->numbers[e->nargs]));
}

static void add_signed(struct event *e, const char *name, int64_t v)
{
	uint64_t magnitude = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	if (e->nargs < EVENT_ARGS)
		add_arg(e, SC_ARG_INT, name, decimal(magnitude, v < 0, e->numbers[e->nargs]));
}

static void add_double(struct event *e, const char *name, double v, int digits)
{
	if (e->nargs < EVENT_ARGS) {
		snprintf(e->numbers[e->nargs], sizeof(e->numbers[0]), "%.*g", digits, v);
		add_arg(e, SC_ARG_DOUBLE, name, e->numbers[e->nargs]);
	}
}

static void from_message(struct event *e, const char *ascii, const wchar_t *wide)
{
	if (ascii) {
		e->message = ascii;
	} else if (wide) {
		utf8_from_wide(wide, e->text, sizeof(e->text));
		e->message = e->text;
	} else {
		e->message = "(unnamed)";
	}
}

/* A handle's text: our own handle's, else looked up into buf; NULL if unknown. */
static const char *handle_text(const void *handle, char *buf, size_t cap)
{
	const struct own_handle *h = handle;

	if (own_handles)
		return h && h->magic == OWN_HANDLE_MAGIC ? h->text : NULL;
	return recall(handle, buf, cap) ? buf : NULL;
}

/* NVTX_PAYLOAD_TYPE_EXT: an array of payloads (reserved0 long), each by its schema. */
static void from_extended_payload(struct event *e, const nvtxEventAttributes_t *a)
{
	const nvtxPayloadData_t *data = (const nvtxPayloadData_t *)(uintptr_t)a->payload.ullValue;
	unsigned n = nvtx_payload_decode(data, a->reserved0 > 0 ? (size_t)a->reserved0 : 0,
					 e->decoded, EVENT_ARGS - e->nargs);

	for (unsigned i = 0; i < n; i++)
		add_arg(e, e->decoded[i].type, e->decoded[i].name, e->decoded[i].value);
}

static void from_attributes(struct event *e, const nvtxEventAttributes_t *a)
{
	if (!a) {
		from_message(e, NULL, NULL);
		return;
	}
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		from_message(e, a->message.ascii, NULL);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		from_message(e, NULL, a->message.unicode);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		e->message = handle_text(a->message.registered, e->text, sizeof(e->text));
		if (!e->message)
			e->message = "(unregistered string)";
		break;
	default:
		from_message(e, NULL, NULL);
	}
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		add_unsigned(e, "payload", a->payload.ullValue);
		break;
	case NVTX_PAYLOAD_TYPE_INT64:
		add_signed(e, "payload", a->payload.llValue);
		break;
	case NVTX_PAYLOAD_TYPE_DOUBLE:
		add_double(e, "payload", a->payload.dValue, 17);
		break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		add_unsigned(e, "payload", a->payload.uiValue);
		break;
	case NVTX_PAYLOAD_TYPE_INT32:
		add_signed(e, "payload", a->payload.iValue);
		break;
	case NVTX_PAYLOAD_TYPE_FLOAT:
		add_double(e, "payload", (double)a->payload.fValue, 9);
		break;
	case NVTX_PAYLOAD_TYPE_EXT:
		from_extended_payload(e, a);
		break;
	default:
		break;
	}
	if (a->category)
		add_unsigned(e, "nvtx category", a->category);
}

static void in_domain(struct event *e, nvtxDomainHandle_t domain)
{
	const char *name = domain ? handle_text(domain, e->domain, sizeof(e->domain)) : NULL;

	if (name)
		add_arg(e, SC_ARG_STRING, "domain", name);
}

/* ---- records ---- */

static void record_event(uint16_t type, const struct event *e)
{
	struct sc_rec_region r = { .ts = cuda_api->now_ns() };
	char text[CUDA_REGION_TEXT_MAX];
	uint32_t len = cuda_region_text_args(text, sizeof(text), e->message, CUDA_CATEGORY_NVTX,
					     e->args, e->nargs, &r);

	cuda_api->record(type, 0, &r.ts, sizeof(r) - sizeof(r.hdr), text, len);
}

static void record_pop(void)
{
	struct sc_rec_region_end r = { .ts = cuda_api->now_ns() };

	cuda_api->record(SC_REC_REGION_END, 0, &r.ts, sizeof(r) - sizeof(r.hdr), NULL, 0);
}

/* The calling thread's id, asked once per thread (a fork child's thread asks again). */
static __thread int32_t cached_tid;

static void forget_tid(void)
{
	cached_tid = 0;
}

static void forget_tid_in_children(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static int32_t current_tid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!cached_tid) {
		pthread_once(&once, forget_tid_in_children);
		cached_tid = (int32_t)syscall(SYS_gettid);
	}
	return cached_tid;
}

/* ---- start/end ranges, by id ---- */

/* A started range: its span record made at the start, its end time filled in at the end. */
struct open_range {
	struct sc_rec_region_span sp;
	uint32_t len;
	char text[];
};

static struct {
	pthread_mutex_t lock;
	struct {
		nvtxRangeId_t id; /* 0: free */
		struct open_range *r;
	} slot[MAX_OPEN_RANGES];
	unsigned long long dropped; /* more open at once than the table holds */
} ranges = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void range_start(nvtxRangeId_t id, const struct event *e)
{
	size_t i = (size_t)(id % MAX_OPEN_RANGES);
	char text[CUDA_REGION_TEXT_MAX];
	struct sc_rec_region_span sp = { .r = { .ts = cuda_api->now_ns() }, .tid = current_tid() };
	uint32_t len = cuda_region_text_args(text, sizeof(text), e->message, CUDA_CATEGORY_NVTX,
					     e->args, e->nargs, &sp.r);
	struct open_range *copy;

	if (!id || !(copy = malloc(sizeof(*copy) + len)))
		return;
	copy->sp = sp;
	copy->len = len;
	memcpy(copy->text, text, len);
	pthread_mutex_lock(&ranges.lock);
	for (size_t n = 0; n < MAX_OPEN_RANGES; n++, i = (i + 1) % MAX_OPEN_RANGES)
		if (!ranges.slot[i].id) {
			ranges.slot[i].id = id;
			ranges.slot[i].r = copy;
			copy = NULL;
			break;
		}
	if (copy)
		ranges.dropped++;
	pthread_mutex_unlock(&ranges.lock);
	free(copy);
}

static void range_end(nvtxRangeId_t id)
{
	size_t i = (size_t)(id % MAX_OPEN_RANGES);
	struct open_range *r = NULL;
	uint64_t end = cuda_api->now_ns();

	pthread_mutex_lock(&ranges.lock);
	for (size_t n = 0; id && n < MAX_OPEN_RANGES && ranges.slot[i].id;
	     n++, i = (i + 1) % MAX_OPEN_RANGES)
		if (ranges.slot[i].id == id) {
			r = ranges.slot[i].r;
			ranges.slot[i].id = 0;
			/* Keep the probe chain whole: re-place the entries after this one. */
			for (size_t j = (i + 1) % MAX_OPEN_RANGES; ranges.slot[j].id;
			     j = (j + 1) % MAX_OPEN_RANGES) {
				nvtxRangeId_t moved = ranges.slot[j].id;
				struct open_range *mr = ranges.slot[j].r;

				ranges.slot[j].id = 0;
				size_t k = (size_t)(moved % MAX_OPEN_RANGES);

				while (ranges.slot[k].id)
					k = (k + 1) % MAX_OPEN_RANGES;
				ranges.slot[k].id = moved;
				ranges.slot[k].r = mr;
			}
			break;
		}
	pthread_mutex_unlock(&ranges.lock);
	if (!r)
		return;
	r->sp.end = end;
	cuda_api->record(SC_REC_REGION_SPAN, 0, &r->sp.r.ts, sizeof(r->sp) - sizeof(r->sp.r.hdr),
			 r->text, r->len);
	free(r);
}

unsigned long long cuda_nvtx_dropped(void)
{
	return ranges.dropped;
}

/* ---- names of threads and streams ---- */

static void name_thread(uint32_t tid, const char *name)
{
	struct sc_rec_thread_name r = { .ts = cuda_api->now_ns() };

	if ((int32_t)tid != current_tid() || !name)
		return; /* the record names the thread that writes it */
	snprintf(r.name, sizeof(r.name), "%s", name);
	cuda_api->record(SC_REC_THREAD_NAME, SC_THREAD_NAME_GIVEN, &r.ts, sizeof(r) - sizeof(r.hdr),
			 NULL, 0);
}

static void name_stream(CUstream stream, const char *name)
{
	struct sc_rec_gpu_stream r = { .ts = cuda_api->now_ns() };
	uint32_t id = 0, device = 0;
	CUcontext ctx = NULL;

	if (!name || cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS ||
	    cuptiGetStreamIdEx(ctx, stream, 0, &id) != CUPTI_SUCCESS ||
	    cuptiGetDeviceId(ctx, &device) != CUPTI_SUCCESS)
		return;
	r.stream = id;
	r.agent = device;
	r.name_len = (uint32_t)strlen(name) + 1;
	cuda_api->record(SC_REC_GPU_STREAM, 0, &r.ts, sizeof(r) - sizeof(r.hdr), name, r.name_len);
}

/* ---- the callback ---- */

static nvtxRangeId_t returned_id(const CUpti_NvtxData *d)
{
	return d->functionReturnValue ? *(const nvtxRangeId_t *)d->functionReturnValue : 0;
}

void cuda_nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
	const void *p = d->functionParams;
	struct event e;

	if (!p || !cuda_api->active())
		return;
	e.message = "";
	e.nargs = 0;
	switch (cbid) {
	case CUPTI_CBID_NVTX_nvtxMarkA:
		from_message(&e, ((const nvtxMarkA_params *)p)->message, NULL);
		record_event(SC_REC_MARK, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxMarkW:
		from_message(&e, NULL, ((const nvtxMarkW_params *)p)->message);
		record_event(SC_REC_MARK, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxMarkEx:
		from_attributes(&e, ((const nvtxMarkEx_params *)p)->eventAttrib);
		record_event(SC_REC_MARK, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
		from_attributes(&e, ((const nvtxDomainMarkEx_params *)p)->core.eventAttrib);
		in_domain(&e, ((const nvtxDomainMarkEx_params *)p)->domain);
		record_event(SC_REC_MARK, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushA:
		from_message(&e, ((const nvtxRangePushA_params *)p)->message, NULL);
		record_event(SC_REC_REGION_BEGIN, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushW:
		from_message(&e, NULL, ((const nvtxRangePushW_params *)p)->message);
		record_event(SC_REC_REGION_BEGIN, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushEx:
		from_attributes(&e, ((const nvtxRangePushEx_params *)p)->eventAttrib);
		record_event(SC_REC_REGION_BEGIN, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
		from_attributes(&e, ((const nvtxDomainRangePushEx_params *)p)->core.eventAttrib);
		in_domain(&e, ((const nvtxDomainRangePushEx_params *)p)->domain);
		record_event(SC_REC_REGION_BEGIN, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePop:
	case CUPTI_CBID_NVTX_nvtxDomainRangePop:
		record_pop();
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartA:
		from_message(&e, ((const nvtxRangeStartA_params *)p)->message, NULL);
		range_start(returned_id(d), &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartW:
		from_message(&e, NULL, ((const nvtxRangeStartW_params *)p)->message);
		range_start(returned_id(d), &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartEx:
		from_attributes(&e, ((const nvtxRangeStartEx_params *)p)->eventAttrib);
		range_start(returned_id(d), &e);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
		from_attributes(&e, ((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib);
		in_domain(&e, ((const nvtxDomainRangeStartEx_params *)p)->domain);
		range_start(returned_id(d), &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeEnd:
		range_end(((const nvtxRangeEnd_params *)p)->id);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
		range_end(((const nvtxDomainRangeEnd_params *)p)->core.id);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
		if (d->functionReturnValue)
			remember(*(const nvtxStringHandle_t *)d->functionReturnValue,
				 ((const nvtxDomainRegisterStringA_params *)p)->string);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
		if (d->functionReturnValue) {
			/* CUPTI's header declares it char *; NVTX passes the wchar_t * */
			from_message(&e, NULL,
				     (const wchar_t *)((const nvtxDomainRegisterStringW_params *)p)
					     ->string);
			remember(*(const nvtxStringHandle_t *)d->functionReturnValue, e.message);
		}
		break;
	case CUPTI_CBID_NVTX_nvtxDomainCreateA:
		if (d->functionReturnValue)
			remember(*(const nvtxDomainHandle_t *)d->functionReturnValue,
				 ((const nvtxDomainCreateA_params *)p)->name);
		break;
	case CUPTI_CBID_NVTX_nvtxNameOsThreadA:
		name_thread(((const nvtxNameOsThreadA_params *)p)->threadId,
			    ((const nvtxNameOsThreadA_params *)p)->name);
		break;
	case CUPTI_CBID_NVTX_nvtxNameCudaStreamA:
		name_stream((CUstream)((const nvtxNameCudaStreamA_params *)p)->stream,
			    ((const nvtxNameCudaStreamA_params *)p)->name);
		break;
	case CUPTI_CBID_NVTX_nvtxNameCuStreamA:
		name_stream(((const nvtxNameCuStreamA_params *)p)->stream,
			    ((const nvtxNameCuStreamA_params *)p)->name);
		break;
	default:
		break;
	}
}

/* ---- NVTX calling this library directly ---- */

/*
 * NVTX hands each call to the function its injection put in the call's table slot. Going
 * through CUPTI costs each range CUPTI's callback set-up, and an enabled CUPTI NVTX domain
 * costs every kernel launch too; these functions record the same regions and marks
 * straight away. Push/pop depth is the thread's own; start/end ids are ours.
 */
static __thread int push_depth;
static _Atomic uint64_t next_range_id = 1;

static bool recording(void)
{
	return cuda_api && cuda_api->active();
}

static void blank(struct event *e)
{
	e->message = "";
	e->nargs = 0;
}

static int push_recorded(struct event *e)
{
	record_event(SC_REC_REGION_BEGIN, e);
	return push_depth++;
}

static int NVTX_API own_push_a(const char *message)
{
	struct event e;

	if (!recording())
		return push_depth++;
	blank(&e);
	from_message(&e, message, NULL);
	return push_recorded(&e);
}

static int NVTX_API own_push_w(const wchar_t *message)
{
	struct event e;

	if (!recording())
		return push_depth++;
	blank(&e);
	from_message(&e, NULL, message);
	return push_recorded(&e);
}

static int NVTX_API own_push_ex(const nvtxEventAttributes_t *a)
{
	struct event e;

	if (!recording())
		return push_depth++;
	blank(&e);
	from_attributes(&e, a);
	return push_recorded(&e);
}

static int NVTX_API own_domain_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a)
{
	struct event e;

	if (!recording())
		return push_depth++;
	blank(&e);
	from_attributes(&e, a);
	in_domain(&e, domain);
	return push_recorded(&e);
}

static int NVTX_API own_pop(void)
{
	if (recording())
		record_pop();
	return push_depth > 0 ? --push_depth : -1;
}

static int NVTX_API own_domain_pop(nvtxDomainHandle_t domain)
{
	(void)domain;
	return own_pop();
}

static nvtxRangeId_t started(struct event *e)
{
	nvtxRangeId_t id = atomic_fetch_add(&next_range_id, 1);

	range_start(id, e);
	return id;
}

static nvtxRangeId_t NVTX_API own_start_a(const char *message)
{
	struct event e;

	if (!recording())
		return 0;
	blank(&e);
	from_message(&e, message, NULL);
	return started(&e);
}

static nvtxRangeId_t NVTX_API own_start_w(const wchar_t *message)
{
	struct event e;

	if (!recording())
		return 0;
	blank(&e);
	from_message(&e, NULL, message);
	return started(&e);
}

static nvtxRangeId_t NVTX_API own_start_ex(const nvtxEventAttributes_t *a)
{
	struct event e;

	if (!recording())
		return 0;
	blank(&e);
	from_attributes(&e, a);
	return started(&e);
}

static nvtxRangeId_t NVTX_API own_domain_start_ex(nvtxDomainHandle_t domain,
						  const nvtxEventAttributes_t *a)
{
	struct event e;

	if (!recording())
		return 0;
	blank(&e);
	from_attributes(&e, a);
	in_domain(&e, domain);
	return started(&e);
}

static void NVTX_API own_end(nvtxRangeId_t id)
{
	if (id && recording())
		range_end(id);
}

static void NVTX_API own_domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
	(void)domain;
	own_end(id);
}

static void NVTX_API own_mark_a(const char *message)
{
	struct event e;

	if (!recording())
		return;
	blank(&e);
	from_message(&e, message, NULL);
	record_event(SC_REC_MARK, &e);
}

static void NVTX_API own_mark_w(const wchar_t *message)
{
	struct event e;

	if (!recording())
		return;
	blank(&e);
	from_message(&e, NULL, message);
	record_event(SC_REC_MARK, &e);
}

static void NVTX_API own_mark_ex(const nvtxEventAttributes_t *a)
{
	struct event e;

	if (!recording())
		return;
	blank(&e);
	from_attributes(&e, a);
	record_event(SC_REC_MARK, &e);
}

static void NVTX_API own_domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a)
{
	struct event e;

	if (!recording())
		return;
	blank(&e);
	from_attributes(&e, a);
	in_domain(&e, domain);
	record_event(SC_REC_MARK, &e);
}

static nvtxDomainHandle_t NVTX_API own_domain_create_a(const char *name)
{
	return (nvtxDomainHandle_t)own_handle_new(NULL, name);
}

static nvtxDomainHandle_t NVTX_API own_domain_create_w(const wchar_t *name)
{
	char text[MESSAGE_MAX];

	utf8_from_wide(name, text, sizeof(text));
	return (nvtxDomainHandle_t)own_handle_new(NULL, text);
}

static nvtxStringHandle_t NVTX_API own_register_a(nvtxDomainHandle_t domain, const char *string)
{
	return (nvtxStringHandle_t)own_handle_new(domain, string);
}

static nvtxStringHandle_t NVTX_API own_register_w(nvtxDomainHandle_t domain, const wchar_t *string)
{
	char text[MESSAGE_MAX];

	utf8_from_wide(string, text, sizeof(text));
	return (nvtxStringHandle_t)own_handle_new(domain, text);
}

static void NVTX_API own_name_thread_a(uint32_t tid, const char *name)
{
	if (recording())
		name_thread(tid, name);
}

static void NVTX_API own_name_thread_w(uint32_t tid, const wchar_t *name)
{
	char text[MESSAGE_MAX];

	if (!recording())
		return;
	utf8_from_wide(name, text, sizeof(text));
	name_thread(tid, text);
}

static void NVTX_API own_name_cu_stream_a(CUstream stream, const char *name)
{
	if (recording())
		name_stream(stream, name);
}

/* The module's table slot `id` (when NVTX has one) now calls fn. */
static void put(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn)
{
	if (table && id <= size && table[id])
		*table[id] = fn;
}

#define PUT(t, n, id, fn) put(t, n, id, (NvtxFunctionPointer)(fn))

static bool fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module)
{
	NvtxFunctionTable t = NULL;
	unsigned n = 0;

	if (!cb->GetModuleFunctionTable(module, &t, &n) || !t)
		return module != NVTX_CB_MODULE_CORE && module != NVTX_CB_MODULE_CORE2;
	switch (module) {
	case NVTX_CB_MODULE_CORE:
		PUT(t, n, NVTX_CBID_CORE_MarkEx, own_mark_ex);
		PUT(t, n, NVTX_CBID_CORE_MarkA, own_mark_a);
		PUT(t, n, NVTX_CBID_CORE_MarkW, own_mark_w);
		PUT(t, n, NVTX_CBID_CORE_RangeStartEx, own_start_ex);
		PUT(t, n, NVTX_CBID_CORE_RangeStartA, own_start_a);
		PUT(t, n, NVTX_CBID_CORE_RangeStartW, own_start_w);
		PUT(t, n, NVTX_CBID_CORE_RangeEnd, own_end);
		PUT(t, n, NVTX_CBID_CORE_RangePushEx, own_push_ex);
		PUT(t, n, NVTX_CBID_CORE_RangePushA, own_push_a);
		PUT(t, n, NVTX_CBID_CORE_RangePushW, own_push_w);
		PUT(t, n, NVTX_CBID_CORE_RangePop, own_pop);
		PUT(t, n, NVTX_CBID_CORE_NameOsThreadA, own_name_thread_a);
		PUT(t, n, NVTX_CBID_CORE_NameOsThreadW, own_name_thread_w);
		break;
	case NVTX_CB_MODULE_CORE2:
		PUT(t, n, NVTX_CBID_CORE2_DomainMarkEx, own_domain_mark_ex);
		PUT(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, own_domain_start_ex);
		PUT(t, n, NVTX_CBID_CORE2_DomainRangeEnd, own_domain_end);
		PUT(t, n, NVTX_CBID_CORE2_DomainRangePushEx, own_domain_push_ex);
		PUT(t, n, NVTX_CBID_CORE2_DomainRangePop, own_domain_pop);
		PUT(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, own_register_a);
		PUT(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, own_register_w);
		PUT(t, n, NVTX_CBID_CORE2_DomainCreateA, own_domain_create_a);
		PUT(t, n, NVTX_CBID_CORE2_DomainCreateW, own_domain_create_w);
		break;
	case NVTX_CB_MODULE_CUDA:
		PUT(t, n, NVTX_CBID_CUDA_NameCuStreamA, own_name_cu_stream_a);
		break;
	case NVTX_CB_MODULE_CUDART: /* a cudaStream_t is a CUstream */
		PUT(t, n, NVTX_CBID_CUDART_NameCudaStreamA, own_name_cu_stream_a);
		break;
	default:
		break;
	}
	return true;
}

int cuda_nvtx_inject(void *get_export_table)
{
	const NvtxExportTableCallbacks *cb =
		get_export_table ? ((NvtxGetExportTableFunc_t)get_export_table)(NVTX_ETID_CALLBACKS)
				 : NULL;
	static const NvtxCallbackModule modules[] = { NVTX_CB_MODULE_CORE, NVTX_CB_MODULE_CORE2,
						      NVTX_CB_MODULE_CUDA, NVTX_CB_MODULE_CUDART };

	if (!cb || cb->struct_size < sizeof(*cb))
		return 0;
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++)
		if (!fill_module(cb, modules[i]))
			return 0;
	own_handles = true;
	return 1;
}

/* ---- NVTX's payload extension ---- */

/* A schema or enum not kept is said once: the payloads it describes are not shown. */
static uint64_t kept_or_said(uint64_t id, const char *what)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	if (!id && !atomic_flag_test_and_set(&said))
		cuda_note(SC_NOTE_WARN,
			  "NVTX: a payload %s was not kept (no entries, or more registered than "
			  "syscope keeps): the payloads it describes are not shown",
			  what);
	return id;
}

static uint64_t NVTX_API own_schema_register(nvtxDomainHandle_t domain,
					     const nvtxPayloadSchemaAttr_t *attr)
{
	(void)domain;
	return kept_or_said(nvtx_schema_register(attr), "schema");
}

static uint64_t NVTX_API own_enum_register(nvtxDomainHandle_t domain,
					   const nvtxPayloadEnumAttr_t *attr)
{
	(void)domain;
	return kept_or_said(nvtx_enum_register(attr), "enum");
}

static int NVTX_API own_pop_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t *data,
				    size_t count)
{
	(void)domain;
	(void)data;
	(void)count;
	return own_pop();
}

static uint8_t NVTX_API own_domain_enabled(nvtxDomainHandle_t domain)
{
	(void)domain;
	return 1;
}

/*
 * NVTX loads the injection library again for each extension a program uses and calls this.
 * The payload extension's schemas and enums are what decodes NVTX_PAYLOAD_TYPE_EXT payloads
 * (NCCL's); other extensions are declined (their calls become no-ops).
 */
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *m);
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *m)
{
	static const struct {
		unsigned id;
		NvtxFunctionPointer fn;
	} slots[] = {
		{ NVTX3EXT_CBID_nvtxPayloadSchemaRegister,
		  (NvtxFunctionPointer)own_schema_register },
		{ NVTX3EXT_CBID_nvtxPayloadEnumRegister, (NvtxFunctionPointer)own_enum_register },
		{ NVTX3EXT_CBID_nvtxRangePopPayload, (NvtxFunctionPointer)own_pop_payload },
		{ NVTX3EXT_CBID_nvtxDomainIsEnabled, (NvtxFunctionPointer)own_domain_enabled },
	};
	if (!m || m->moduleId != NVTX_EXT_PAYLOAD_MODULEID || m->segmentsCount < 1 ||
	    !m->segments || !m->segments[0].functionSlots)
		return 0;
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		if (slots[i].id < m->segments[0].slotCount)
			m->segments[0].functionSlots[slots[i].id] = (intptr_t)slots[i].fn;
	return 1;
}
