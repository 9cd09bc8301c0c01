# shellcheck shell=bash
# Sourced by the bench/ scripts that keep a run's raw log: run_header "COMMAND" prints the lines that name the run
# (command, build commit, CPU and its load) at the top of the log.
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
