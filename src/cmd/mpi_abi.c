/* SPDX-License-Identifier: MIT */
/* Which MPI ABI a program is built for (mpi_abi.h). */
#include "mpi_abi.h"

#include "common/elf_dynamic.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SYSCOPE_MPI_DEFAULT_ABI
#define SYSCOPE_MPI_DEFAULT_ABI "openmpi"
#endif

/* The ABI a needed library's name says, or UNKNOWN. */
static enum sc_mpi_abi abi_of_library(const char *name)
{
	static const char *const mpich[] = { "libmpich.so", "libmpi.so.12", "libmpifort.so",
					     "libmpicxx.so" };
	static const char *const openmpi[] = { "libmpi.so.4",	      "libmpi_mpifh.so",
					       "libmpi_usempif08.so", "libmpi_usempi",
					       "libmpi_cxx.so",	      "libopen-rte.so",
					       "libopen-pal.so" };

	for (size_t i = 0; i < sizeof(mpich) / sizeof(mpich[0]); i++)
		if (!strncmp(name, mpich[i], strlen(mpich[i])))
			return SC_MPI_ABI_MPICH;
	for (size_t i = 0; i < sizeof(openmpi) / sizeof(openmpi[0]); i++)
		if (!strncmp(name, openmpi[i], strlen(openmpi[i])))
			return SC_MPI_ABI_OPENMPI;
	return SC_MPI_ABI_UNKNOWN;
}

struct needed_mpi {
	enum sc_mpi_abi abi;
	char *buf;
	size_t buflen;
};

static bool visit_needed(Elf *elf, size_t strtab, const GElf_Dyn *dyn, void *arg)
{
	struct needed_mpi *n = arg;
	const char *name;

	if (dyn->d_tag != DT_NEEDED || !(name = elf_strptr(elf, strtab, dyn->d_un.d_val)) ||
	    (n->abi = abi_of_library(name)) == SC_MPI_ABI_UNKNOWN)
		return false;
	snprintf(n->buf, n->buflen, "%s", name);
	return true;
}

/* The first MPI library among `program`'s DT_NEEDED entries, by its ABI; its name in buf. */
static enum sc_mpi_abi abi_of_needed(const char *program, char *buf, size_t buflen)
{
	struct needed_mpi n = { SC_MPI_ABI_UNKNOWN, buf, buflen };
	Elf *elf;
	int fd;

	if (!program || elf_version(EV_CURRENT) == EV_NONE ||
	    (fd = open(program, O_RDONLY | O_CLOEXEC)) < 0)
		return n.abi;
	if ((elf = elf_begin(fd, ELF_C_READ, NULL))) {
		sc_elf_each_dynamic(elf, visit_needed, &n);
		elf_end(elf);
	}
	close(fd);
	return n.abi;
}

enum sc_mpi_abi sc_mpi_abi_of(const char *program, char *buf, size_t buflen, const char **why)
{
	enum sc_mpi_abi abi = abi_of_needed(program, buf, buflen);

	if (abi != SC_MPI_ABI_UNKNOWN) {
		*why = buf;
		return abi;
	}
	/* A script (mpi4py), or MPI loaded with dlopen: the job's launcher tells. */
	if (getenv("OMPI_COMM_WORLD_RANK") || getenv("OMPI_UNIVERSE_SIZE")) {
		*why = "Open MPI's mpirun (OMPI_COMM_WORLD_RANK)";
		return SC_MPI_ABI_OPENMPI;
	}
	/* PMI_RANK alone is Hydra's too, but Slurm's srun --mpi=pmi2 sets it for any MPI. */
	if (getenv("HYDI_CONTROL_FD") || (getenv("PMI_RANK") && !getenv("SLURM_JOB_ID"))) {
		*why = "MPICH's mpiexec (Hydra: PMI_RANK)";
		return SC_MPI_ABI_MPICH;
	}
	*why = "nothing names an MPI";
	return SC_MPI_ABI_UNKNOWN;
}

const char *sc_mpi_abi_name(enum sc_mpi_abi abi)
{
	return abi == SC_MPI_ABI_MPICH	   ? "MPICH"
	       : abi == SC_MPI_ABI_OPENMPI ? "Open MPI"
					   : "unknown";
}

enum sc_mpi_abi sc_mpi_abi_built(void)
{
	return !strcmp(SYSCOPE_MPI_DEFAULT_ABI, "mpich") ? SC_MPI_ABI_MPICH : SC_MPI_ABI_OPENMPI;
}
