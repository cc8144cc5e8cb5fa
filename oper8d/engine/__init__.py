"""The pure reconcile pipeline: dag, patch, verify, status, config, deploy, session, rollout,
reconcile. No module here talks to the API server except through a ``Cluster``."""
