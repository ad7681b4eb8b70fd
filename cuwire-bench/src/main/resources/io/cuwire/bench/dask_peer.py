"""Dask's scatter as a path of `cuwire bench model-transfer`: one numpy array client -> one worker process over loopback.

Usage: python3 dask_peer.py SIZE_BYTES
Starts a LocalCluster of one worker process (one thread, TCP on 127.0.0.1), makes a float32 array of SIZE_BYTES, prints
`READY dask=... distributed=... numpy=...` and then serves the bench, one command per line on standard input:
  N      N scatters back to back; answers `DONE ns=T` with T the sum of their times in nanoseconds
  EXIT   closes the cluster and exits
One scatter is `client.scatter(array, direct=True, workers=[w], hash=False)` until its future is done (the worker
holds the array), timed with perf_counter_ns; then, outside the timing, the future is released and the worker's copy
dropped (waited for), so each scatter moves the bytes again into a worker that holds nothing. Errors go to standard
error and end the process with exit status 1.
"""
import sys
import time

import dask
import distributed
import numpy as np
from distributed import Client, LocalCluster


def main():
    size = int(sys.argv[1])
    data = np.full(max(1, size // 4), 3.0, dtype=np.float32)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        worker = list(client.scheduler_info()["workers"])[0]

        def held():
            return client.run(lambda dask_worker: len(dask_worker.data), workers=[worker])[worker]

        print(f"READY dask={dask.__version__} distributed={distributed.__version__} numpy={np.__version__}",
              flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "EXIT":
                break
            total = 0
            for _ in range(int(command)):
                t0 = time.perf_counter_ns()
                future = client.scatter(data, direct=True, workers=[worker], hash=False)
                distributed.wait(future)
                total += time.perf_counter_ns() - t0
                client.cancel(future)
                del future
                while held():
                    time.sleep(0.001)
            print(f"DONE ns={total}", flush=True)


if __name__ == "__main__":
    main()
