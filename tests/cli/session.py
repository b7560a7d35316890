# SPDX-License-Identifier: MIT
"""What the command-line suites ask of a running nanoprobe session."""
import os
import time


def session_ready(proc, timeout=60):
    """Whether nanoprobe (the process `proc`) has its session set up: it maps
    the agents' rings (memfd "nanoprobe-rings") once the first agent has
    said READY, which an agent says after placing every probe it can."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/maps") as f:
                if "nanoprobe-rings" in f.read():
                    return True
        except OSError:
            return False
        time.sleep(0.005)
    return False


def ptrace_allowed():
    """Whether this user may attach to its own processes (-p)."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return f.read().strip() == "0" or os.geteuid() == 0
    except OSError:
        return True


def clean_env():
    """The environment the suites run nanoprobe in: no agent or preload
    inherited from whoever runs the tests, no debuginfod look-ups over the
    network, messages in the C locale so the tests can read them."""
    env = dict(os.environ)
    for name in ("NANOPROBE_AGENT", "LD_PRELOAD"):
        env.pop(name, None)
    env["DEBUGINFOD_URLS"] = ""
    env["LC_ALL"] = "C"
    return env
