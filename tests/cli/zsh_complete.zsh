# SPDX-License-Identifier: MIT
# What zsh's completion offers for a command line, as a user pressing Tab
# would get it: an interactive zsh in a pseudo-terminal (zpty), compinit
# with the completion folder first on $fpath, and compadd wrapped so that
# every match it is given is printed as <m>MATCH</m>. The markers are
# written split ("<""m>") so that the terminal's echo of what is typed
# never looks like them.
# Usage: zsh -f zsh_complete.zsh COMPLETION_DIR 'LINE'
zmodload zsh/zpty || exit 1
dir=$1 line=$2
zpty z zsh -f -i
zpty -w z "PS1='' PROMPT='' RPROMPT=''"
zpty -w z "fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'compadd () { local -a __hits; builtin compadd -O __hits "$@"; (( $#__hits )) && print -rl -- "<""m>"${^__hits}"</""m>"; builtin compadd "$@" >/dev/null 2>&1 }'
zpty -w z "bindkey '^I' complete-word; print '<rea''dy>'"
zpty -r z out '*<ready>*' || exit 2
# the line and a Tab, then (zle takes keys in order, so once the
# completion is over) the line erased and a command whose output marks the
# end: no sleeping, whatever the machine's load
zpty -w -n z "$line"$'\t\x15'"print '<do''ne>'"$'\n'
zpty -r z out '*<done>*' || exit 3
print -r -- "$out"
zpty -d z
