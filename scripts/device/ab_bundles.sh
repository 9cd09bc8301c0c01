#!/usr/bin/env bash
# Sourced by the A/B scripts (ab_train.sh, ab_dwconv.sh), with $root set to the repository root.
# ab_prepare NAME A.tar.xz B.tar.xz APP: sets work=/tmp/NAME (emptied) and out=$OUT, archives the work folder
# (without the bundles) as $out/NAME.tgz when the script exits, unpacks the two bundles under $work/a and $work/b,
# checks that each holds bundle/bin/APP and records their commits in $work/commit_a.txt and commit_b.txt.
# A may hold only bundle/commit and bundle/lib/libcnn.so (two whole bundles overrun the 64 MiB carry): side a then
# runs B's binaries and other libraries on A's libcnn.so, which is where the kernels and layers live. With B given as
# "-", A is one archive holding both sides, a/bundle and b/bundle (scripts/ab-pack.sh: the two libcnn.so share most
# of their bytes, which one archive stores once).
# ab_start NAME APP MIN_ARGS USAGE ARGS...: the scripts' common start. Exits 2 with USAGE unless ARGS has at least
# MIN_ARGS words and its first is a file and its second a file or "-", then ab_prepare NAME ARGS[1] ARGS[2] APP,
# exports CNN_SOURCE_DIR and enters the repository root.
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
  local unpack='import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])'
  if [ "$3" = - ]; then
    python3 -c "$unpack" "$2" "$work" || { echo "$me: cannot unpack $2" >&2; return 2; }
    set -- "$1" "$2" "$2" "$4"  # both sides' messages name the pair archive
  else
    for side in a b; do
      archive=$2
      [ "$side" = b ] && archive=$3
      python3 -c "$unpack" "$archive" "$work/$side" || { echo "$me: cannot unpack $archive" >&2; return 2; }
    done
  fi
  if [ ! -e "$work/a/bundle/bin" ] && [ -f "$work/a/bundle/lib/libcnn.so" ]; then
    cp -an "$work/b/bundle/." "$work/a/bundle/"  # no clobber: A keeps its libcnn.so and commit
  fi
  for side in a b; do
    archive=$2
    [ "$side" = b ] && archive=$3
    [ -x "$work/$side/bundle/bin/$app" ] || { echo "$me: $archive holds no bundle/bin/$app" >&2; return 2; }
    cp "$work/$side/bundle/commit" "$work/commit_$side.txt" 2>/dev/null
  done
  return 0
}

ab_start() {
  local name=$1 app=$2 min=$3 usage=$4
  shift 4
  if [ $# -lt "$min" ] || [ ! -f "$1" ] || { [ ! -f "$2" ] && [ "$2" != - ]; }; then
    echo "usage: $usage" >&2
    exit 2
  fi
  ab_prepare "$name" "$1" "$2" "$app" || exit 2
  export CNN_SOURCE_DIR=$root OMP_WAIT_POLICY=passive
  cd "$root" || exit 2
}

ab_run() {
  local work=$1 side=$2 limit=$3
  shift 3
  (source "$work/$side/bundle/env.sh" && timeout "$limit" "$@")
}
