"""Record & replay: queue states, and commands submitted to recording queues becoming
nodes with the edges their dependencies, in-order queues and barriers imply (7.2.2,
7.6, 7.12.6)."""

from __future__ import annotations

import weakref
from typing import Any

from ..exceptions import errc, exception
from ..runtime.commands import Command
from ..runtime.context import context
from ..runtime.event import event
from ..runtime.handler import handler
from ..runtime.platform import device
from ..runtime.queue import queue
from .buffers import BufferUse
from .builder import check_recordable
from .core import GraphCore, node
from .properties import GRAPH_PROPERTIES, has, property
from .properties import property_list as property_list_of


class Recorder:
    """What a recording queue holds (`queue.recording_graph`): its graph, weakly, so a
    graph nobody holds goes and ends the recording (7.8), and whether this recording was
    promised that host data outlives its buffers (9.1.1)."""

    __slots__ = ("data_outlives_buffer", "graph")

    def __init__(self, graph: Recording, data_outlives_buffer: bool = False) -> None:
        self.graph = weakref.ref(graph)
        self.data_outlives_buffer = data_outlives_buffer

    def check_dependencies(self, events: list[Any]) -> None:
        """Refuses events that no recording into this graph returned."""
        graph = self.graph()
        if graph is not None:
            graph._event_nodes(events)

    def _record_from_queue(self, q: queue, command: Command, h: handler) -> recorded_event:
        graph = self.graph()
        if graph is None:  # collected while a submission was under way
            raise exception(errc.invalid, "the queue's command_graph no longer exists")
        return recorded_event(graph._record(q, command, h), self)


class recorded_event(event):
    """What a submission to a recording queue returns: a handle on the node it made.
    It names the node for edges (`depends_on`) and nothing else: waiting on it or asking
    its status is `errc.invalid` (7.11.1). It keeps the recorder that returned it: its
    graph, weakly."""

    __slots__ = ("_node", "_recorder")

    def __init__(self, n: node, recorder: Recorder) -> None:
        super().__init__()
        self._node = n
        self._recorder = recorder

    def _refuse(self, what: str) -> None:
        raise exception(errc.invalid, f"{what} of an event returned by a queue recording to "
                        "a command_graph")

    def wait(self) -> None:
        self._refuse("wait")

    def wait_and_throw(self) -> None:
        self._refuse("wait")

    def is_complete(self) -> bool:
        self._refuse("the status")
        return False

    def get_info(self, param: Any) -> Any:
        self._refuse("get_info")

    def get_profiling_info(self, param: Any) -> int:
        self._refuse("profiling information")
        return 0

    def _vksycl_record_transitively(self, q: queue) -> None:
        """An executing queue submitting work that depends on this event starts recording
        into the same graph (7.6.2), if that graph still records."""
        self._vksycl_graph_still_records()._begin_transitively(q)

    def _vksycl_graph_still_records(self) -> Recording:
        """The event's graph; errc.invalid once it no longer records (asked when the
        dependency is declared, before the command group builds its command)."""
        graph = self._recorder.graph()
        if graph is None or not graph._recorders:
            raise exception(errc.invalid, "an event of a finished command_graph recording "
                            "cannot be a dependency")
        return graph


class _QueueRecord:
    """Per recorded queue: its nodes, the last one (in-order edges), its last barrier."""

    __slots__ = ("barrier", "last", "nodes")

    def __init__(self) -> None:
        self.nodes: list[node] = []
        self.last: node | None = None
        self.barrier: node | None = None


def _end_all(recorders: dict[queue, Recorder]) -> None:
    for q, r in list(recorders.items()):
        if q.recording_graph is r:
            q.recording_graph = None
    recorders.clear()


class Recording(GraphCore):
    """The recording half of `command_graph`: the queues recording into it, and what
    each one recorded so far."""

    def __init__(self, ctx: context, dev: device, buffers: BufferUse) -> None:
        super().__init__(ctx, dev, buffers)
        self._recorders: dict[queue, Recorder] = {}
        self._queue_records: dict[queue, _QueueRecord] = {}
        weakref.finalize(self, _end_all, self._recorders)  # 7.8: ends recording

    def begin_recording(self, recordingQueue: Any,
                        property_list: Any = None) -> None:
        queues = _queues(recordingQueue)
        props = property_list_of(property_list, GRAPH_PROPERTIES, "begin_recording")
        keeps = has(props, property.graph.assume_data_outlives_buffer)
        with self._lock:
            for q in queues:
                if q.recording_graph is not None:
                    raise exception(errc.invalid, "begin_recording: the queue is already "
                                    "recording to a command_graph")
                if q.get_device() != self._device or q.get_context() != self._context:
                    raise exception(errc.invalid, "begin_recording: the queue's device or "
                                    "context is not the graph's")
            for q in queues:
                self._start(q, keeps)

    def _start(self, q: queue, data_outlives_buffer: bool = False) -> None:
        r = Recorder(self, data_outlives_buffer)
        self._recorders[q] = r
        self._queue_records.setdefault(q, _QueueRecord())
        q.recording_graph = r

    def _begin_transitively(self, q: queue) -> None:
        with self._lock:
            if q.recording_graph is None:
                if q.get_device() != self._device or q.get_context() != self._context:
                    raise exception(errc.invalid, "a queue of another device or context "
                                    "cannot record into this command_graph")
                self._start(q)

    def end_recording(self, recordingQueue: Any = None) -> None:
        with self._lock:
            if recordingQueue is None:
                _end_all(self._recorders)
                return
            queues = _queues(recordingQueue)
            for q in queues:
                r = q.recording_graph
                if r is not None and self._recorders.get(q) is not r:
                    raise exception(errc.invalid, "end_recording: the queue records to "
                                    "another command_graph")
            for q in queues:
                if self._recorders.pop(q, None) is not None:
                    q.recording_graph = None

    def records_now(self) -> bool:
        """Whether a queue records into the graph: host accessors to its buffers are
        refused meanwhile (7.11.3)."""
        return bool(self._recorders)

    def _record(self, q: queue, command: Command, h: handler) -> node:
        with self._lock:
            recorder = self._recorders.get(q)
            if recorder is not q.recording_graph:
                raise exception(errc.invalid, "the queue stopped recording")
            check_recordable(h)
            buffers = self._buffers
            buffers.check([h], "a command group recorded into a command_graph")
            deps = self._event_nodes(h._deps) + buffers.dependencies([h])
            rec = self._queue_records[q]
            barrier = command.command_type == "ext_oneapi_barrier"
            if barrier and not h._deps:  # the leaves recorded from this queue (7.12.6)
                deps += [n for n in rec.nodes if not n._succs]
            if rec.barrier is not None:
                deps.append(rec.barrier)
            if q.is_in_order() and rec.last is not None:
                deps.append(rec.last)
            n = self._add_node(command, h, deps)
            keeps = buffers.data_outlives_buffer or recorder.data_outlives_buffer
            buffers.add(self, n, [h], not keeps, self._queue)
            rec.nodes.append(n)
            rec.last = n
            if barrier:
                rec.barrier = n
            return n


def _queues(x: Any) -> list[queue]:
    queues = list(x) if isinstance(x, list | tuple) else [x]
    for q in queues:
        if not isinstance(q, queue):
            raise exception(errc.invalid, f"expected a queue or a list of queues, got "
                            f"{type(q).__name__}")
    return queues
