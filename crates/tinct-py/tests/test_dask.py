"""The random study as Dask tasks, one shard per task on a LocalCluster of
several worker processes, gives exactly the single-process result, and the
files `tinct experiment random` writes."""

from __future__ import annotations

import pytest

import tinct
import tinct.dask
from conftest import run_cli


from distributed import Client, LocalCluster, get_task_stream  # a missing dask fails, never skips

STUDY = dict(tasks=5, cores=2, partitions=8, util_min=1.0, util_max=2.0, util_step=0.25,
             sets=4, seed=8, node_budget=2000)


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def test_shards_on_dask_equal_the_single_process_run(client, tmp_path):
    params = tinct.experiment.random_params(**STUDY)
    single = tinct.experiment.random_study(params, threads=1)
    with get_task_stream(client) as stream:
        on_dask = tinct.dask.run_random(params, shards=7, client=client, out=tmp_path / "dask")
    assert on_dask == single
    assert sum(p["sets"] for p in single["points"]) == 5 * 4
    # One Dask task per shard, spread over the worker processes.
    shard_tasks = [t for t in stream.data if str(t["key"]).startswith("tinct-random-shard-")]
    assert len(shard_tasks) == 7
    assert len({t["worker"] for t in shard_tasks}) >= 2
    # And the files are the CLI's.
    run_cli("experiment", "random", "--tasks", "5", "--cores", "2", "--partitions", "8",
            "--util-min", "1", "--util-max", "2", "--util-step", "0.25", "--sets", "4",
            "--seed", "8", "--node-budget", "2000", "--out", str(tmp_path / "cli"))
    for name in ("params.json", "results.csv", "schedulability.svg"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


def test_every_shard_is_one_dask_task(client):
    params = tinct.experiment.random_params(**STUDY)
    futures = tinct.dask.submit_shards(client, params, 5)
    files = client.gather(futures)
    assert [f["shard"] for f in files] == [1, 2, 3, 4, 5]
    assert all(f["shards"] == 5 for f in files)
    assert len({f.key for f in futures}) == 5
    assert tinct.experiment.merge(files) == tinct.experiment.random_study(params)


def test_run_random_needs_a_client_or_an_address():
    params = tinct.experiment.random_params(**STUDY)
    with pytest.raises(tinct.BadInput):
        tinct.dask.run_random(params, shards=2)
    with pytest.raises(tinct.BadInput):
        tinct.dask.submit_shards(None, params, 0)
