# shellcheck shell=bash
# Sourced by the bench/ scripts that keep a run's raw output beside a perf page.
# run_header "COMMAND": the lines that name the run (command, build commit, CPU and its load, date), for the log's top.
# keep_gz SRC DEST: SRC gzip-compressed to DEST through a temporary name, so DEST is never left half-written.
run_header() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  echo "command: $1"
  echo "build: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo 'no git commit')$(git -C "$root" diff --quiet HEAD \
    2>/dev/null || echo ' + uncommitted changes')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
}

keep_gz() {
  mkdir -p "$(dirname "$2")" || { echo "cannot create the folder of '$2'" >&2; return 1; }
  gzip -9 < "$1" > "$2.tmp" && mv "$2.tmp" "$2" && echo "raw output: $2"
}

# logged_run LOG "COMMAND" FUNCTION: the header, FUNCTION's output and the load average after it, printed and copied to
# LOG; returns FUNCTION's status.
logged_run() {
  local log=$1 text=$2 fn=$3
  {
    run_header "$text"
    "$fn"
    local rc=$?
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    return "$rc"
  } 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}
