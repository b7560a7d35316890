# bash completion for nanoprobe(1)                          -*- shell-script -*-
# SPDX-License-Identifier: MIT
#
# Verbs, each verb's options and their values, commands after --, and the
# functions of a file for a probe spec written PATH:PREFIX (what
# `nanoprobe list --names PATH 'PREFIX*'` prints); a spec without PATH
# completes the functions of the program after --, or of -p PID's. Works
# with or without the bash-completion package. tests/cli/test_completion.py
# checks that every option of every verb's --help is offered.

_nanoprobe_verbs="trace count latency run watch list analyze bench help version"

_nanoprobe_options()
{
	local session="-p --pid -d --duration -j --json -o --output --buffer-kb"
	local std="-h --help --version"
	case $1 in
	trace) echo "$session --strategy --no-follow --export-trace $std" ;;
	count) echo "$session --strategy --no-follow -i --interval -n --top $std" ;;
	latency) echo "$session --strategy --no-follow -u --microseconds -m --milliseconds --merge -i --interval -n --top $std" ;;
	watch) echo "$session -i --interval -n --top $std" ;;
	run) echo "-e --program -p --pid -c --command -d --duration -o --output -f --format --strategy --buffer-kb --map-keys --no-follow $std" ;;
	list) echo "-j --json --names $std" ;;
	analyze) echo "-j --json --arch $std" ;;
	bench) echo "-j --json -d --duration --threads --backend --programs $std" ;;
	esac
}

# Options whose value is the next word, and what completes it.
_nanoprobe_value()
{
	case $1 in
	-p | --pid) compgen -W "$(cd /proc 2>/dev/null && echo [0-9]*)" -- "$2" ;;
	-o | --output | --export-trace) compgen -f -- "$2" ;;
	--strategy) compgen -W "auto jump trap" -- "$2" ;;
	-f | --format) compgen -W "text json" -- "$2" ;;
	--arch) compgen -W "x86_64 arm64 riscv64" -- "$2" ;;
	--backend) compgen -W "none kernel trap jump watch bpftrace frida" -- "$2" ;;
	-c | --command) compgen -c -- "$2" ;;
	-d | --duration | -i | --interval | -n | --top | --buffer-kb | --map-keys | --threads | -e | --program) ;;
	*) return 1 ;;
	esac
	return 0
}

# The functions of file $1 whose names start with $2.
_nanoprobe_functions()
{
	local np=${_nanoprobe_cmd:-nanoprobe}
	"$np" list --names -- "$1" "$2*" 2>/dev/null | head -n 2000
}

_nanoprobe()
{
	local line=${COMP_LINE:0:COMP_POINT} cur prev verb="" i w
	# the word being completed, whole: bash splits c:malloc at the ':'
	cur=${line##*[[:space:]]}
	local -a words
	read -r -a words <<<"${line% "$cur"}"
	[[ $line == *[[:space:]] ]] && cur=""
	prev=${words[${#words[@]}-1]}
	_nanoprobe_cmd=${words[0]}
	COMPREPLY=()

	local n=${#words[@]} dashdash=-1 pid="" skip=0 positional=0 first=""
	for ((i = 1; i < n; i++)); do
		w=${words[i]}
		if ((skip)); then
			skip=0
			[[ ${words[i-1]} == -p || ${words[i-1]} == --pid ]] && pid=$w
			continue
		fi
		if [[ -z $verb ]]; then
			verb=$w
			continue
		fi
		if [[ $w == -- ]]; then
			dashdash=$i
			break
		fi
		case $w in
		-p | --pid | -d | --duration | -o | --output | --buffer-kb | --strategy | --export-trace | \
			-i | --interval | -n | --top | -e | --program | -c | --command | -f | --format | \
			--map-keys | --arch | --threads | --backend) skip=1 ;;
		-*) ;;
		*) ((positional++)); [[ -z $first ]] && first=$w ;;
		esac
	done

	if [[ -z $verb ]]; then
		COMPREPLY=($(compgen -W "$_nanoprobe_verbs --help --version" -- "$cur"))
		return 0
	fi
	if ((dashdash >= 0)); then # the command and its arguments
		if ((n - 1 == dashdash)); then
			COMPREPLY=($(compgen -c -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return 0
	fi
	case $verb in
	help)
		COMPREPLY=($(compgen -W "$_nanoprobe_verbs" -- "$cur"))
		return 0
		;;
	version) return 0 ;;
	esac
	if ((skip)) && _nanoprobe_value "$prev" "$cur" >/dev/null; then
		COMPREPLY=($(_nanoprobe_value "$prev" "$cur"))
		return 0
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_nanoprobe_options "$verb")" -- "$cur"))
		return 0
	fi

	local file="" prefix=$cur pre=""
	case $verb in
	trace | count | latency | watch)
		if [[ $cur == *:* ]]; then # PATH:PREFIX
			file=${cur%%:*}
			prefix=${cur#*:}
			pre="$file:"
		elif ((dashdash < 0)); then
			local j
			for ((j = n; j < ${#COMP_WORDS[@]}; j++)); do # a -- CMD after the cursor
				if [[ ${COMP_WORDS[j]} == -- ]]; then
					file=${COMP_WORDS[j+1]}
					break
				fi
			done
			[[ -z $file && -n $pid ]] && file=/proc/$pid/exe
		fi
		;;
	list)
		if ((positional == 1)); then
			file=$first
		else
			COMPREPLY=($(compgen -f -- "$cur"))
			return 0
		fi
		;;
	analyze | run)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0
		;;
	esac
	if [[ -n $file ]]; then
		local IFS=$'\n'
		COMPREPLY=($(_nanoprobe_functions "$file" "$prefix" | sed "s|^|$pre|"))
		# bash completes the part after the last ':' (COMP_WORDBREAKS)
		if [[ $COMP_WORDBREAKS == *:* && $cur == *:* ]]; then
			local strip=${cur%"${cur##*:}"}
			COMPREPLY=("${COMPREPLY[@]#"$strip"}")
		fi
		return 0
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
	return 0
}

complete -F _nanoprobe nanoprobe
