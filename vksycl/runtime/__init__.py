"""The runtime: devices, contexts, queues, events, USM, memory operations, the command
model, the scheduler, and the Kompute engine."""
