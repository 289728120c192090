# Shared by the first-mount comparisons (gzip-engines.sh, bzip2-decoders.sh); sourced, not run.
# The caller sets names=(...) and defines step NAME FILE (one timed step: a decompression to
# /dev/null or a first mount and its unmount), then calls rounds ARCHIVE BASE: ROUNDS rounds
# of every step in turn on ARCHIVE (in the page cache for all), every time printed, then each
# step's median and its ratio to BASE's median, so ratios are taken within one run.
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

rounds() {
  local f=$1 base_name=$2 a r n t t0 t1 line base m
  a=$(basename "$f")
  cat "$f" > /dev/null
  declare -A times=()
  for ((r = 0; r < ${ROUNDS:-3}; r++)); do
    line="$a round $((r + 1)):"
    for n in "${names[@]}"; do
      t0=$(now); step "$n" "$f"; t1=$(now)
      t=$(echo "$t1 - $t0" | bc)
      times[$n]+="$t "
      line+=$(printf '  %s %.2f' "$n" "$t")
    done
    echo "$line"
  done
  base=$(printf '%s\n' ${times["$base_name"]} | median)
  for n in "${names[@]}"; do
    m=$(printf '%s\n' ${times[$n]} | median)
    printf '%-18s %-18s median %6.2f s  %5.2f x %s\n' "$a" "$n" "$m" "$(echo "$m / $base" | bc -l)" "$base_name"
  done
}
