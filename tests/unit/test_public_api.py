"""The public surface is deliberate: adding or removing a name is an API change."""

import oper8d


def test_public_names_are_exactly_the_documented_ones():
    assert sorted(oper8d.__all__) == sorted(
        [
            "Bundle",
            "BundleError",
            "Cluster",
            "ClusterError",
            "ConfigError",
            "ExpectedError",
            "FatalError",
            "Oper8dError",
            "PreconditionError",
            "Problem",
            "ReconcileError",
            "RolloutError",
            "SourcePos",
            "VerificationError",
            "__version__",
            "load_bundle",
        ]
    )
    for name in oper8d.__all__:
        assert hasattr(oper8d, name), name


def test_every_reconcile_error_is_either_fatal_or_expected():
    for cls in (oper8d.ConfigError, oper8d.ClusterError, oper8d.RolloutError):
        assert issubclass(cls, oper8d.FatalError) and cls.fatal
    for cls in (oper8d.PreconditionError, oper8d.VerificationError):
        assert issubclass(cls, oper8d.ExpectedError) and not cls.fatal
