/* SPDX-License-Identifier: MIT */
/* An empty stand-in for the CUDA driver's library (fixtures/fake-cuda/libcuda.so.1), so that
 * libsyscope-cuda.so loads on a machine without a GPU: nothing calls into it there
 * (tests/integration/test_gpu_more.py's NVTX test without a GPU). */
int fake_cuda_present(void);
int fake_cuda_present(void)
{
	return 1;
}
