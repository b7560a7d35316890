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
# Tab completes, then marks that it is over: the rest is typed only
# then, never as typeahead while the completion runs (zle may cut a
# completion short when keys are waiting)
zpty -w z "_np_tab() { zle complete-word; print -n -- '<ta''b>' }; zle -N _np_tab"
zpty -w z "bindkey '^I' _np_tab; print '<rea''dy>'"
zpty -r z out '*<ready>*' || exit 2
# the line and a Tab; once the completion is over, the line erased and a
# command whose output marks the end: no sleeping, whatever the load
zpty -w -n z "$line"$'\t'
zpty -r z offered '*<tab>*' || exit 3
zpty -w -n z $'\x15'"print '<do''ne>'"$'\n'
zpty -r z out '*<done>*' || exit 4
print -r -- "$offered"
zpty -d z
