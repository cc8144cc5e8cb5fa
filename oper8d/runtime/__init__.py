"""Running operators against a real cluster: what controller-runtime gives Go operators.

One concern per module; the manager wires them together for ``oper8d run``:

- ``queue``: ``WorkQueue``, the deduplicating, delaying, rate-limited work queue of CR keys
- ``predicates``: which watch events are worth a reconcile (``cr_update_matters``, ``is_paused``)
- ``metrics``: ``Metrics``, the Prometheus metrics in a registry of their own
- ``probes``: ``ProbeServer``, the /healthz, /readyz and /metrics HTTP endpoint
- ``store``: ``ObjectStore``, the indexed objects of one informer, and copy/compare helpers
- ``informer``: ``Informer``, a list+watch cache of one kind with event handlers
- ``cache``: ``CachedCluster``, a Cluster that reads from informers and writes to the API
- ``leaderelection``: ``LeaderElector``, a coordination.k8s.io Lease held by one replica
- ``controller``: one bundle controller: its informers, event handlers and reconcile workers
- ``temporarypatch``: the TemporaryPatch controller (oper8's ``oper8.org/v1`` contract)
- ``events``: Kubernetes Events on a CR when its Ready or Updating condition changes
- ``manager``: runs the controllers, workers, probes and leader election until SIGTERM
- ``options``: ``ManagerOptions``, the manager's settings (and ``oper8d run``'s flag defaults)

Each module declares, as small ``typing.Protocol``s, what it needs of the others and of
the API server (``informer.ListWatch``, ``cache.ApiServer``, ``events.EventSink``,
``leaderelection.LeaseClient``, ``manager.ManagedApi``, ...), so every part runs over
fakes in the unit tests. Nothing is imported here, so importing one module does not load
the others.
"""
