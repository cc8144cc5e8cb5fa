"""The pure reconcile pipeline, no module here talks to the API server except through a
``Cluster``: ``reconcile`` (the entry point and its steps), ``inputs`` (a CR's defaulted
spec and merged config), ``session`` (one reconcile's state and template context),
``rollout`` (the four phases: ``render``, ``deploy_phase``, ``hooks``, ``verify_phase``),
``deploy`` (applying and deleting owned objects), ``prune``, ``temporary_patches``,
``patch``, ``verify``, ``status``, ``config``."""
