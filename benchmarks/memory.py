"""Peak resident memory of this process, its own and not its parent's.

``getrusage(RUSAGE_SELF).ru_maxrss`` is not that in a child: Linux carries the parent's
high-water mark across fork/vfork + exec, so a child started by a 400 MB parent reports at least
400 MB. ``VmHWM`` in /proc/self/status belongs to the current address space and starts afresh at
exec.
"""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
