// SPDX-License-Identifier: MIT
// NVTX without a GPU (test_gpu_more.py): the program plays the CUDA driver's part, loading
// the library NVTX_INJECTION64_PATH names and calling its InitializeInjection, so that
// syscope records NVTX while CUDA itself is absent. Then, checked by the test:
//
//   "push a" x3         nvtxRangePushA / nvtxRangePop, the second nested in the first
//   "wide \u2713"       nvtxRangePushW
//   "step" x2           domain "work", registered string, uint64 payload 7, category 3
//   "cross-thread"      nvtxRangeStartA, ended by another thread
//   "ncclAllReduce"     domain "NCCL", an extended payload by NCCL's AllReduce schema:
//                       comm 0x1234, bytes 4096, op Max (an enum of the schema)
//   "mark a"            nvtxMarkA
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA(n) (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + (n))

struct all_reduce {
	uint64_t comm;
	size_t bytes;
	int op;
};

static void *ender(void *arg)
{
	nvtxRangeEnd(*(nvtxRangeId_t *)arg);
	return NULL;
}

static void nccl_like(void)
{
	static const nvtxPayloadEnum_t ops[] = { { "Sum", 0, 0 }, { "Max", 2, 0 } };
	static const nvtxPayloadSchemaEntry_t entries[] = {
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0,
		  offsetof(struct all_reduce, comm), NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0,
		  offsetof(struct all_reduce, bytes), NULL, NULL },
		{ 0, SCHEMA(24), "Reduction operation", NULL, 0, offsetof(struct all_reduce, op),
		  NULL, NULL },
	};
	nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
	nvtxPayloadEnumAttr_t en = { 0 };
	nvtxPayloadSchemaAttr_t s = { 0 };
	struct all_reduce p = { 0x1234, 4096, 2 };
	nvtxPayloadData_t data = { SCHEMA(5), sizeof(p), &p };
	nvtxEventAttributes_t a = { 0 };

	en.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES |
		       NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
		       NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
	en.entries = ops;
	en.numEntries = 2;
	en.sizeOfEnum = sizeof(int);
	en.schemaId = SCHEMA(24);
	nvtxPayloadEnumRegister(d, &en);
	s.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
		      NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
		      NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
		      NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
	s.entries = entries;
	s.numEntries = 3;
	s.payloadStaticSize = sizeof(p);
	s.schemaId = SCHEMA(5);
	nvtxPayloadSchemaRegister(d, &s);
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(d, "ncclAllReduce");
	a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
	a.payload.ullValue = (uint64_t)(uintptr_t)&data;
	a.reserved0 = 1;
	nvtxDomainRangePushEx(d, &a);
	nvtxDomainRangePop(d);
}

int main(void)
{
	const char *lib = getenv("NVTX_INJECTION64_PATH");
	void *h = lib ? dlopen(lib, RTLD_LAZY | RTLD_GLOBAL) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	nvtxEventAttributes_t a = { 0 };
	nvtxDomainHandle_t d;
	nvtxRangeId_t id;
	pthread_t t;

	if (!init) {
		fprintf(stderr, "nvtx_nogpu: no injection library (%s)\n",
			lib ? dlerror() : "unset");
		return 2;
	}
	init(); /* what the CUDA driver does in cuInit */
	nvtxRangePushA("push a");
	nvtxRangePushA("push a");
	nvtxRangePop();
	nvtxRangePop();
	nvtxRangePushA("push a");
	nvtxRangePop();
	nvtxRangePushW(L"wide \u2713");
	nvtxRangePop();
	d = nvtxDomainCreateA("work");
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(d, "step");
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = 7;
	a.category = 3;
	for (int i = 0; i < 2; i++) {
		nvtxDomainRangePushEx(d, &a);
		nvtxDomainRangePop(d);
	}
	id = nvtxRangeStartA("cross-thread");
	pthread_create(&t, NULL, ender, &id);
	pthread_join(t, NULL);
	nccl_like();
	nvtxMarkA("mark a");
	printf("nvtx_nogpu ok\n");
	return 0;
}
