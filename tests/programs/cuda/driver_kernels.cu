// SPDX-License-Identifier: MIT
// The module cuda_driver_only loads with cuModuleLoad (built to a fatbin).
extern "C" __global__ void triple(int *v)
{
	v[blockIdx.x * blockDim.x + threadIdx.x] *= 3;
}
