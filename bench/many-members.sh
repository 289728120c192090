#!/usr/bin/env bash
# Archives of many tiny members: first mount, index size, second mount, a cold `find` and a
# second `find` on the same mount, a cold `du -s` on a mount of its own, a cold random lookup,
# for GNU tars of 10k, 100k and 1M members (one data block each, in folders of 1000; a count
# ending in "w", e.g. 100000w, puts them all in one folder), made by Python's tarfile into DIR.
# With ratarmount (shared/bench/build-peers.sh) and the extracted tree for the 100k cases.  One
# run, cold page cache (root: drops it) before every step.
#   bench/many-members.sh [DIR]        (default /var/tmp/tarseek-many; COUNTS="10000 100000w")
#   TARSEEK=path/to/tarseek: another build of the daemon (e.g. one from before a change)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/var/tmp/tarseek-many}
build=${BUILD:-build}
tarseek=${TARSEEK:-$PWD/$build/fs/tarseek}
ratarmount=${RATARMOUNT:-/opt/peers/bin/ratarmount}
counts=${COUNTS:-10000 100000 100000w 1000000}
ninja -C "$build" >/dev/null
mkdir -p "$dir"
mnt=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rmdir "$mnt"' EXIT
now() { date +%s.%N; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
since() { echo "$(now) - $1" | bc; }

# the member name of number K: in folders of 1000, or all in one ("w" counts)
name_of() { # N(w) -> a Python expression of k
  case $1 in *w) echo '"w/f%07d" % k' ;; *) echo '"d%04d/f%07d" % (k // 1000, k)' ;; esac
}

make_tar() { # N(w) PATH
  /usr/bin/python3 - "${1%w}" "$2" "$(name_of "$1")" <<'EOF'
import io, sys, tarfile
n, path, expr = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with tarfile.open(path + ".part", "w", format=tarfile.GNU_FORMAT) as t:
    data = b"x" * 100
    for k in range(n):
        ti = tarfile.TarInfo(eval(expr))
        ti.size, ti.mtime = len(data), 1700000000
        t.addfile(ti, io.BytesIO(data))
import os
os.rename(path + ".part", path)
EOF
}

# a cold lookup: os.stat of 20 random members by one Python process, each after dropping the
# page cache (so the index pages come from the disk, not the stat program's); ms, median
lookups() { # MNT N(w)
  /usr/bin/python3 - "$1" "${2%w}" "$(name_of "$2")" <<'EOF'
import os, random, statistics, sys, time
mnt, n, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ts = []
for _ in range(20):
    k = random.randrange(n)
    p = os.path.join(mnt, eval(expr))
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
    t0 = time.monotonic()
    os.stat(p)
    ts.append((time.monotonic() - t0) * 1000)
print("%.2f" % statistics.median(ts))
EOF
}

printf '%-9s %-11s %9s %9s %9s %10s %9s %9s %9s %9s\n' members tool "1st (s)" "index" "2nd (s)" \
  "find (s)" entries "find2 (s)" "du (s)" "lookup"
for n in $counts; do
  tar=$dir/m$n.tar
  [ -f "$tar" ] || make_tar "$n" "$tar"
  idx=$dir/m$n.index.sqlite
  rm -f "$idx"
  cold; t=$(now); "$tarseek" -q --index-file "$idx" "$tar" "$mnt"; first=$(since "$t")
  fusermount3 -u "$mnt"
  cold; t=$(now); "$tarseek" -q --index-file "$idx" "$tar" "$mnt"; second=$(since "$t")
  t=$(now); entries=$(find "$mnt" | wc -l); f1=$(since "$t") # right after the cold mount
  t=$(now); find "$mnt" > /dev/null; f2=$(since "$t")
  fusermount3 -u "$mnt"
  cold; "$tarseek" -q --index-file "$idx" "$tar" "$mnt"
  t=$(now); du -s "$mnt" > /dev/null; du=$(since "$t")
  fusermount3 -u "$mnt"
  "$tarseek" -q --no-prefetch --index-file "$idx" "$tar" "$mnt"
  lk=$(lookups "$mnt" "$n")
  fusermount3 -u "$mnt"
  printf '%-9s %-11s %9.2f %8.1fM %9.3f %10.2f %9s %9.3f %9.3f %7s ms\n' "$n" tarseek "$first" \
    "$(echo "$(stat -c %s "$idx") / 1048576" | bc -l)" "$second" "$f1" "$entries" "$f2" "$du" "$lk"
  if [ "$n" = 100000 ] && [ -x "$ratarmount" ]; then
    ridx=$dir/m$n.ratarmount.sqlite
    rm -f "$ridx"
    cold; t=$(now); "$ratarmount" --index-file "$ridx" "$tar" "$mnt" > /dev/null; first=$(since "$t")
    fusermount3 -u "$mnt"
    cold; t=$(now); "$ratarmount" --index-file "$ridx" "$tar" "$mnt" > /dev/null; second=$(since "$t")
    t=$(now); entries=$(find "$mnt" | wc -l); f1=$(since "$t")
    t=$(now); find "$mnt" > /dev/null; f2=$(since "$t")
    fusermount3 -u "$mnt"
    printf '%-9s %-11s %9.2f %8.1fM %9.3f %10.2f %9s %9.3f\n' "$n" ratarmount "$first" \
      "$(echo "$(stat -c %s "$ridx") / 1048576" | bc -l)" "$second" "$f1" "$entries" "$f2"
  fi
  if [ "${n%w}" = 100000 ]; then
    ex=$dir/extracted-$n
    [ -d "$ex" ] || { mkdir -p "$ex.part" && tar -xf "$tar" -C "$ex.part" && mv "$ex.part" "$ex"; }
    cold; t=$(now); entries=$(find "$ex" | wc -l); f1=$(since "$t")
    t=$(now); find "$ex" > /dev/null; f2=$(since "$t")
    cold; t=$(now); du -s "$ex" > /dev/null; du=$(since "$t")
    printf '%-9s %-11s %9s %9s %9s %10.2f %9s %9.3f %9.3f\n' "$n" extracted - - - "$f1" "$entries" \
      "$f2" "$du"
  fi
done
