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
#include <pthread.h>
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

/* The text of `handle` into buf; false if unknown. */
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

/* What an NVTX event says: its message, domain, payload and category. */
struct event {
	char message[MESSAGE_MAX];
	char domain[128];
	struct cuda_arg args[3];
	char values[3][128];
	unsigned nargs;
};

static void add_arg(struct event *e, char type, const char *name, const char *value)
{
	if (e->nargs < 3) {
		snprintf(e->values[e->nargs], sizeof(e->values[0]), "%s", value);
		e->args[e->nargs] = (struct cuda_arg){ type, name, e->values[e->nargs] };
		e->nargs++;
	}
}

static void from_message(struct event *e, const char *ascii, const wchar_t *wide)
{
	if (ascii)
		snprintf(e->message, sizeof(e->message), "%s", ascii);
	else if (wide)
		utf8_from_wide(wide, e->message, sizeof(e->message));
	else
		snprintf(e->message, sizeof(e->message), "(unnamed)");
}

static void from_attributes(struct event *e, const nvtxEventAttributes_t *a)
{
	char v[48];

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
		if (!recall(a->message.registered, e->message, sizeof(e->message)))
			snprintf(e->message, sizeof(e->message), "(unregistered string)");
		break;
	default:
		from_message(e, NULL, NULL);
	}
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)a->payload.ullValue);
		add_arg(e, SC_ARG_UINT, "payload", v);
		break;
	case NVTX_PAYLOAD_TYPE_INT64:
		snprintf(v, sizeof(v), "%lld", (long long)a->payload.llValue);
		add_arg(e, SC_ARG_INT, "payload", v);
		break;
	case NVTX_PAYLOAD_TYPE_DOUBLE:
		snprintf(v, sizeof(v), "%.17g", a->payload.dValue);
		add_arg(e, SC_ARG_DOUBLE, "payload", v);
		break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		snprintf(v, sizeof(v), "%u", a->payload.uiValue);
		add_arg(e, SC_ARG_UINT, "payload", v);
		break;
	case NVTX_PAYLOAD_TYPE_INT32:
		snprintf(v, sizeof(v), "%d", a->payload.iValue);
		add_arg(e, SC_ARG_INT, "payload", v);
		break;
	case NVTX_PAYLOAD_TYPE_FLOAT:
		snprintf(v, sizeof(v), "%.9g", (double)a->payload.fValue);
		add_arg(e, SC_ARG_DOUBLE, "payload", v);
		break;
	default:
		break;
	}
	if (a->category) {
		snprintf(v, sizeof(v), "%u", a->category);
		add_arg(e, SC_ARG_UINT, "nvtx category", v);
	}
}

static void in_domain(struct event *e, nvtxDomainHandle_t domain)
{
	if (domain && recall(domain, e->domain, sizeof(e->domain)))
		add_arg(e, SC_ARG_STRING, "domain", e->domain);
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

static int32_t current_tid(void)
{
	return (int32_t)syscall(SYS_gettid);
}

/* ---- start/end ranges, by id ---- */

static struct {
	pthread_mutex_t lock;
	struct open_range {
		nvtxRangeId_t id; /* 0: free */
		uint64_t start;
		int32_t tid;
		struct event *e;
	} slot[MAX_OPEN_RANGES];
	unsigned long long dropped; /* more open at once than the table holds */
} ranges = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void range_start(const void *ret, struct event *e)
{
	nvtxRangeId_t id = ret ? *(const nvtxRangeId_t *)ret : 0;
	size_t i = (size_t)(id % MAX_OPEN_RANGES);
	struct event *copy;

	if (!id || !(copy = malloc(sizeof(*copy))))
		return;
	*copy = *e;
	pthread_mutex_lock(&ranges.lock);
	for (size_t n = 0; n < MAX_OPEN_RANGES; n++, i = (i + 1) % MAX_OPEN_RANGES)
		if (!ranges.slot[i].id) {
			ranges.slot[i] =
				(struct open_range){ id, cuda_api->now_ns(), current_tid(), copy };
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
	struct open_range r = { 0 };

	pthread_mutex_lock(&ranges.lock);
	for (size_t n = 0; id && n < MAX_OPEN_RANGES && ranges.slot[i].id;
	     n++, i = (i + 1) % MAX_OPEN_RANGES)
		if (ranges.slot[i].id == id) {
			r = ranges.slot[i];
			ranges.slot[i].id = 0;
			/* Keep the probe chain whole: re-place the entries after this one. */
			for (size_t j = (i + 1) % MAX_OPEN_RANGES; ranges.slot[j].id;
			     j = (j + 1) % MAX_OPEN_RANGES) {
				struct open_range moved = ranges.slot[j];

				ranges.slot[j].id = 0;
				size_t k = (size_t)(moved.id % MAX_OPEN_RANGES);

				while (ranges.slot[k].id)
					k = (k + 1) % MAX_OPEN_RANGES;
				ranges.slot[k] = moved;
			}
			break;
		}
	pthread_mutex_unlock(&ranges.lock);
	if (!r.id)
		return;
	struct sc_rec_region_span sp = { .r = { .ts = r.start }, .tid = r.tid };
	char text[CUDA_REGION_TEXT_MAX];
	uint32_t len = cuda_region_text_args(text, sizeof(text), r.e->message, CUDA_CATEGORY_NVTX,
					     r.e->args, r.e->nargs, &sp.r);

	sp.end = cuda_api->now_ns();
	cuda_api->record(SC_REC_REGION_SPAN, 0, &sp.r.ts, sizeof(sp) - sizeof(sp.r.hdr), text, len);
	free(r.e);
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

void cuda_nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
	const void *p = d->functionParams;
	struct event e;

	if (!p || !cuda_api->active())
		return;
	e.message[0] = e.domain[0] = '\0';
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
		range_start(d->functionReturnValue, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartW:
		from_message(&e, NULL, ((const nvtxRangeStartW_params *)p)->message);
		range_start(d->functionReturnValue, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartEx:
		from_attributes(&e, ((const nvtxRangeStartEx_params *)p)->eventAttrib);
		range_start(d->functionReturnValue, &e);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
		from_attributes(&e, ((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib);
		in_domain(&e, ((const nvtxDomainRangeStartEx_params *)p)->domain);
		range_start(d->functionReturnValue, &e);
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
