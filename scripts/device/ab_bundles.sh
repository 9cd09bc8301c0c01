#!/usr/bin/env bash
# Sourced by the A/B scripts (ab_train.sh, ab_dwconv.sh), with $root set to the repository root.
# ab_prepare NAME A.tar.xz B.tar.xz APP: sets work=/tmp/NAME (emptied) and out=$OUT, archives the work folder
# (without the bundles) as $out/NAME.tgz when the script exits, unpacks the two bundles under $work/a and $work/b,
# checks that each holds bundle/bin/APP and records their commits in $work/commit_a.txt and commit_b.txt.
# ab_run WORK SIDE LIMIT_S command...: the command in SIDE's bundle environment (its libraries first), time-limited.
ab_prepare() {
  local name=$1 app=$4 side archive me
  me=$(basename "$0")
  work=/tmp/$name
  out=${OUT:-$root/.device/out}
  rm -rf "$work"
  mkdir -p "$work/a" "$work/b" "$out"
  # shellcheck disable=SC2064  # expand now: the names are fixed for the script's life
  trap "tar -C /tmp --exclude=$name/a --exclude=$name/b -czf '$out/$name.tgz' $name" EXIT
  for side in a b; do
    archive=$2
    [ "$side" = b ] && archive=$3
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$work/$side" ||
      { echo "$me: cannot unpack $archive" >&2; return 2; }
    [ -x "$work/$side/bundle/bin/$app" ] || { echo "$me: $archive holds no bundle/bin/$app" >&2; return 2; }
    cp "$work/$side/bundle/commit" "$work/commit_$side.txt" 2>/dev/null
  done
  return 0
}

ab_run() {
  local work=$1 side=$2 limit=$3
  shift 3
  (source "$work/$side/bundle/env.sh" && timeout "$limit" "$@")
}
