"""Dask's scatter as a peer of cuwire's TCP transfer: one numpy array client -> one worker process over loopback.

Usage: /usr/bin/python3 dask_peer.py SIZE_BYTES ROUNDS
Prints one line per round, `DASK scatter bytes=N ms=T`, then `DASK versions dask=... distributed=... numpy=...`.
One round is `client.scatter(array, direct=True, workers=[w])` until its future is back (the worker holds the array),
then the future is released and the worker's copy dropped, outside the timing. The first round is the cold one.
"""
import sys
import time

import dask
import distributed
import numpy as np
from distributed import Client, LocalCluster


def main():
    size = int(sys.argv[1])
    rounds = int(sys.argv[2])
    data = np.full(size // 4, 3.0, dtype=np.float32)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        worker = list(client.scheduler_info()["workers"])[0]
        for _ in range(rounds):
            t0 = time.perf_counter()
            future = client.scatter(data, direct=True, workers=[worker])
            distributed.wait(future)
            ms = (time.perf_counter() - t0) * 1e3
            print(f"DASK scatter bytes={size} ms={ms:.3f}", flush=True)
            client.cancel(future)
            del future
            while client.run(lambda dask_worker: len(dask_worker.data), workers=[worker])[worker]:
                time.sleep(0.01)
    print(f"DASK versions dask={dask.__version__} distributed={distributed.__version__} numpy={np.__version__}")


if __name__ == "__main__":
    main()
