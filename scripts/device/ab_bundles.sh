#!/usr/bin/env bash
# Sourced by the A/B scripts (ab_train.sh, ab_dwconv.sh). ab_unpack WORK A.tar.xz B.tar.xz APP unpacks the two
# bundles under WORK/a and WORK/b, checks that each holds bundle/bin/APP and records their commits in
# WORK/commit_a.txt and WORK/commit_b.txt. ab_run WORK SIDE LIMIT_S command... runs the command in SIDE's bundle
# environment (its libraries first) under a time limit.
ab_unpack() {
  local work=$1 app=$4 side archive me
  me=$(basename "$0")
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
