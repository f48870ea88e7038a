# SPDX-License-Identifier: Apache-2.0
"""The pid-reuse race of `cudasnap dump --all` (issue 45), reproduced as it happens:

    live_race.py CUDASNAP PROG_LIVE TREE WORK VICTIM_UID OWNER_UID

Run as root inside a PID namespace of its own (tests/cli/live_records_test.sh: `unshare --pid
--fork --mount-proc`), where /proc/sys/kernel/ns_last_pid says which pid the next process gets.
A profiled program of OWNER_UID registers; its CUDASNAP_OUTPUT globs TREE, a big tree, so that
dump's look at the files already there takes a while. While root's `dump --all --all-users` is in
that glob (the moment inotify sees TREE opened), the program is killed, and a process of
VICTIM_UID that does not catch the signal (a sleep) is started under the same pid. The victim
must survive: dump may signal only the process it checked. Exit 0 when it did, 1 when the victim
was signalled or the race could not be set up (said on stderr)."""
import ctypes
import os
import select
import subprocess
import sys
import time

cudasnap, prog, tree, work, victim_uid, owner_uid = sys.argv[1:7]
IN_OPEN = 0x20

libc = ctypes.CDLL(None, use_errno=True)


def fail(why):
    print("FAIL [race]: " + why, file=sys.stderr)
    sys.exit(1)


def as_user(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


# the owner's profiled program, registered and holding memory
owner = subprocess.Popen(
    as_user(owner_uid) + [cudasnap, "run", "--", prog],
    cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    env=dict(os.environ, CUDASNAP_OUTPUT=f"{tree}/%h/%h/%h/snap-%p.json"))
for command in (None, "hold 0 1"):
    if command:
        owner.stdin.write((command + "\n").encode())
        owner.stdin.flush()
    if owner.stdout.readline().strip() != b"ready":
        fail("the owner's program did not start")
deadline = time.time() + 10
while not any(name.endswith(f"-{owner.pid}") for _, _, files in os.walk(os.environ["CUDASNAP_LIVE_DIR"])
              for name in files):
    if time.time() > deadline:
        fail("the owner's program never registered")
    time.sleep(0.05)

fd = libc.inotify_init1(os.O_CLOEXEC)
if fd < 0 or libc.inotify_add_watch(fd, tree.encode(), IN_OPEN) < 0:
    fail("inotify: " + os.strerror(ctypes.get_errno()))
dump = subprocess.Popen([cudasnap, "dump", "--all", "--all-users", "--timeout", "3"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
ready, _, _ = select.select([fd], [], [], 20)
if not ready:
    dump.kill()
    fail("dump never looked in the tree: " + dump.communicate()[1].decode())
# dump is globbing the owner's pattern: the owner goes, and its pid is given to the victim
pid = owner.pid
owner.kill()
owner.wait()
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(pid - 1))
victim = subprocess.Popen(as_user(victim_uid) + ["sleep", "60"])
if victim.pid != pid:
    victim.kill()
    fail(f"the victim got pid {victim.pid}, not {pid}: the race was not set up")
if dump.poll() is not None:
    victim.kill()
    fail("dump ended before the pid was taken (the glob was too short): " + dump.communicate()[1].decode())
out, err = dump.communicate(timeout=60)
time.sleep(0.2)
alive = victim.poll() is None
status = victim.returncode
victim.kill()
victim.wait()
sys.stderr.write(err.decode())
if not alive:
    fail(f"dump signalled another user's process that took the pid (it ended with {status})")
print("victim alive; dump said: " + err.decode().strip().replace("\n", " | "))
