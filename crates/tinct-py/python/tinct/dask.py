"""Random studies on a Dask cluster: one shard per Dask task.

Shard I of N is computed by :func:`tinct.experiment.random_shard` on a
worker; the shards are gathered and merged by :func:`tinct.experiment.merge`,
which checks that they cover the study exactly once. Every task set is drawn
from its own seeded stream, so the result is identical to the
single-process run whatever the number of shards or workers.

On a laptop::

    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=4, processes=True) as cluster, Client(cluster) as client:
        result = tinct.dask.run_random(params, shards=16, client=client)

On a cluster (every worker needs ``tinct`` installed, e.g.
``pip install ./crates/tinct-py``)::

    result = tinct.dask.run_random(params, shards=256, address="tcp://scheduler:8786")

Needs ``dask[distributed]`` (``pip install 'tinct[dask]'``).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from . import experiment
from .errors import BadInput

__all__ = ["submit_shards", "run_random"]


def submit_shards(
    client: Any,
    params: Dict[str, Any],
    shards: int,
    *,
    threads_per_shard: Optional[int] = 1,
    timeout: Optional[float] = None,
) -> List[Any]:
    """Submits the ``shards`` shards of the study as Dask tasks; returns their
    futures in shard order (each resolves to a shard dict).

    ``threads_per_shard`` threads compute each shard (default 1: Dask's
    workers provide the parallelism; the computation releases the GIL, so a
    worker with several threads runs several shards at once).
    """
    if not isinstance(shards, int) or shards < 1:
        raise BadInput(f"shards: expected a whole number of at least 1, found {shards!r}", field="shards")
    return [
        client.submit(
            experiment.random_shard,
            params,
            (index, shards),
            threads=threads_per_shard,
            timeout=timeout,
            pure=False,
            key=f"tinct-random-shard-{index}-of-{shards}-{os.urandom(4).hex()}",
        )
        for index in range(1, shards + 1)
    ]


def run_random(
    params: Dict[str, Any],
    shards: int,
    *,
    client: Any = None,
    address: Optional[str] = None,
    threads_per_shard: Optional[int] = 1,
    timeout: Optional[float] = None,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Dict[str, Any]:
    """Runs the random study as ``shards`` Dask tasks and merges them.

    Args:
        params: from :func:`tinct.experiment.random_params`.
        shards: number of shards (Dask tasks).
        client: a ``distributed.Client``; or give ``address``, a scheduler
            address such as ``"tcp://10.0.0.1:8786"``, and a client is opened
            (and closed) for this call.
        threads_per_shard: threads per shard (see :func:`submit_shards`).
        timeout: seconds per shard; a stopped shard raises ``Stopped``.
        out: if given, ``params.json``, ``results.csv`` and
            ``schedulability.svg`` are written there, byte for byte what
            ``tinct experiment random`` writes.

    Returns:
        ``{"params", "points"}``, identical to
        :func:`tinct.experiment.random_study`.
    """
    if (client is None) == (address is None):
        raise BadInput(
            "client/address: expected exactly one of a distributed.Client or a scheduler address",
            field="client",
        )
    own = None
    if client is None:
        from distributed import Client

        own = client = Client(address)
    try:
        futures = submit_shards(
            client, params, shards, threads_per_shard=threads_per_shard, timeout=timeout
        )
        files = client.gather(futures)
    finally:
        if own is not None:
            own.close()
    result = experiment.merge(files)
    if out is not None:
        experiment.write_results(out, result)
    return result
