"""Sub-graphs (sycl_ext_oneapi_graph, usage guide "Sub-Graph"): an executable graph
becomes one node of another graph through `handler.ext_oneapi_graph`, and still runs on
its own. A host task node runs Python between GPU work on every replay.

    .venv/bin/python examples/graph_sub_graph.py
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

N = 256


def main() -> int:
    # in order: the last submission of the sub-graph alone waits for the replays before
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    data = sycl.malloc_shared(N, sycl.float32, q)
    np.asarray(data)[:N] = 1.0
    log = []

    def scale(i):
        data[i] = data[i] * 2.0

    def shift(i):
        data[i] = data[i] + 1.0

    sub = syclexp.command_graph(q)
    with sub.recording(q):
        q.parallel_for(sycl.range(N), shift, depends_on=q.parallel_for(sycl.range(N), scale))
    sub_exe = sub.finalize()  # data = data * 2 + 1

    main_graph = syclexp.command_graph(q)
    with main_graph.recording(q):
        e = q.submit(lambda h: h.ext_oneapi_graph(sub_exe))
        e = q.submit(lambda h: (h.depends_on(e),
                                h.host_task(lambda: log.append(float(np.asarray(data)[0])))))
        q.submit(lambda h: (h.depends_on(e), h.ext_oneapi_graph(sub_exe)))
    exe = main_graph.finalize()  # twice the sub-graph, a host task between

    value = 1.0
    expected_log = []
    for _ in range(3):
        q.ext_oneapi_graph(exe)  # back to back: each waits for the one before
        value = value * 2 + 1
        expected_log.append(value)
        value = value * 2 + 1
    q.ext_oneapi_graph(sub_exe)
    value = value * 2 + 1
    q.wait()
    ok = log == expected_log and (np.asarray(data)[:N] == value).all()
    print(f"host task saw {log}; data is {float(np.asarray(data)[0])} (expected {value})")
    sycl.free(data, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
