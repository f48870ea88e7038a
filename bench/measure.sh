# Sourced by the benchmarks that time whole commands (read.sh, ranks.sh): `measure NAME CMD...`
# runs CMD under GNU time and prints `BENCH NAME <seconds> s` and `BENCH NAME_rss <MiB> MiB`;
# last_secs keeps the seconds. A command that fails is reported through the caller's `log` (its
# last stderr line) and gets no figure. Needs $tmp, a scratch directory.
measure() {
  local name=$1
  shift
  if ! /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"; then
    log "$name failed: $(tail -n1 "$tmp/err")"
    return 1
  fi
  local secs kib
  read -r secs kib <"$tmp/time"
  last_secs=$secs
  printf 'BENCH %s %s s\n' "$name" "$secs"
  printf 'BENCH %s_rss %d MiB\n' "$name" $(((kib + 512) / 1024))
}
