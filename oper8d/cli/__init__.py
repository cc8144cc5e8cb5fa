"""The ``oper8d`` command line."""
