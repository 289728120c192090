#!/usr/bin/env bash
# Cold tree walks over a mount against the extracted tree, in rounds: per round and walker
# (`find`, `du -s`), the page cache is dropped, the archive mounted (its index already built),
# the walk timed alone, the mount undone; the extracted tree the same way.  Medians and their
# ratios to the extracted tree's, all taken in the same run.
#   bench/tree-walks.sh TAR EXTRACTED_DIR        (ROUNDS=5)
#   TARSEEK_BEFORE=path/to/tarseek: also a build from before a change;
#   RATARMOUNT=path (default /opt/peers/bin/ratarmount, used if present)
set -euo pipefail
cd "$(dirname "$0")/.."
tar=$1 ex=$2
tarseek=$PWD/${BUILD:-build}/fs/tarseek
ratarmount=${RATARMOUNT:-/opt/peers/bin/ratarmount}
mnt=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rmdir "$mnt"' EXIT
. bench/rounds.sh # now, median
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
idx=$(mktemp -u /var/tmp/tree-walks-XXXXXX).index.sqlite
ridx=${idx%.index.sqlite}.ratarmount.sqlite
"$tarseek" -q --index-file "$idx" "$tar" "$mnt" && fusermount3 -u "$mnt"
tools=(extracted tarseek)
[ -n "${TARSEEK_BEFORE:-}" ] && tools+=(before)
if [ -x "$ratarmount" ]; then
  "$ratarmount" --index-file "$ridx" "$tar" "$mnt" > /dev/null && fusermount3 -u "$mnt"
  tools+=(ratarmount)
fi

# walk TOOL CMD: prints the seconds CMD takes over TOOL's tree, cold
walk() {
  local root=$mnt t0 t1
  cold
  case $1 in
    extracted) root=$ex ;;
    tarseek) "$tarseek" -q --index-file "$idx" "$tar" "$mnt" ;;
    before) "$TARSEEK_BEFORE" -q --index-file "$idx" "$tar" "$mnt" ;;
    ratarmount) "$ratarmount" --index-file "$ridx" "$tar" "$mnt" > /dev/null ;;
  esac
  t0=$(now); $2 "$root" > /dev/null; t1=$(now)
  [ "$1" = extracted ] || fusermount3 -u "$mnt"
  echo "$t1 - $t0" | bc
}

declare -A times=()
for ((r = 1; r <= ${ROUNDS:-5}; r++)); do
  line="round $r:"
  for cmd in find "du -s"; do
    for tool in "${tools[@]}"; do
      t=$(walk "$tool" "$cmd")
      times["$cmd/$tool"]+="$t "
      line+=$(printf '  %s/%s %.3f' "${cmd%% *}" "$tool" "$t")
    done
  done
  echo "$line"
done
for cmd in find "du -s"; do
  base=$(printf '%s\n' ${times["$cmd/extracted"]} | median)
  for tool in "${tools[@]}"; do
    m=$(printf '%s\n' ${times["$cmd/$tool"]} | median)
    printf '%-6s %-11s median %7.3f s  %5.2f x extracted\n' "${cmd%% *}" "$tool" "$m" \
      "$(echo "$m / $base" | bc -l)"
  done
done
rm -f "$idx" "$ridx"
