/* SPDX-License-Identifier: MIT */
/* For test_attach.py: a library named libcuda.so.1 that a fixture loads, so that attach sees
 * a process using CUDA (it defines nothing of the driver). */
int attach_fake_cuda_loaded(void)
{
	return 1;
}
