"""``python -m sparkdelta.compat enable|disable|status``: serve delta-spark's ``delta`` modules in this environment."""

from __future__ import annotations

import sys

from sparkdelta.compat import PTH_FILE, delta_spark_installed, disable, enable, pth_path


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "enable":
        if delta_spark_installed():
            print("delta-spark is installed here: its delta modules stay in charge, sparkdelta's are not enabled")
            return 1
        print(f"enabled: {enable()} makes `import delta` and format('delta') use sparkdelta in every interpreter")
        return 0
    if command == "disable":
        print(f"disabled: {disable()} removed")
        return 0
    if command == "status":
        pth = pth_path(None)
        print(f"{'enabled' if pth.exists() else 'disabled'} ({pth})")
        return 0
    print(f"usage: python -m sparkdelta.compat enable|disable|status  (writes or removes {PTH_FILE})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
