"""`sycl_ext_oneapi_graph`: command graphs built explicitly or recorded from queues,
finalized into pre-recorded Vulkan command buffers, and updated in place."""

from ..runtime.queue import queue_state
from .command_group import dynamic_command_group
from .core import node
from .executable import executable_command_graph
from .graph import command_graph
from .parameter import dynamic_parameter
from .properties import graph_state, node_type, property

__all__ = ["command_graph", "dynamic_command_group", "dynamic_parameter",
           "executable_command_graph", "graph_state", "node", "node_type", "property",
           "queue_state"]
