#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# private_files.sh SCENARIO BIN_DIR CUDASNAP_TOOL
#
# Files others can read (issue 34, item 8), and what `cudasnap run` says (item 7). it_two_devices
# runs under `cudasnap run` on the fake driver:
#   modes     under umask 027 and 002, every file cudasnap makes (the exit snapshot, the recording
#             file, and the tool's outputs: recover, convert, export pprof and perfetto, report)
#             has mode 0666 less the umask, as any program's files: 0640 and 0664; recover
#             replaces an existing output, as the other subcommands do, and never its input
#   argv      a token on the program's command line is in the snapshot and the recording by
#             default; with CUDASNAP_ARGV=0 (and `run --no-argv`) it is in neither, nor in the
#             recovered snapshot, whose cudasnap.argv is []
#   no_cuda   `cudasnap run` of a program that never calls CUDA prints one line saying so, and
#             nothing for a program that did, or for a shell that started a child; a program
#             whose runtime found no driver gets one line saying that its calls failed, and why
set -u
scenario=$1 bin=$2 tool=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [$scenario]: $*" >&2; exit 1; }
prog=$bin/it_two_devices
export CUDASNAP_DUMP_ON=exit # the tests' environment turns snapshots off

mode_of() { stat -c %a "$1"; }

case $scenario in
modes)
  for mask in 027 002; do
    want=$(printf '%o' $((0666 & ~8#$mask)))
    rm -rf "${dir:?}"/*
    (cd "$dir" && umask $mask && "$tool" run -o "$dir/snap-%t.json" --record "$dir/rec.csrec" -- "$prog" >out 2>err) ||
      fail "the program failed: $(cat "$dir/err")"
    (
      umask $mask
      "$tool" recover -o "$dir/recovered.json" "$dir/rec.csrec" >/dev/null &&
        "$tool" convert "$dir/snap-exit.json" "$dir/snap.pickle" >/dev/null &&
        "$tool" export --format pprof -o "$dir/snap.pb.gz" "$dir/snap-exit.json" >/dev/null &&
        "$tool" export --format perfetto -o "$dir/snap.trace.json" "$dir/snap-exit.json" >/dev/null &&
        "$tool" report -o "$dir/snap.html" "$dir/snap-exit.json" >/dev/null
    ) 2>"$dir/err" || fail "a subcommand failed: $(cat "$dir/err")"
    for f in snap-exit.json rec.csrec recovered.json snap.pickle snap.pb.gz snap.trace.json snap.html; do
      [[ -f $dir/$f ]] || fail "umask $mask: no $f: $(ls "$dir")"
      [[ $(mode_of "$dir/$f") == "$want" ]] || fail "umask $mask: $f has mode $(mode_of "$dir/$f"), want $want"
    done
  done
  # the one rule of outputs: an existing one is replaced (recover numbered it before), the input
  # never is
  "$tool" recover -o "$dir/recovered.json" "$dir/rec.csrec" >"$dir/out" 2>"$dir/err" || fail "recover again: $(cat "$dir/err")"
  grep -q "^wrote $dir/recovered.json: " "$dir/out" && [[ ! -e $dir/recovered-1.json ]] ||
    fail "recover did not replace its output: $(cat "$dir/out"; ls "$dir")"
  "$tool" recover -o "$dir/rec.csrec" "$dir/rec.csrec" >"$dir/out" 2>"$dir/err" && fail "recover over its recording exited 0"
  grep -q "is the recording being read" "$dir/err" || fail "recover over its recording: $(cat "$dir/err")"
  "$tool" recover -o "$dir/again.json" "$dir/rec.csrec" >/dev/null 2>&1 || fail "the recording was damaged"
  ;;
argv)
  secret=--token=hunter2-$$
  (cd "$dir" && "$tool" run -o "$dir/kept-%t.json" --record "$dir/kept.csrec" -- "$prog" "$secret" >out 2>err) ||
    fail "the program failed: $(cat "$dir/err")"
  grep -q -- "$secret" "$dir/kept-exit.json" || fail "the command line is not in the snapshot by default"
  grep -qa -- "$secret" "$dir/kept.csrec" || fail "the command line is not in the recording by default"
  (cd "$dir" && "$tool" run --no-argv -o "$dir/run-%t.json" --record "$dir/run.csrec" -- "$prog" "$secret" >out 2>err) ||
    fail "the program failed: $(cat "$dir/err")"
  (cd "$dir" && CUDASNAP_ARGV=0 "$tool" run -o "$dir/env-%t.json" -- "$prog" "$secret" >out 2>err) ||
    fail "the program failed: $(cat "$dir/err")"
  "$tool" recover -o "$dir/recovered.json" "$dir/run.csrec" >/dev/null 2>"$dir/err" || fail "recover: $(cat "$dir/err")"
  for f in run-exit.json run.csrec env-exit.json recovered.json; do
    ! grep -qa -- "$secret" "$dir/$f" || fail "$f holds the command line"
  done
  python3 - "$dir/run-exit.json" "$dir/env-exit.json" "$dir/recovered.json" "$dir/kept-exit.json" "$secret" <<'PY' ||
import json, sys
for f in sys.argv[1:4]:
    argv = json.load(open(f))["cudasnap"]["argv"]
    assert argv == [], (f, argv)
kept = json.load(open(sys.argv[4]))["cudasnap"]["argv"]
assert kept[-1] == sys.argv[5], kept
PY
    fail "cudasnap.argv is not [] where it is left out"
  ;;
no_cuda)
  "$tool" run -- true >"$dir/out" 2>"$dir/err" || fail "run true failed"
  [[ $(wc -l <"$dir/err") -eq 1 ]] && grep -qx "cudasnap: true made no CUDA call: nothing to profile, no snapshot written" "$dir/err" ||
    fail "run of a program without CUDA: expected one line, got: $(cat "$dir/err")"
  (cd "$dir" && "$tool" run -o "$dir/snap-%t.json" -- "$prog" >out 2>err) || fail "the program failed"
  ! grep -q "made no CUDA call" "$dir/err" || fail "said for a program that used CUDA: $(cat "$dir/err")"
  (cd "$dir" && "$tool" run -- sh -c "$prog >/dev/null; exit 0" >out 2>err) || fail "the shell failed"
  ! grep -q "made no CUDA call" "$dir/err" || fail "said for a shell whose child used CUDA: $(cat "$dir/err")"
  # A rank whose runtime finds no driver (issue 46): its cudaGetDeviceCount failed, so it did call
  # CUDA; the line says that its calls failed and why, and the program keeps its exit status.
  (cd "$dir" && FAKE_CUDART_LIBCUDA=libcuda-not-installed.so.1 "$tool" run -- "$bin/it_no_driver" >out 2>err)
  rc=$?
  [[ $rc -eq 1 ]] && grep -qx "cudaGetDeviceCount: 35, -1 devices" "$dir/out" ||
    fail "it_no_driver: exit $rc (want 1, the program's): $(cat "$dir/out" "$dir/err")"
  want="cudasnap: it_no_driver's CUDA calls failed (cudaGetDeviceCount returned cudaErrorInsufficientDriver): no"
  want+=" CUDA driver found: libcuda.so.1 could not be loaded (LD_LIBRARY_PATH, the driver's installation); nothing"
  want+=" to profile, no snapshot written"
  [[ $(wc -l <"$dir/err") -eq 1 ]] && grep -qxF "$want" "$dir/err" ||
    fail "run of a program whose CUDA calls failed: expected one line '$want', got: $(cat "$dir/err")"
  ;;
*) fail "unknown scenario" ;;
esac
exit 0
