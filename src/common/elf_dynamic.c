/* SPDX-License-Identifier: MIT */
/* The entries of an ELF file's dynamic section (elf_dynamic.h). */
#include "elf_dynamic.h"

#include <stddef.h>

bool sc_elf_each_dynamic(Elf *elf, sc_elf_dynamic_visit visit, void *arg)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, (int)i, &dyn))
				continue;
			if (dyn.d_tag == DT_NULL)
				break; /* the end of the table; padding may follow */
			if (visit(elf, sh.sh_link, &dyn, arg))
				return true;
		}
	}
	return false;
}
