"""A tiny jitted JAX step loop (test_gpu_more.py, bench/gpu-bench's nvtx series): STEPS steps
of a small matrix update on the GPU, each step waited for, so that the host's per-step cost
(XLA's launches and, once a tool is attached, its NVTX ranges) is what the loop measures.

Usage: jax_steps.py [STEPS]; prints "steps=N us_per_step=X" and "jax_steps ok"."""
import sys
import time

import jax
import jax.numpy as jnp


@jax.jit
def step(x, w):
    return jnp.tanh(x @ w) * 0.5 + x * 0.5


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    if jax.default_backend() != "gpu":
        print(f"jax_steps: no GPU backend ({jax.default_backend()})", file=sys.stderr)
        return 3
    x = jnp.ones((64, 64), jnp.float32)
    w = jnp.eye(64, dtype=jnp.float32)
    step(x, w).block_until_ready()  # compiled before anything is timed
    t0 = time.perf_counter()
    for _ in range(n):
        x = step(x, w)
        x.block_until_ready()
    dt = time.perf_counter() - t0
    print(f"steps={n} us_per_step={dt / n * 1e6:.1f}")
    print("jax_steps ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
