# bash completion for tarseek, tarseek-index, tarseek-bench and tarseek-convert -*- shell-script -*-
#
# Installed as share/bash-completion/completions/tarseek, with tarseek-index, tarseek-bench and
# tarseek-convert as links to it: bash-completion loads it the first time one of the four is
# completed, and it registers all four.  Options after '-', the names of tarseek's mount
# options after -o (the last item of a comma-separated list, with paths, users and groups for
# the values that take them), the mount points of tarseek mounts after -u, files and folders
# for the arguments.  The option lists are those of each tool's --help, and the -o names those
# of tarseek(1): tests/mount/test_package.py checks that they agree.

_tarseek_options='-f --foreground -d --debug -s --single-thread --no-union -r --recursive
    --recursion-depth --strip-extension -i --ignore-zeros --oci-raw -o --index-file --index-folder
    -c --recreate-index --password --password-file --gzip-spacing --cache-size --disk-cache-size
    --disk-cache-dir --threads -P --parallelization --prefetch-size --no-prefetch --shadow --shadow-max
    --s3-endpoint --remote-timeout --remote-cache-size
    --remote-disk-cache -u --unmount -q --quiet --log-file -h --help -V --version'

# -o: tarseek's own (every long option with a mount form, '-' written '_'), the owner and
# mode options, and FUSE's.  The generic ones of mount(8) that tarseek accepts and ignores
# (defaults, noauto, nofail, x-*, ...) are left out: they do nothing here.
_tarseek_mount_options='foreground debug single_thread no_union recursive recursion_depth=
    strip_extension ignore_zeros oci_raw index_file= index_folder= recreate_index password=
    password_file= gzip_spacing=
    cache_size= disk_cache_size= disk_cache_dir= threads= parallelization= prefetch_size= no_prefetch shadow= shadow_max=
    s3_endpoint= remote_timeout= remote_cache_size= remote_disk_cache= quiet log_file=
    uid= gid= umask= dmask= fmask=
    allow_other allow_root default_permissions auto_unmount max_read= fsname= subtype= blkdev
    blksize= suid nosuid dev nodev exec noexec async sync dirsync atime noatime'

_tarseek_index_options='-c --check --index-file --index-folder --recreate-index
    --gzip-spacing -r --recursive --recursion-depth --strip-extension -i --ignore-zeros --oci-raw
    --threads --shadow --shadow-max --s3-endpoint --remote-timeout -q --quiet -h --help
    -V --version'

_tarseek_bench_options='-d --dir --mount-cmd --name -l --list -0 --null --unquote -s --sample
    -r --runs --cold --warm --seed -b --baseline --exec --workload --pattern --mount-runs
    --mount-timeout --tarseek --tarseek-opt --index-dir --keep-index --csv --json --svg
    --order --throttle --convert --convert-opt --convert-dir -q --quiet -v --verbose -h --help
    -V --version'

_tarseek_convert_options='-b --block-size -l --level --gzip-members -j --threads --verify
    --check -f --force --index-file --source-index --index-folder --s3-endpoint
    --remote-timeout -q --quiet -h --help
    -V --version'

# Readline replaces only the text after the last character of COMP_WORDBREAKS in the word
# ('=' and ':' by default), while cur holds the whole word: drop that part from the replies.
_tarseek_trim_replies()
{
    local cur=$1 c
    for c in = :; do
        if [[ $cur == *"$c"* && $COMP_WORDBREAKS == *"$c"* ]]; then
            local strip=${cur%"${cur##*"$c"}"}
            COMPREPLY=("${COMPREPLY[@]#"$strip"}")
            cur=${cur#"$strip"}
        fi
    done
}

# The argument of -o: NAME[=VALUE] items separated by commas; the last one is completed.
# $1: the word, $2: what precedes the argument in it (-o in -oNAME,...).
_tarseek_mount_option()
{
    local cur=$1 pre=${2-} head='' item=${1#"${2-}"}
    if [[ $item == *,* ]]; then
        head=${item%,*},
        item=${item##*,}
    fi
    head=$pre$head
    COMPREPLY=()
    if [[ $item == *=* ]]; then
        local name=${item%%=*} value=${item#*=} v
        local -a values=()
        case $name in
            index_file | index-file | password_file | password-file | log_file | log-file)
                compopt -o filenames
                mapfile -t values < <(compgen -f -- "$value")
                ;;
            index_folder | index-folder | disk_cache_dir | disk-cache-dir)
                compopt -o filenames
                mapfile -t values < <(compgen -d -- "$value")
                ;;
            uid) mapfile -t values < <(compgen -u -- "$value") ;;
            gid) mapfile -t values < <(compgen -g -- "$value") ;;
            *) return ;; # a number, a size, a mask or a name
        esac
        for v in "${values[@]}"; do
            COMPREPLY+=("$head$name=$v")
        done
    else
        local n
        for n in $_tarseek_mount_options; do
            [[ $n == "$item"* ]] && COMPREPLY+=("$head$n")
        done
        # a name that takes a value: no space after its '='
        [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace
    fi
    _tarseek_trim_replies "$cur"
}

# The mount points of the tarseek mounts (for -u), else folders.
_tarseek_mounts()
{
    local cur=$1 src mnt type rest
    COMPREPLY=()
    while read -r src mnt type rest; do
        [[ $type == fuse.tarseek ]] || continue
        mnt=$(printf '%b' "$mnt") # /proc/mounts writes a space as \040
        [[ $mnt == "$cur"* ]] && COMPREPLY+=("$mnt")
    done </proc/mounts 2>/dev/null
    [[ ${#COMPREPLY[@]} -gt 0 ]] || _filedir -d
}

_tarseek()
{
    local cur prev words cword split
    _init_completion -s -n =: || return

    case $prev in
        -o)
            _tarseek_mount_option "$cur" ''
            return
            ;;
        --index-file | --password-file | --log-file)
            _filedir
            return
            ;;
        --password)
            return
            ;;
        --index-folder | --disk-cache-dir)
            _filedir -d
            return
            ;;
        --recursion-depth | --gzip-spacing | --cache-size | --disk-cache-size | --threads | \
            --prefetch-size | --s3-endpoint | --remote-timeout | --remote-cache-size | \
            --remote-disk-cache)
            return
            ;;
    esac
    $split && return

    if [[ $cur == -o?* ]]; then # -oNAME,...
        _tarseek_mount_option "$cur" -o
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_tarseek_options" -- "$cur"))
        return
    fi
    local w
    for w in "${words[@]:1:cword-1}"; do
        if [[ $w == -u || $w == --unmount ]]; then
            _tarseek_mounts "$cur"
            return
        fi
    done
    _filedir # the SOURCEs (archives, folders) and the MOUNTPOINT
} &&
    complete -F _tarseek tarseek

_tarseek_index()
{
    local cur prev words cword split
    _init_completion -s || return

    case $prev in
        --index-file)
            _filedir
            return
            ;;
        --index-folder)
            _filedir -d
            return
            ;;
        --gzip-spacing | --recursion-depth | --threads)
            return
            ;;
    esac
    $split && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_tarseek_index_options" -- "$cur"))
        return
    fi
    _filedir # the ARCHIVEs
} &&
    complete -F _tarseek_index tarseek-index

_tarseek_bench()
{
    local cur prev words cword split
    _init_completion -s || return

    case $prev in
        -d | --dir | --index-dir | --convert-dir)
            _filedir -d
            return
            ;;
        -l | --list | --csv | --json | --svg | --tarseek)
            _filedir
            return
            ;;
        --exec)
            COMPREPLY=($(compgen -c -- "$cur"))
            return
            ;;
        --workload)
            COMPREPLY=($(compgen -W 'md5 grep tar' -- "$cur"))
            return
            ;;
        --order)
            COMPREPLY=($(compgen -W 'list archive random' -- "$cur"))
            return
            ;;
        --convert)
            COMPREPLY=($(compgen -W 'zst xz gz lzo tar zst,xz,gz' -- "$cur"))
            return
            ;;
        --mount-cmd | --name | -s | --sample | -r | --runs | --seed | -b | --baseline | \
            --pattern | --mount-runs | --mount-timeout | --tarseek-opt | --throttle | --convert-opt)
            return
            ;;
    esac
    $split && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_tarseek_bench_options" -- "$cur"))
        return
    fi
    _filedir # the ARCHIVEs
} &&
    complete -F _tarseek_bench tarseek-bench

_tarseek_convert()
{
    local cur prev words cword split
    _init_completion -s || return

    case $prev in
        --index-file | --source-index)
            _filedir
            return
            ;;
        --index-folder)
            _filedir -d
            return
            ;;
        -b | --block-size | -l | --level | -j | --threads)
            return
            ;;
    esac
    $split && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_tarseek_convert_options" -- "$cur"))
        return
    fi
    _filedir # SOURCE and OUTPUT
} &&
    complete -F _tarseek_convert tarseek-convert

# ex: filetype=sh
