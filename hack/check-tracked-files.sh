#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Fails, naming each file (one line for each), when git tracks a build output: make lint runs it before golangci-lint.
# A clone carries every version of every tracked file forever, so a binary committed by mistake
# costs every clone its size even after it is removed. What git tracks (its index, not the working
# tree) must hold:
#
#   - no executable file format: ELF, Mach-O (and its universal binaries) or PE/MS-DOS, anywhere,
#     testdata/ included (a test builds what it runs);
#   - no file with the executable bit that does not start with "#!": a script says which interpreter
#     runs it, anything else marked executable is a program or a mistake;
#   - no file over 1 MB (1,000,000 bytes) outside a testdata/ folder, where large inputs of tests
#     belong.
#
#   hack/check-tracked-files.sh [DIR]   (DIR: the repository to check; default the current one)
set -euo pipefail

cd "${1:-.}"

max_size=1000000
failed=0
offend() {
	echo "check-tracked-files: $1" >&2
	failed=1
}

# The first bytes of a tracked blob, as hex. head stops reading early, so git may die of SIGPIPE:
# that is expected, hence the || true under pipefail.
magic() {
	{ git cat-file blob "$1" 2>/dev/null || true; } | head -c "$2" | od -An -tx1 | tr -d ' \n'
}

# One pass over the index: mode, blob, and whether git sees the content as text (i/-text means it
# holds NUL bytes, as every executable format does); the sizes come from one cat-file run.
declare -A size=()
while read -r sha bytes; do
	size[$sha]=$bytes
done < <(git ls-files -s | awk '$1 != "160000" { print $2 }' | git cat-file --batch-check='%(objectname) %(objectsize)')

while IFS=$'\t' read -r -d '' meta eol path; do
	read -r mode sha _ <<<"$meta"
	case $mode in 100644 | 100755) ;; *) continue ;; esac # symbolic links and submodules hold no content here
	kind=""
	if [[ $eol == i/-text* ]]; then
		case $(magic "$sha" 4) in
		7f454c46) kind="an ELF executable or object" ;;
		feedface | feedfacf | cefaedfe | cffaedfe) kind="a Mach-O executable or object" ;;
		cafebabe) kind="a Mach-O universal binary (or a Java class file)" ;;
		4d5a*) kind="a PE (Windows) or MS-DOS executable" ;;
		esac
	fi
	if [ -n "$kind" ]; then
		offend "$path is $kind; build it, do not commit it (git rm --cached '$path', and ignore it)"
	elif [ "$mode" = 100755 ] && [ "$(magic "$sha" 2)" != 2321 ]; then
		offend "$path has the executable bit but no #! line; if it is a script, add one, else git update-index --chmod=-x '$path'"
	elif [ "${size[$sha]:-0}" -gt "$max_size" ] && [[ /$path != */testdata/* ]]; then
		offend "$path is ${size[$sha]} bytes, over 1 MB; large test inputs go under a testdata/ folder, build outputs nowhere in git"
	fi
done < <(git ls-files -s -z --eol)

exit "$failed"
