/* SPDX-License-Identifier: MIT */
/*
 * Causal profiles: the experiments of one or more sessions of syscope causal (their
 * CAUSAL_EXPERIMENT and CAUSAL_POINT records, the unit names of the scope file the CLI left
 * in each session) and what they predict: for each unit and virtual speedup, the program's
 * speedup with a 95% confidence interval. The outputs are src/sinks/causal.c's.
 */
#ifndef SYSCOPE_MODEL_CAUSAL_H
#define SYSCOPE_MODEL_CAUSAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/vec.h"

#define SC_CAUSAL_SCOPE_FILE "causal-scope.txt"

struct sc_causal_exp {
	uint32_t unit;
	unsigned speedup; /* percent */
	uint64_t duration_ns, delay_ns, samples;
	bool end_to_end;
	/* ns its threads were kept off their CPUs while runnable; disturbed: far more of it
	 * than in the other experiments of its run (a real-time throttle, a burst of load):
	 * what it measured was the machine, so it is left out */
	uint64_t offcpu_ns;
	bool disturbed;
	unsigned run;	       /* which process of which run (a file of a session) */
	VEC(uint64_t) delta;   /* by point index of sc_causal_data */
	VEC(double) in_flight; /* same index: a latency point's mean number in flight */
};

struct sc_causal_point {
	char *name;
	int kind; /* enum sc_causal_point_kind */
	uint64_t total;
};

struct sc_causal_data {
	VEC(char *) units; /* names, by unit id */
	char mode[16];	   /* "function" or "line" */
	VEC(struct sc_causal_point) points;
	VEC(struct sc_causal_exp) exps;
	uint64_t runtime_ns; /* of the runs, summed */
	unsigned runs;
	unsigned files;	    /* the processes' files read, of all runs */
	unsigned disturbed; /* experiments left out as disturbed (sc_causal_exp) */
};

struct sc_causal_estimate {
	unsigned speedup;
	double predicted; /* program speedup, a fraction */
	double ci;	  /* half-width of its 95% interval; NaN when too few experiments */
	unsigned nexp;
};

struct sc_causal_result {
	uint32_t unit;
	const char *name;
	unsigned nexp;
	uint64_t samples;
	double mean_predicted; /* over the speedups tried: how the units are ranked */
	VEC(struct sc_causal_estimate) est;
};

struct sc_causal_analysis {
	const char *point; /* the progress point used ("end-to-end" for whole runs) */
	int point_index;   /* -1 for end-to-end; a latency analysis: its COZ_BEGIN point */
	unsigned baselines;
	VEC(struct sc_causal_result) results; /* best first */
	/* Units experimented on that no sample ever found running: a virtual speedup of code
	 * that does not run changes nothing, so any difference is noise; left out. */
	unsigned unsampled;
	/*
	 * Latency points (a COZ_BEGIN and a COZ_END of one name), each analysed as the
	 * throughput point is, by Little's law: the mean latency is the mean number in flight
	 * over the arrival rate. There `predicted` is the fraction by which the point's mean
	 * latency would shrink, and latency_ns the mean latency of the baselines.
	 */
	bool latency;
	double latency_ns;
	VEC(struct sc_causal_analysis) latencies;
};

/* Read the sessions' experiments; returns 0, or -1 with `err` set (no experiment at all). */
int sc_causal_load(struct sc_causal_data *d, char *const *sessions, size_t n, char *err,
		   size_t errlen);
void sc_causal_data_free(struct sc_causal_data *d);
void sc_causal_analyze(const struct sc_causal_data *d, struct sc_causal_analysis *a);
void sc_causal_analysis_free(struct sc_causal_analysis *a);

/* src/sinks/causal.c: profile.coz, causal.txt, causal.json and causal.svg into `dir`. */
int sc_causal_write_outputs(const struct sc_causal_data *d, const struct sc_causal_analysis *a,
			    const char *dir, char *err, size_t errlen);

#endif /* SYSCOPE_MODEL_CAUSAL_H */
