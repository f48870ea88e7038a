# SPDX-License-Identifier: Apache-2.0
"""status_of.py OUT ERR COMMAND [ARGS...]

Runs COMMAND with stdout to OUT and stderr to ERR, core dumps allowed (RLIMIT_CORE raised to its
hard limit, so a core is written where the system writes one), and prints how it ended:
    exit N
    signal NAME            (killed by the signal)
    signal NAME core       (killed by it, and the kernel wrote a core dump)
The wait status is read whole (os.waitpid), which a shell's $? cannot tell apart."""

import os
import resource
import signal
import subprocess
import sys


def allow_core():
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, preexec_fn=allow_core)
        _, status = os.waitpid(proc.pid, 0)
        proc.returncode = status  # reaped here: Popen must not wait again
    if os.WIFEXITED(status):
        print("exit %d" % os.WEXITSTATUS(status))
    elif os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        print("signal %s%s" % (name, " core" if os.WCOREDUMP(status) else ""))
    else:
        print("status 0x%x" % status)


if __name__ == "__main__":
    main()
