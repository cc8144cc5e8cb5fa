"""Settings for every test.

Hypothesis: no per-example deadline. Its default (200 ms) fails a correct program on a busy
machine (CI runs the suite on 2 shared cores), and a property must not be able to fail on a
correct program; time limits of our own code are tested where they are a feature.
"""

from hypothesis import settings

settings.register_profile("oper8d", deadline=None)
settings.load_profile("oper8d")
