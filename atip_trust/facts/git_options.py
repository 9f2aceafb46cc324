"""The options each git sub-command the shell gate admits may be told: git's table of
facts/program_tables.py, kept apart for its size (issue 32, item 3).

Each entry is an option specification in getopt's notation (facts/program_tables.py ``Table.options``):
a word of short letters (``m:`` takes a value, ``u::`` an attached optional one) and ``--name``,
``--name=`` (a value) or ``--name=?`` (an optional, attached value). The lists are git 2.39's, read from
each sub-command's ``git SUB -h`` (parse-options) and, for the revision and diff options that ``-h`` does
not list, from git-log(1), git-diff(1) and git-rev-list(1) (diff-options and rev-list-options). Left out,
so unprovable wherever they are written: every option that runs a program or opens one chosen by
configuration or the environment: an editor (``-e``/``--edit``, ``commit -c``, ``--fixup``,
``rebase -i``, ``branch --edit-description``), a signing or verifying program (``-S``/``--gpg-sign``,
``--show-signature``, ``--verify-signatures``, ``tag -s``/``-u``/``-v``, ``push --signed``), a merge
strategy (``-s``/``--strategy``, a ``git-merge-NAME`` program), an external diff or text conversion
(``--ext-diff``, ``--textconv``, ``cat-file --filters``), a pager (``grep -O``), the remote side's
programs (``--upload-pack``, ``--receive-pack``, ``--exec``, ``archive --remote``), hook templates
(``--template`` of clone and init), configuration for a new repository (``clone -c``), submodules cloned
from a repository's own ``.gitmodules`` (``clone --recurse-submodules``) and ``rebase -x``.
"""

from __future__ import annotations

#: diff-options (git-diff(1)): what diff, log, show and the diff plumbing accept.
DIFF = ("puszWRabwDmct0123rN U:: M:: C:: B:: X:: S: G: O: l: I: "
        "--patch --no-patch --raw --patch-with-raw --patch-with-stat --indent-heuristic --no-indent-heuristic "
        "--minimal --patience --histogram --diff-algorithm= --anchored= --stat=? --stat-width= "
        "--stat-name-width= --stat-graph-width= --stat-count= --compact-summary --numstat --shortstat "
        "--dirstat=? --cumulative --dirstat-by-file=? --summary --name-only --name-status --submodule=? "
        "--color=? --no-color --color-moved=? --no-color-moved --color-moved-ws= --no-color-moved-ws "
        "--word-diff=? --word-diff-regex= --color-words=? --no-renames --rename-empty --no-rename-empty "
        "--check --ws-error-highlight= --full-index --binary --abbrev=? --no-abbrev --break-rewrites=? "
        "--find-renames=? --find-copies=? --find-copies-harder --irreversible-delete --diff-filter= "
        "--find-object= --pickaxe-all --pickaxe-regex --skip-to= --rotate-to= --relative=? --no-relative "
        "--text --ignore-cr-at-eol --ignore-space-at-eol --ignore-space-change --ignore-all-space "
        "--ignore-blank-lines --ignore-matching-lines= --inter-hunk-context= --function-context "
        "--exit-code --quiet --ignore-submodules=? --src-prefix= --dst-prefix= --no-prefix --line-prefix= "
        "--ita-invisible-in-index --ita-visible-in-index --unified=? --output= --output-indicator-new= "
        "--output-indicator-old= --output-indicator-context= --no-ext-diff --no-textconv --orderfile= "
        "--diff-merges= --no-diff-merges --combined-all-paths --cc --remerge-diff --merge-base --base --ours "
        "--theirs --cached --staged --no-index --follow --full-diff")
#: rev-list-options (git-rev-list(1), git-log(1)): commit limiting, ordering and formatting.
REVS = ("iEFPgn: L: "
        "--max-count= --skip= --since= --after= --since-as-filter= --until= --before= --author= --committer= "
        "--grep-reflog= --grep= --all-match --invert-grep --regexp-ignore-case --basic-regexp "
        "--extended-regexp --fixed-strings --perl-regexp --remove-empty --merges --no-merges --min-parents= "
        "--max-parents= --no-min-parents --no-max-parents --first-parent --exclude-first-parent-only --not "
        "--all --branches=? --tags=? --remotes=? --glob= --exclude= --exclude-hidden= --reflog "
        "--alternate-refs --single-worktree --ignore-missing --bisect --stdin --cherry-mark --cherry-pick "
        "--left-only --right-only --cherry --walk-reflogs --merge --boundary --simplify-by-decoration "
        "--show-pulls --full-history --dense --sparse --simplify-merges --ancestry-path=? --date-order "
        "--author-date-order --topo-order --reverse --no-walk=? --do-walk --pretty=? --format= "
        "--abbrev-commit --no-abbrev-commit --oneline --encoding= --expand-tabs=? --no-expand-tabs "
        "--notes=? --no-notes --show-notes=? --standard-notes --no-standard-notes --relative-date --date= "
        "--parents --children --left-right --graph --show-linear-break=? --count --objects --objects-edge "
        "--unpacked --object-names --no-object-names --filter= --in-commit-order --disk-usage=? --timestamp "
        "--header")
#: git-log(1)'s own.
LOG = ("q --quiet --source --use-mailmap --no-use-mailmap --mailmap --no-mailmap --clear-decorations "
       "--decorate-refs= --decorate-refs-exclude= --decorate=? --no-decorate --log-size --early-output")
_HISTORY = f"{REVS} {DIFF} {LOG}"

#: git sub-command -> its options. A sub-command not here (an alias, a ``git-NAME`` extension, and the
#: built-ins that run programs: difftool, mergetool, filter-branch, submodule, bisect, notes...) is
#: unprovable.
GIT_SUBCOMMANDS: dict[str, str] = {
    "add": "nvpfuNA --dry-run --verbose --patch --force --update --renormalize --intent-to-add --all "
           "--ignore-removal --refresh --ignore-errors --ignore-missing --sparse --chmod= "
           "--pathspec-from-file= --pathspec-file-nul",
    "am": "3qsukmcC:p:r --3way --quiet --signoff --utf8 --keep --keep-non-patch --message-id --keep-cr "
          "--no-keep-cr --scissors --quoted-cr= --whitespace= --ignore-space-change --ignore-whitespace "
          "--directory= --exclude= --include= --patch-format= --reject --resolvemsg= --continue --resolved "
          "--skip --abort --quit --show-current-patch=? --allow-empty --committer-date-is-author-date "
          "--ignore-date --rerere-autoupdate --empty=",
    "apply": "p:N3zC:Rvq --exclude= --include= --no-add --stat --numstat --summary --check --index "
             "--intent-to-add --cached --unsafe-paths --apply --3way --build-fake-ancestor= --whitespace= "
             "--ignore-space-change --ignore-whitespace --reverse --unidiff-zero --reject --allow-overlap "
             "--verbose --quiet --inaccurate-eof --recount --directory= --allow-empty",
    "archive": "o:vl0123456789 --format= --prefix= --add-file= --add-virtual-file= --output= "
               "--worktree-attributes --verbose --list",
    "blame": "bfnpctlsewS:C::M::L: --incremental --root --show-stats --progress --score-debug --show-name "
             "--show-number --porcelain --line-porcelain --show-email --ignore-rev= --ignore-revs-file= "
             "--color-lines --color-by-age --minimal --contents= --abbrev=? --date= --reverse --first-parent "
             "--encoding=",
    "branch": "vqt::u:radDmMcClfi --verbose --quiet --track=? --set-upstream-to= --unset-upstream --color=? "
              "--remotes --contains= --no-contains= --abbrev=? --all --delete --move --copy --list "
              "--show-current --create-reflog --force --merged= --no-merged= --column=? --sort= --points-at= "
              "--ignore-case --recurse-submodules --format=",
    "cat-file": "eptsz --allow-unknown-type --use-mailmap --mailmap --batch=? --batch-check=? "
                "--batch-command=? --batch-all-objects --buffer --follow-symlinks --unordered --path=",
    "check-ignore": "qvzn --quiet --verbose --stdin --non-matching --no-index",
    "checkout": "b:B:lqmdt::f23p --guess --overlay --quiet --recurse-submodules=? --progress --merge "
                "--conflict= --detach --track=? --force --orphan= --overwrite-ignore "
                "--ignore-other-worktrees --ours --theirs --patch --ignore-skip-worktree-bits "
                "--pathspec-from-file= --pathspec-file-nul",
    "cherry": "v --abbrev=? --verbose",
    "cherry-pick": "nsm:X:x --quit --continue --abort --skip --cleanup= --no-commit --signoff --mainline= "
                   "--rerere-autoupdate --strategy-option= --ff --allow-empty --allow-empty-message "
                   "--keep-redundant-commits",
    "clean": "qnfdie:xX --quiet --dry-run --force --interactive --exclude=",
    "clone": "vqnlsj:o:b:46 --verbose --quiet --progress --reject-shallow --no-checkout --bare --mirror "
             "--local --no-hardlinks --shared --jobs= --reference= --reference-if-able= --dissociate "
             "--origin= --branch= --depth= --shallow-since= --shallow-exclude= --single-branch --no-tags "
             "--separate-git-dir= --server-option= --ipv4 --ipv6 --filter= --sparse",
    "commit": "qvF:m:C:st:aiponzu:: --quiet --verbose --file= --author= --date= --message= --reuse-message= "
              "--squash= --reset-author --trailer= --signoff --template= --cleanup= --status --all --include "
              "--patch --only --no-verify --dry-run --short --branch --ahead-behind --porcelain --long --null "
              "--amend --no-post-rewrite --untracked-files=? --pathspec-from-file= --pathspec-file-nul "
              "--allow-empty --allow-empty-message --no-edit",
    "count-objects": "vH --verbose --human-readable",
    "describe": "--contains --debug --all --tags --long --first-parent --abbrev=? --exact-match "
                "--candidates= --match= --exclude= --always --dirty=? --broken=?",
    "diff": DIFF,
    "diff-files": DIFF, "diff-index": DIFF, "diff-tree": f"{DIFF} --stdin --root --merge-base --pretty=? "
                                                          "--format= --always --no-commit-id --encoding=",
    "fetch": "vqafmtnj:pPkuo:46 --verbose --quiet --all --set-upstream --append --atomic --force --multiple "
             "--tags --jobs= --prefetch --prune --prune-tags --recurse-submodules=? --dry-run "
             "--write-fetch-head --keep --update-head-ok --progress --depth= --shallow-since= "
             "--shallow-exclude= --deepen= --unshallow --refetch --update-shallow --refmap= --server-option= "
             "--ipv4 --ipv6 --negotiation-tip= --negotiate-only --filter= --auto-maintenance --auto-gc "
             "--show-forced-updates --write-commit-graph --stdin",
    "for-each-ref": "sp --shell --perl --python --tcl --count= --format= --color=? --sort= --points-at= "
                    "--merged= --no-merged= --contains= --no-contains= --ignore-case",
    "format-patch": f"{REVS} {DIFF} nNkv:o:q --numbered --no-numbered --signoff --stdout --cover-letter "
                    "--numbered-files --suffix= --start-number= --reroll-count= --filename-max-length= "
                    "--rfc --cover-from-description= --subject-prefix= --output-directory= --keep-subject "
                    "--no-binary --zero-commit --ignore-if-in-upstream --no-stat --add-header= --to= --cc= "
                    "--from=? --in-reply-to= --attach=? --inline=? --thread=? --signature= --base= "
                    "--signature-file= --progress --interdiff= --range-diff= --creation-factor= "
                    "--force-in-body-from",
    "fsck": "v --verbose --unreachable --dangling --tags --root --cache --reflogs --full --connectivity-only "
            "--strict --lost-found --progress --name-objects",
    "gc": "q --quiet --prune=? --cruft --aggressive --auto --force --keep-largest-pack",
    "grep": "viwaIrEGFPnhHlLzocC:B:A:pWf:e:qm: --cached --no-index --untracked --exclude-standard "
            "--recurse-submodules --invert-match --ignore-case --word-regexp --text --recursive --max-depth= "
            "--extended-regexp --basic-regexp --fixed-strings --perl-regexp --line-number --column "
            "--full-name --files-with-matches --name-only --files-without-match --null --only-matching "
            "--count --color=? --break --heading --context= --before-context= --after-context= --threads= "
            "--show-function --function-context --and --or --not --quiet --all-match --max-count= "
            "--no-textconv",
    "init": "qb: --bare --shared=? --quiet --separate-git-dir= --initial-branch= --object-format=",
    "log": _HISTORY,
    "ls-files": "ztvfcdmoiskux:X: --cached --deleted --modified --others --ignored --stage --killed "
                "--directory --eol --empty-directory --unmerged --resolve-undo --exclude= --exclude-from= "
                "--exclude-per-directory= --exclude-standard --full-name --recurse-submodules "
                "--error-unmatch --with-tree= --abbrev=? --debug --deduplicate --sparse --format=",
    "ls-remote": "qtho: --quiet --tags --heads --refs --get-url --sort= --exit-code --symref --server-option=",
    "ls-tree": "drtzl --long --name-only --name-status --object-only --full-name --full-tree --format= "
               "--abbrev=?",
    "merge": "nm:F:vqX: --stat --summary --log=? --squash --commit --cleanup= --ff --ff-only "
             "--rerere-autoupdate --strategy-option= --message= --file= --into-name= --verbose --quiet --abort "
             "--quit --continue --allow-unrelated-histories --progress --autostash --overwrite-ignore "
             "--signoff --no-verify --no-edit",
    "merge-base": "a --all --octopus --independent --is-ancestor --fork-point",
    "mv": "vnfk --verbose --dry-run --force --sparse",
    "name-rev": "--name-only --tags --refs= --exclude= --all --stdin --annotate-stdin --undefined --always",
    "pull": "vqrnX:aftpj::ko:46 --verbose --quiet --progress --recurse-submodules=? --rebase --stat --log=? "
            "--signoff=? --squash --commit --cleanup= --ff --ff-only --verify --autostash --strategy-option= "
            "--allow-unrelated-histories --all --append --force --tags --prune --jobs=? --dry-run --keep "
            "--depth= --shallow-since= --shallow-exclude= --deepen= --unshallow --update-shallow --refmap= "
            "--server-option= --ipv4 --ipv6 --negotiation-tip= --show-forced-updates --set-upstream --no-edit",
    "push": "vqdnfuo:46 --verbose --quiet --repo= --all --mirror --delete --tags --dry-run --porcelain --force "
            "--force-with-lease=? --force-if-includes --recurse-submodules= --thin --set-upstream --progress "
            "--prune --no-verify --follow-tags --atomic --push-option= --ipv4 --ipv6 --branches",
    "range-diff": f"{DIFF} --creation-factor= --no-dual-color --notes=? --left-only --right-only",
    "rebase": "qvnC:fmX: --onto= --keep-base --no-verify --quiet --verbose --no-stat --stat --signoff "
              "--committer-date-is-author-date --reset-author-date --ignore-whitespace --whitespace= "
              "--force-rebase --no-ff --continue --skip --abort --quit --show-current-patch --apply --merge "
              "--rerere-autoupdate --empty= --autostash --fork-point --strategy-option= --root "
              "--reapply-cherry-picks --update-refs",
    "reflog": f"{_HISTORY} --expire= --expire-unreachable= --rewrite --updateref --stale-fix --dry-run "
              "--verbose",
    "remote": "vt:fm:pnad --verbose --tags --no-tags --mirror=? --push --add --delete --all --dry-run --auto "
              "--prune --progress",
    "reset": "qpN --quiet --no-refresh --mixed --soft --hard --merge --keep --recurse-submodules=? --patch "
             "--intent-to-add --pathspec-from-file= --pathspec-file-nul",
    "restore": "s:SWqm23p --source= --staged --worktree --ignore-unmerged --overlay --quiet "
               "--recurse-submodules=? --progress --merge --conflict= --ours --theirs --patch "
               "--ignore-skip-worktree-bits --pathspec-from-file= --pathspec-file-nul",
    "rev-list": f"{REVS} --quiet --max-age= --min-age= --bisect-vars --bisect-all --abbrev=?",
    "rev-parse": "q --verify --quiet --short=? --abbrev-ref=? --symbolic --symbolic-full-name --show-toplevel "
                 "--show-prefix --show-cdup --show-superproject-working-tree --show-ref-format --git-dir "
                 "--git-common-dir --absolute-git-dir --is-inside-git-dir --is-inside-work-tree "
                 "--is-bare-repository --is-shallow-repository --shared-index-path --show-object-format=? "
                 "--git-path= --resolve-git-dir= --local-env-vars --all --branches=? --tags=? --remotes=? "
                 "--glob=? --exclude=? --disambiguate=? --default= --prefix= --revs-only --no-revs --flags "
                 "--no-flags --sq --sq-quote --not --since=? --after=? --until=? --before=? --path-format=?",
    "revert": "nsm:X: --quit --continue --abort --skip --cleanup= --no-commit --signoff --mainline= "
              "--rerere-autoupdate --strategy-option= --reference --no-edit",
    "rm": "nqfr --dry-run --quiet --cached --force --ignore-unmatch --sparse --pathspec-from-file= "
          "--pathspec-file-nul",
    "shortlog": f"{REVS} cnsew:: --committer --numbered --summary --email --group=",
    "show": _HISTORY,
    "show-branch": "ar --all --remotes --topo-order --date-order --current --color=? --no-color --more=? "
                   "--list --merge-base --independent --no-name --sha1-name --sparse --reflog=?",
    "show-ref": "ds::q --tags --heads --verify --head --dereference --hash=? --abbrev=? --quiet "
                "--exclude-existing=?",
    "stash": f"{_HISTORY} pSkqum: --patch --staged --keep-index --no-keep-index --quiet --include-untracked "
             "--only-untracked --all --message= --index --pathspec-from-file= --pathspec-file-nul",
    "status": "vsbzu::M:: --verbose --short --branch --show-stash --ahead-behind --porcelain=? --long --null "
              "--untracked-files=? --ignored=? --ignore-submodules=? --column=? --no-renames --find-renames=?",
    "switch": "c:C:qmdt::f --create= --force-create= --guess --discard-changes --quiet --recurse-submodules=? "
              "--progress --merge --conflict= --detach --track=? --force --orphan= --overwrite-ignore "
              "--ignore-other-worktrees",
    "tag": "ln::dam:F:fi --list --delete --annotate --message= --file= --cleanup= --force --create-reflog "
           "--column=? --contains= --no-contains= --merged= --no-merged= --sort= --points-at= --format= "
           "--color=? --ignore-case",
    "version": "--build-options",
    "whatchanged": _HISTORY,
    # Plumbing agents reach for (git SUB -h); update-index --fsmonitor, commit-tree -S and replace --edit
    # are left out with the rest.
    "annotate": "bfnpctlsewS:C::M::L: --incremental --root --show-stats --progress --score-debug --show-name "
                "--show-number --porcelain --line-porcelain --show-email --ignore-rev= --ignore-revs-file= "
                "--color-lines --color-by-age --minimal --contents= --abbrev=?",
    "check-mailmap": "--stdin",
    "check-ref-format": "--branch --normalize --allow-onelevel --no-allow-onelevel --refspec-pattern",
    "checkout-index": "afqnuz --all --ignore-skip-worktree-bits --force --quiet --no-create --index --stdin "
                      "--temp --prefix= --stage=",
    "commit-tree": "p:m:F:",
    "hash-object": "t:w --stdin --stdin-paths --no-filters --literally --path=",
    "merge-file": "pqL: --stdout --diff3 --zdiff3 --ours --theirs --union --marker-size= --quiet",
    "mktree": "z --missing --batch",
    "prune": "nv --dry-run --verbose --progress --expire= --exclude-promisor-objects",
    "read-tree": "vmuinq --index-output= --empty --verbose --trivial --aggressive --reset --prefix= "
                 "--exclude-per-directory= --dry-run --no-sparse-checkout --recurse-submodules=? --quiet",
    "repack": "aAdfFnqlbikg:m --cruft --cruft-expiration= --quiet --local --write-bitmap-index --delta-islands "
              "--unpack-unreachable= --keep-unreachable --window= --window-memory= --depth= --threads= "
              "--max-pack-size= --pack-kept-objects --keep-pack= --geometric= --write-midx",
    "sparse-checkout": "--cone --no-cone --sparse-index --no-sparse-index --stdin --skip-checks",
    "stripspace": "sc --strip-comments --comment-lines",
    "symbolic-ref": "qdm: --quiet --delete --short --recurse --no-recurse",
    "update-index": "qzg --ignore-submodules --add --replace --remove --unmerged --refresh --really-refresh "
                    "--cacheinfo= --chmod= --assume-unchanged --no-assume-unchanged --skip-worktree "
                    "--no-skip-worktree --ignore-skip-worktree-entries --info-only --force-remove --stdin "
                    "--index-info --unresolve --again --ignore-missing --verbose --clear-resolve-undo "
                    "--index-version= --split-index --no-split-index --untracked-cache --no-untracked-cache "
                    "--force-write-index",
    "update-ref": "m:dz --no-deref --stdin --create-reflog",
    "var": "l",
    "verify-pack": "vs --verbose --stat-only --object-format=",
    "worktree": "fdqb:B:nvz --detach --checkout --lock --reason= --orphan --porcelain --expire= --force "
                "--quiet --track --guess-remote",
}

#: ``git config`` (also in GIT_SUBCOMMANDS): reading, and setting a key that runs nothing (runners.safe_git_key; any other key,
#: and ``--edit``, ``--rename-section`` or a key not known before the shell runs, are unprovable).
GIT_CONFIG = ("lz --global --system --local --worktree --get --get-all --get-regexp --get-urlmatch "
              "--replace-all --add --unset --unset-all --remove-section --list --fixed-value --type= --bool "
              "--int --bool-or-int --bool-or-str --path --expiry-date --null --name-only --includes "
              "--no-includes --show-origin --show-scope --default= --get-color --get-colorbool")
#: ``git config`` options after which its operands name no key it sets.
GIT_CONFIG_READS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--unset",
                    "--unset-all", "--remove-section", "--get-color", "--get-colorbool")

GIT_SUBCOMMANDS["config"] = GIT_CONFIG

__all__ = ["DIFF", "GIT_CONFIG", "GIT_CONFIG_READS", "GIT_SUBCOMMANDS", "LOG", "REVS"]
