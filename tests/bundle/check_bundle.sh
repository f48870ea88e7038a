#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_bundle.sh BUNDLE_BUILD_DIR SOURCE_DIR   (BUNDLE_BUILD_DIR: gpu-check.sh's GPU_BUNDLE_BUILD)
# The bundle `scripts/gpu-check.sh --bundle DIR` makes for a bare GPU machine is complete and
# relocatable, without a GPU:
#  - it is at most 60 MB;
#  - every ELF file in it resolves each library it needs (DT_NEEDED, and for libcudasnap.so and the
#    tool the libraries the sources dlopen) to a file of the bundle, through its own $ORIGIN run path,
#    or to the base set an Ubuntu 24.04 CUDA machine provides (scripts/gpu-bundle-base.txt), and
#    asks for no symbol version newer than that machine's (glibc 2.39, GCC 14);
#  - no run path is absolute, and no file holds a path of this machine (the source or build tree);
#  - moved to another directory, its run.sh --dry-run passes on the fake driver, writing a few files
#    no more than two folders deep, as the GPU machine hands them back; --only runs the checks it
#    names and no others;
#  - there, the libraries cudasnap and the tool load at run time are the bundle's copies, not this
#    machine's (the loader's own account, LD_DEBUG=libs).
# Exit 77 (skipped) without nvcc, which the bundle's programs are built with.
set -euo pipefail
mkdir -p "$1"
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [[ ! -x $nvcc ]]; then echo "SKIP: no nvcc (the CUDA Toolkit) to build the bundle's programs with"; exit 77; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudasnap-bundle-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
made=$tmp/made/bundle
echo "building the bundle (build tree $build)"
GPU_BUNDLE_BUILD=$build bash "$src/scripts/gpu-check.sh" --bundle "$made" >"$tmp/bundle.log" 2>&1 ||
  { tail -n 20 "$tmp/bundle.log" >&2; fail "scripts/gpu-check.sh --bundle failed"; }

# ---- size -----------------------------------------------------------------------------------------
bytes=$(du -sb "$made" | cut -f1)
((bytes <= 60 * 1000 * 1000)) || fail "the bundle is $bytes bytes, over 60 MB"
echo "size: $bytes bytes in $(find "$made" -type f | wc -l) files"

# ---- resolution -----------------------------------------------------------------------------------
base=$src/scripts/gpu-bundle-base.txt
declare -A base_lib=() ceiling=()
while read -r kind name _; do
  case $kind in
    lib) base_lib[$name]=1 ;;
    version) ceiling[${name%_*}]=${name##*_} ;;
  esac
done <"$base"
((${#base_lib[@]} > 5 && ${#ceiling[@]} >= 3)) || fail "cannot read the base set from $base"

# what libcudasnap.so and the tool dlopen, by the sources' dlopen calls (DT_NEEDED does not show them)
mapfile -t dlopened < <(grep -rhoE 'dlopen\("[^"]+"' --include='*.c' "$src" --exclude-dir='build*' \
  --exclude-dir=tests --exclude-dir=fuzz --exclude-dir=bench --exclude-dir=examples | sed 's/dlopen("//; s/"$//' | sort -u)
[[ " ${dlopened[*]} " == *" libunwind.so.8 "* && " ${dlopened[*]} " == *" libdw.so.1 "* ]] ||
  fail "the sources' dlopen calls name neither libunwind.so.8 nor libdw.so.1 (${dlopened[*]}): this test reads them wrong"

elves=0 problems=()
while IFS= read -r -d '' f; do
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  elves=$((elves + 1))
  rel=${f#"$made"/}
  dir=$(dirname "$f")
  runpath=$(readelf -d "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  dirs=()
  IFS=: read -r -a entries <<<"$runpath"
  for e in "${entries[@]}"; do
    [[ $e == '$ORIGIN'* ]] || { problems+=("$rel: run path entry '$e' is not relative to \$ORIGIN"); continue; }
    d=$(realpath -m "$dir/${e#'$ORIGIN'}")
    [[ $d == "$made" || $d == "$made"/* ]] || problems+=("$rel: run path '$e' leaves the bundle")
    dirs+=("$d")
  done
  mapfile -t needed < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [[ $rel == lib/libcudasnap.so || $rel == bin/cudasnap ]] && needed+=("${dlopened[@]}")
  for n in "${needed[@]}"; do
    [[ -n ${base_lib[$n]-} ]] && continue
    ok=0
    for d in "${dirs[@]}"; do [[ -f $d/$n ]] && ok=1; done
    ((ok)) || problems+=("$rel needs $n: neither in the base set nor found through its run path (${runpath:-none})")
  done
  # symbol versions the machine's glibc and GCC runtime must define
  while read -r node; do
    name=${node%_*} v=${node##*_}
    [[ -n ${ceiling[$name]-} ]] || continue
    newest=$(printf '%s\n%s\n' "$v" "${ceiling[$name]}" | sort -V | tail -n1)
    [[ $newest == "${ceiling[$name]}" ]] || problems+=("$rel needs $node, newer than Ubuntu 24.04's ${name}_${ceiling[$name]}")
  done < <(readelf -V --wide "$f" | sed -n 's/.*Name: \([A-Z+]*_[0-9.]*\).*/\1/p' | sort -u)
done < <(find "$made" -type f -print0)
((elves >= 20)) || problems+=("only $elves ELF files in the bundle")
[[ -f $made/lib/libunwind.so.8 && -f $made/lib/libdw.so.1 && -f $made/lib/libcjson.so.1 ]] ||
  problems+=("libunwind.so.8, libdw.so.1 or libcjson.so.1 is not in lib/")

# ---- no path of this machine ------------------------------------------------------------------------
while IFS= read -r f; do problems+=("${f#"$made"/} holds a path of this machine ($src, $build or $made)")
done < <(grep -rlF -e "$src" -e "$build" -e "$made" "$made" || true)

if ((${#problems[@]})); then printf 'FAIL: %s\n' "${problems[@]}" >&2; exit 1; fi
echo "resolution: $elves ELF files resolve to the bundle or the base set; no absolute run path"

# ---- moved elsewhere, the dry run -------------------------------------------------------------------
moved=$tmp/elsewhere/b
mkdir -p "$tmp/elsewhere"
mv "$made" "$moved"
out=$tmp/out
(cd "$tmp" && bash "$moved/run.sh" --dry-run "$out" >"$tmp/run.log" 2>&1) ||
  { tail -n 40 "$tmp/run.log" >&2; fail "run.sh --dry-run from a moved bundle failed"; }
report=$out/report.md
[[ -f $report ]] || fail "no report.md in $out"
for row in "0. bundle programs" "1. host-built program on the fake runtime" "6. cudaDeviceReset mid-run" \
  "6. fork after CUDA init" "6. exit without freeing: leak report" "6. _exit(3): exit snapshot, status kept" \
  "6. SIGSEGV: crash snapshot, still killed by SIGSEGV" \
  "7. pass-through memory drawn (VMM as NCCL maps it, async, managed, pitch, graph memory)" \
  "9. two ranks on one GPU: cudasnap ranks" "10. cudasnap export: pprof and Perfetto" \
  "12. OOM: cudasnap's answer to a cudaMalloc loop" \
  "12. live view while it runs: cudasnap top --once --json, metrics --once (memory_pressure)" \
  "12. exit snapshot reconciled with the driver (memory_pressure)" "12. cost of a cache growth that asks the driver"; do
  grep -qF "| $row | PASS |" "$report" || fail "the dry run's report has no PASS for '$row'"
done
# check 12's PyTorch parts need a GPU: skipped with that reason, not left out
for row in "12. OOM: PyTorch's message beside cudasnap's answer" \
  "12. live view of PyTorch while it trains: top --once --json, metrics --once" \
  "12. exit snapshot reconciled with the driver (PyTorch)"; do
  grep -qF "| $row | SKIP | no GPU (dry run) |" "$report" || fail "the dry run's report does not skip '$row' for want of a GPU"
done
# the reconciliation is reported with its numbers, not only a verdict
grep -F "| 12. exit snapshot reconciled with the driver (memory_pressure) | PASS |" "$report" | grep -q 'driver_used=[0-9]* .*remainder=' ||
  fail "the reconciliation's row has no driver_used and remainder figures"
grep -q '^complete' "$report" || fail "the benchmark's dry run did not complete (report: $(grep -A2 '^## GPU benchmark' "$report" | tail -n1))"
grep -q '^BENCH gpu_alloc_idle_same_cudasnap_sync ' "$out/bench.txt" || fail "no benchmark line in bench.txt"
files=$(find "$out" -type f | wc -l)
((files <= 8)) || fail "run.sh wrote $files files; the GPU machine hands back 8"
deep=$(find "$out" -mindepth 3 -type f | wc -l)
((deep == 0)) || fail "run.sh wrote files more than two folders deep"
odd=$(find "$out" -mindepth 1 | sed "s|^$out/||" | grep -v '^[A-Za-z0-9._/-]*$' || true)
[[ -z $odd ]] || fail "names the GPU machine does not hand back: $odd"
echo "dry run from $moved: $(grep -c '| PASS |' "$report") PASS, $(grep -c '| SKIP |' "$report") SKIP; $files files"

# after a fix, --only reruns a few checks and leaves the rest (and the benchmark) out
(cd "$tmp" && bash "$moved/run.sh" --dry-run --only 6 "$tmp/only" >"$tmp/only.log" 2>&1) ||
  { tail -n 20 "$tmp/only.log" >&2; fail "run.sh --dry-run --only 6 failed"; }
grep -qF "| 6. fork after CUDA init | PASS |" "$tmp/only/report.md" || fail "--only 6 did not run check 6"
grep -qF "| 7. pass-through memory drawn (VMM as NCCL maps it, async, managed, pitch, graph memory) | SKIP | not selected (--only 6) |" \
  "$tmp/only/report.md" || fail "--only 6 ran check 7"
[[ ! -e $tmp/only/bench.txt ]] || fail "--only 6 ran the benchmark"
rc=0
bash "$moved/run.sh" --only 4,x "$tmp/bad" >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "run.sh --only 4,x is not refused with status 2 (status $rc)"

# ---- which copies the loader takes --------------------------------------------------------------
# loaded FILE-PREFIX SONAME: the file the loader initialized SONAME from (LD_DEBUG=libs output)
loaded() {
  local p
  p=$(cat "$1".* 2>/dev/null | sed -n "s|.*calling init: \(.*/$2\)\$|\1|p")
  p=${p%%$'\n'*}
  [[ -n $p ]] && realpath "$p"
}
snapdir=$tmp/snaps
mkdir -p "$snapdir"
env LD_PRELOAD="$moved/lib/libcudasnap.so" LD_LIBRARY_PATH="$moved/dry/fakes" CUDASNAP_STACKS=native \
  CUDASNAP_OUTPUT="$snapdir/leak-%p.json" LD_DEBUG=libs LD_DEBUG_OUTPUT="$tmp/ld-leak" \
  "$moved/dry/leak" >"$tmp/leak.out" 2>"$tmp/leak.err" || fail "the bundle's leak program failed ($(tail -n1 "$tmp/leak.err"))"
grep -q 'gc_leaky_site' "$tmp/leak.err" || fail "the leak report names no gc_leaky_site: no stacks or no symbols"
for so in libunwind.so.8 libdw.so.1 libelf.so.1; do
  p=$(loaded "$tmp/ld-leak" "$so")
  [[ $p == "$moved/lib/$so" ]] || fail "under the preload $so came from '${p:-nowhere}', not $moved/lib"
done
snap=$(compgen -G "$snapdir/leak-*.json" | head -n1 || true)
[[ -n $snap ]] || fail "no snapshot from the leak program"
LD_DEBUG=libs LD_DEBUG_OUTPUT="$tmp/ld-tool" "$moved/bin/cudasnap" check "$snap" >/dev/null 2>&1 ||
  fail "the bundle's cudasnap check rejects the bundle's own snapshot"
p=$(loaded "$tmp/ld-tool" libcjson.so.1)
[[ $p == "$moved/lib/libcjson.so.1" ]] || fail "the tool's libcjson.so.1 came from '${p:-nowhere}', not $moved/lib"
echo "loader: libunwind, libdw, libelf and libcjson come from the bundle"
echo "bundle ok"
