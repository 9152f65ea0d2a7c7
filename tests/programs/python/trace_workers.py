"""Fixture of test_python_trace: multiprocessing workers (fork), named by their role: a
Process with its default name is its target ("job"); a named one keeps its name; pool
workers are "ForkPoolWorker-N"."""
import multiprocessing as mp


def job(n):
    return sum(range(n))


def square(x):
    return x * x


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    p = ctx.Process(target=job, args=(1000,))
    p.start()
    p.join()
    q = ctx.Process(target=job, args=(10,), name="loader")
    q.start()
    q.join()
    pool = ctx.Pool(2)
    print("squares", sum(pool.map(square, range(20))))
    pool.close()  # the workers leave by themselves (terminate would kill them mid-call)
    pool.join()
    print("exit codes", p.exitcode, q.exitcode)
