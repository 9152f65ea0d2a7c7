/* SPDX-License-Identifier: MIT */
/*
 * MPI calls into regions: the tracer writes one compact record per call (format.h,
 * sc_rec_mpi_call); here it becomes a region named after the function, of category "mpi",
 * with its arguments as text triples like any other region's, so every output shows it.
 */
#include "mpi.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum sc_mpi_kind kind;
} functions[SC_MPI_FN_END] = {
#define SC_MPI_FN(e, id, text, k) [id] = { text, k },
#include "../store/mpi_functions.def"
#undef SC_MPI_FN
};

const char *sc_mpi_fn_name(unsigned fn)
{
	return fn < SC_MPI_FN_END ? functions[fn].name : NULL;
}

enum sc_mpi_kind sc_mpi_fn_kind(unsigned fn)
{
	return fn < SC_MPI_FN_END && functions[fn].name ? functions[fn].kind : SC_MPIK_LOCAL;
}

struct text {
	char *buf;
	size_t cap, used;
	uint32_t nargs;
};

/* `ev`: the region from `start` to `end` whose name, category and arguments `t` holds (the
 * category at `name_len`, the arguments from `args_at`). */
static void region_of_text(struct sc_region_ev *ev, const struct text *t, size_t name_len,
			   size_t args_at, uint64_t start, uint64_t end)
{
	memset(ev, 0, sizeof(*ev));
	ev->start = start;
	ev->end = end;
	ev->name = t->buf;
	ev->category = t->buf + name_len;
	ev->args = t->buf + args_at;
	ev->args_len = (uint32_t)(t->used - args_at);
	ev->nargs = t->nargs;
}

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s) + 1;

	if (t->used + n > t->cap)
		return;
	memcpy(t->buf + t->used, s, n);
	t->used += n;
}

static void arg(struct text *t, char type, const char *name, const char *value)
{
	char ty[2] = { type, '\0' };
	size_t before = t->used;

	if (before + 3 + strlen(name) + strlen(value) > t->cap)
		return;
	put(t, ty);
	put(t, name);
	put(t, value);
	t->nargs++;
}

static void arg_u(struct text *t, const char *name, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	arg(t, SC_ARG_UINT, name, num);
}

static void arg_i(struct text *t, const char *name, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	arg(t, SC_ARG_INT, name, num);
}

/* "3,4" for the requests completed, "3<-1:7/1" for a receive's (request<-source:tag/comm). */
static void completions(struct text *t, const struct sc_rec_mpi_call *c)
{
	const struct sc_mpi_done *d = sc_mpi_dones(c);
	char list[512] = "";
	size_t len = 0;

	for (unsigned i = 0; i < c->ndone && len < sizeof(list) - 48; i++) {
		if (!d[i].request)
			continue; /* a Sendrecv's receive half: shown by source and tag */
		if (d[i].peer != SC_MPI_NONE)
			len += (size_t)snprintf(list + len, sizeof(list) - len,
						"%s%" PRIu64 "<-%d:%d/%u", len ? "," : "",
						d[i].request, d[i].peer, d[i].tag, d[i].comm);
		else
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%" PRIu64,
						len ? "," : "", d[i].request);
	}
	if (len)
		arg(t, SC_ARG_STRING, "completes", list);
}

void sc_mpi_region(struct sc_region_ev *ev, const struct sc_rec_mpi_call *c, char *buf, size_t cap)
{
	const char *name = sc_mpi_fn_name(c->fn);
	char unknown[32];
	struct text t = { .buf = buf, .cap = cap };
	size_t name_len, args_at;

	if (!name) {
		snprintf(unknown, sizeof(unknown), "MPI function %u", c->fn);
		name = unknown;
	}
	put(&t, name);
	name_len = t.used;
	put(&t, SC_MPI_CATEGORY);
	args_at = t.used;
	if (c->sent)
		arg_u(&t, "bytes_sent", c->sent);
	if (c->received)
		arg_u(&t, "bytes_received", c->received);
	if (c->peer != SC_MPI_NONE && c->fn != SC_MPI_INIT && c->fn != SC_MPI_INIT_THREAD)
		arg_i(&t, sc_mpi_fn_kind(c->fn) == SC_MPIK_COLL ? "root" : "peer", c->peer);
	if (c->fn == SC_MPI_SENDRECV && c->ndone && sc_mpi_dones(c)[0].peer != SC_MPI_NONE) {
		arg_i(&t, "source", sc_mpi_dones(c)[0].peer);
		arg_i(&t, "source_tag", sc_mpi_dones(c)[0].tag);
	}
	if (c->tag != SC_MPI_NONE)
		arg_i(&t, "tag", c->tag);
	if (c->comm & SC_MPI_COMM_UNSEEN) {
		char what[64];

		snprintf(what, sizeof(what), "%s #%u",
			 c->hdr.flags & SC_MPI_ATTACHED ? "created before attach"
							: "not seen created",
			 c->comm & ~SC_MPI_COMM_UNSEEN);
		arg(&t, SC_ARG_STRING, "comm", what);
	} else if (c->comm) {
		arg_u(&t, "comm", c->comm);
	}
	if (c->comm_size)
		arg_i(&t, "comm_size", c->comm_size);
	if (c->request)
		arg_u(&t, "request", c->request);
	if (c->fn == SC_MPI_INIT || c->fn == SC_MPI_INIT_THREAD)
		arg_i(&t, "rank", c->peer);
	if (c->hdr.flags & SC_MPI_FORTRAN)
		arg(&t, SC_ARG_STRING, "binding", "fortran");
	completions(&t, c);
	if (c->unfollowed) /* their bytes are not in bytes_sent, bytes_received */
		arg_u(&t,
		      c->hdr.flags & SC_MPI_ATTACHED ? "completes_started_before_attach"
						     : "completes_not_followed",
		      c->unfollowed);
	region_of_text(ev, &t, name_len, args_at, c->ts, c->end);
}

const struct sc_rec_mpi_call *sc_mpi_unshort(const struct sc_rec_mpi_short *s, int32_t world_size,
					     struct sc_rec_mpi_call *out)
{
	*out = (struct sc_rec_mpi_call){ .ts = s->ts,
					 .end = s->ts + s->duration,
					 .fn = (uint16_t)SC_MPI_SHORT_FN(s->hdr.flags),
					 .comm = s->comm,
					 .peer = SC_MPI_NONE,
					 .tag = SC_MPI_NONE };
	out->hdr.flags = s->hdr.flags & SC_MPI_SHORT_FORTRAN ? SC_MPI_FORTRAN : 0;
	out->comm_size = s->comm == 1 ? world_size : s->comm == 2 ? 1 : 0;
	return out;
}

void sc_mpi_clock_region(struct sc_region_ev *ev, const struct sc_rec_clock_sync *c, char *buf,
			 size_t cap)
{
	struct text t = { .buf = buf, .cap = cap };
	size_t name_len, args_at;

	put(&t, SC_MPI_CLOCK_REGION);
	name_len = t.used;
	put(&t, SC_MPI_CLOCK_CATEGORY);
	args_at = t.used;
	arg_i(&t, "peer", c->peer);
	arg_i(&t, "offset_ns", c->offset);
	arg_u(&t, "rtt_ns", c->rtt);
	arg_u(&t, "when", c->when);
	arg_u(&t, "rounds", c->rounds);
	arg(&t, SC_ARG_STRING, "at",
	    c->hdr.flags & SC_CLOCK_SYNC_FINALIZE ? "MPI_Finalize" : "MPI_Init");
	region_of_text(ev, &t, name_len, args_at, c->ts, c->end);
}

/* The kind of the function named `name`. */
static enum sc_mpi_kind kind_of(const char *name)
{
	for (unsigned i = 0; i < SC_MPI_FN_END; i++)
		if (functions[i].name && !strcmp(functions[i].name, name))
			return functions[i].kind;
	return SC_MPIK_LOCAL;
}

/* The receives of a "completes" list: "3<-1:7/1,4". */
static unsigned completed(const char *list, int rank, struct sc_mpi_message *out, unsigned max)
{
	unsigned n = 0;

	for (const char *p = list; p && *p && n < max;
	     p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		int src, tag;
		unsigned comm;

		if (sscanf(p, "%*u<-%d:%d/%u", &src, &tag, &comm) != 3)
			continue;
		if (comm & SC_MPI_COMM_UNSEEN) /* as sc_mpi_messages reads the "comm" named so */
			comm = UINT32_MAX;
		out[n++] = (struct sc_mpi_message){
			.src = src, .dst = rank, .tag = tag, .comm = comm, .send = false
		};
	}
	return n;
}

unsigned sc_mpi_messages(const struct sc_region_ev *ev, int rank, struct sc_mpi_message *out,
			 unsigned max)
{
	const char *p = ev->args, *end = ev->args + ev->args_len, *name, *value;
	const char *completes = NULL;
	long peer = -1, tag = -1, source = -1, source_tag = -1, comm = 0;
	unsigned n = 0;
	char type;

	if (!ev->category || strcmp(ev->category, SC_MPI_CATEGORY) || rank < 0 || !max)
		return 0;
	while ((p = sc_region_arg_next(p, end, &type, &name, &value))) {
		if (!strcmp(name, "peer"))
			peer = strtol(value, NULL, 10);
		else if (!strcmp(name, "tag"))
			tag = strtol(value, NULL, 10);
		else if (!strcmp(name, "source"))
			source = strtol(value, NULL, 10);
		else if (!strcmp(name, "source_tag"))
			source_tag = strtol(value, NULL, 10);
		else if (!strcmp(name, "comm")) /* not a number: one not seen created */
			comm = isdigit((unsigned char)value[0]) ? strtol(value, NULL, 10)
								: (long)UINT32_MAX;
		else if (!strcmp(name, "completes"))
			completes = value;
	}
	if (kind_of(ev->name) == SC_MPIK_SEND) {
		if (peer >= 0)
			out[n++] = (struct sc_mpi_message){ .src = rank,
							    .dst = (int32_t)peer,
							    .tag = (int32_t)tag,
							    .comm = (uint32_t)comm,
							    .send = true };
		if (source >= 0 && n < max)
			out[n++] = (struct sc_mpi_message){ .src = (int32_t)source,
							    .dst = rank,
							    .tag = (int32_t)source_tag,
							    .comm = (uint32_t)comm };
	} else if (!strcmp(ev->name, "MPI_Recv") && peer >= 0) {
		out[n++] = (struct sc_mpi_message){ .src = (int32_t)peer,
						    .dst = rank,
						    .tag = (int32_t)tag,
						    .comm = (uint32_t)comm };
	} else if (completes) {
		n = completed(completes, rank, out, max);
	}
	return n;
}
