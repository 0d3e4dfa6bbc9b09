"""The runtime: what advances a run. The replay context and the workflow body's calls, the
store interface with its live and recorded stores, the executor, the heartbeat, the sweep
and the dispatch of "advance run X".

It sits on the tables (``durable.models``) and the base modules, and imports nothing of
the client API, the features or the surfaces above it (``.importlinter``).
"""
