"""``python -m oper8d.envtest``: build if needed, start a test cluster, wait for Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from ._process import StartError
from .build import BuildError, bin_dir_or_build
from .environment import Environment


def main(argv: list[str] | None = None) -> int:
    """Parse options, start the environment and keep it up until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m oper8d.envtest", description=__doc__)
    parser.add_argument("--bin-dir", type=Path, help="binaries (default: build/cached)")
    parser.add_argument("--nodes", type=int, default=2, help="fake kwok nodes (default 2)")
    parser.add_argument("--no-controller-manager", action="store_true")
    parser.add_argument("--no-scheduler", action="store_true")
    parser.add_argument("--no-kwok", action="store_true")
    parser.add_argument("--no-volume-provisioner", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir after exit")
    args = parser.parse_args(argv)

    try:
        bin_dir = args.bin_dir or bin_dir_or_build(echo=True)
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    env = Environment(
        bin_dir=bin_dir,
        controller_manager=not args.no_controller_manager,
        scheduler=not args.no_scheduler,
        kwok=not args.no_kwok,
        volume_provisioner=not args.no_volume_provisioner,
        fake_nodes=args.nodes,
        keep_temp_dir=args.keep,
    )
    # SIGTERM ends the wait below like Ctrl-C does, so the children are stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        env.start()
        print(f"server:     {env.server_url}")
        print(f"logs:       {env.temp_dir}/logs")
        print(f"export KUBECONFIG={env.kubeconfig_path}")
        print("Ctrl-C stops the cluster.", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    except StartError as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        env.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
