//! The read-only allow-list as data: the commands that may run without asking, and for each the options known to be
//! safe (with whether they take a value), how many operands it may have, and its read-only subcommands. Anything not
//! written here asks: an option missing from a list is not read-only, even when it is harmless.
//!
//! Option lists are whitespace-separated: `-l` is a flag; `-n=` takes a value (attached, `-n5` / `--lines=5`, or the
//! next word); `--color?` takes an optional attached value only (`--color`, `--color=auto`); `-#` accepts a number as
//! an option (`head -20`). Long options must be written in full (GNU abbreviations ask).
//!
//! Left out on purpose, because they write files, run programs or read files named inside another file:
//! `sort -o/--output/-T/--compress-program/--files0-from`, `tree -o/-R/-H/--fromfile`, `file -C/-m/-z`, `uniq`'s
//! second operand, `date -s` and operands without `+`, `hostname NAME/-F/-b`, `rg --pre/--pre-glob/-z/--hostname-bin`,
//! `git grep -O`, every git `--output`, `--ext-diff`, `--textconv`, `--show-signature`, git's global `-c`, `-C`,
//! `--config-env`, `--exec-path`, `--git-dir`, `--work-tree`, `-p`, `find -exec/-execdir/-ok/-okdir/-delete/-fprint*
//! /-fls`, jq's `env`, `$ENV`, `import` and file options, and pagers (`less`, `more`, `man`) altogether.
//!
//! Owns the data only; `readonly` applies it.

/// How many operands (non-option words) a command may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operands {
    Any,
    AtMost(usize),
}

/// A condition on (all arguments, operands).
pub type Check = fn(&[&str], &[&str]) -> bool;

/// One allow-listed command (or subcommand).
pub struct Spec {
    pub name: &'static str,
    /// A builtin of `sh`: not looked up on PATH.
    pub builtin: bool,
    /// Safe options, in the syntax described above, as whitespace-separated lists (subcommands share lists).
    pub options: &'static [&'static str],
    pub operands: Operands,
    /// Every argument is an operand (`echo -x` prints `-x`): no option parsing at all.
    pub plain: bool,
    /// Options are whole words after one dash (`find -name`), never clusters of letters.
    pub word_options: bool,
    /// An extra condition on the arguments and operands (`date` only takes `+FORMAT`).
    pub check: Option<Check>,
    /// Read-only subcommands; when there are some, the first operand must be one of them.
    pub subcommands: &'static [Spec],
    /// With subcommands: the command is also read-only without one (`git reflog`).
    pub bare: bool,
}

const fn cmd(name: &'static str, options: &'static [&'static str]) -> Spec {
    Spec {
        name,
        builtin: false,
        options,
        operands: Operands::Any,
        plain: false,
        word_options: false,
        check: None,
        subcommands: &[],
        bare: false,
    }
}

impl Spec {
    const fn builtin(self) -> Self {
        Self { builtin: true, ..self }
    }

    const fn at_most(self, n: usize) -> Self {
        Self { operands: Operands::AtMost(n), ..self }
    }

    const fn plain(self) -> Self {
        Self { plain: true, ..self }
    }

    const fn word_options(self) -> Self {
        Self { word_options: true, ..self }
    }

    const fn check(self, check: Check) -> Self {
        Self { check: Some(check), ..self }
    }

    const fn subcommands(self, subcommands: &'static [Spec], bare: bool) -> Self {
        Self { subcommands, bare, ..self }
    }
}

const HELP: &str = "--help --version";

const LS: &str = "
    -a -A -b -B -c -C -d -f -F -g -G -h -H -i -I= -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t -T= -u -U -v
    -w= -x -X -Z -1 --all --almost-all --author --escape --block-size= --ignore-backups --color? --directory
    --dired --classify? --file-type --format= --full-time --group-directories-first --no-group
    --human-readable --si --dereference-command-line --dereference-command-line-symlink-to-dir --hide=
    --hyperlink? --indicator-style= --inode --ignore= --kibibytes --dereference --numeric-uid-gid --literal
    --hide-control-chars --show-control-chars --quote-name --quoting-style= --reverse --recursive --size
    --sort= --time= --time-style= --tabsize= --width= --context --zero
";

const CAT: &str = "
    -A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank
    --show-tabs --show-nonprinting
";

const HEAD: &str = "
    -n= -c= -q -v -z -# --lines= --bytes= --quiet --silent --verbose --zero-terminated
";

const TAIL: &str = "
    -n= -c= -f -F -q -v -z -s= -# --lines= --bytes= --follow? --retry --pid= --sleep-interval=
    --max-unchanged-stats= --quiet --silent --verbose --zero-terminated
";

const WC: &str = "
    -c -m -l -L -w --bytes --chars --lines --max-line-length --words --files0-from= --total=
";

const FILE: &str = "
    -b -c -d -E -e= -F= -f= -h -i -k -l -L -N -n -p -P= -r -s -0 --brief --checking-printout --debug
    --exclude= --exclude-quiet= --extension --files-from= --separator= --mime --mime-type --mime-encoding
    --apple --keep-going --list --dereference --no-dereference --no-buffer --no-pad --print0 --preserve-date
    --raw --special-files --parameter=
";

const STAT: &str = "-L -f -c= -t --dereference --file-system --format= --printf= --terse --cached=";

const DU: &str = "
    -0 -a -B= -b -c -D -d= -H -h -k -L -l -m -P -S -s -t= -x -X= --null --all --apparent-size --block-size=
    --bytes --total --dereference-args --max-depth= --files0-from= --human-readable --inodes --dereference
    --count-links --no-dereference --separate-dirs --si --summarize --threshold= --time? --time-style=
    --exclude-from= --exclude= --one-file-system
";

const DF: &str = "
    -a -B= -h -H -i -k -l -P -t= -T -x= --all --block-size= --human-readable --si --inodes --local --no-sync
    --output? --portability --print-type --sync --total --type= --exclude-type=
";

const TREE: &str = "
    -a -d -l -f -x -L= -P= -I= -i -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n -A -S -J -X --noreport
    --dirsfirst --du --si --prune --matchdirs --ignore-case --gitignore --charset= --filelimit= --sort=
    --timefmt= --metafirst --info
";

const SORT: &str = "
    -b -C -c -d -f -g -h -i -k= -M -m -n -R -r -s -t= -u -V -z -S= --ignore-leading-blanks --check?
    --dictionary-order --ignore-case --general-numeric-sort --human-numeric-sort --ignore-nonprinting --key=
    --month-sort --merge --numeric-sort --random-sort --reverse --sort= --stable --field-separator= --unique
    --version-sort --zero-terminated --buffer-size= --parallel= --debug 
";

const UNIQ: &str = "
    -c -d -D -f= -i -s= -u -w= -z --count --repeated --all-repeated? --skip-fields= --group? --ignore-case
    --skip-chars= --unique --zero-terminated --check-chars=
";

const CUT: &str = "
    -b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= --complement --only-delimited
    --output-delimiter= --zero-terminated
";

const DIFF: &str = "
    -a -b -B -c -C= -d -e -E -i -I= -n -N -p -q -r -s -S= -t -T -u -U= -w -W= -x= -X= -y -Z --normal --brief
    --report-identical-files --context? --unified? --ed --rcs --side-by-side --width= --left-column
    --suppress-common-lines --show-c-function --show-function-line= --label= --expand-tabs --initial-tab
    --tabsize= --suppress-blank-empty --new-file --unidirectional-new-file --ignore-case
    --ignore-tab-expansion --ignore-trailing-space --ignore-space-change --ignore-all-space
    --ignore-blank-lines --ignore-matching-lines= --text --strip-trailing-cr --recursive --no-dereference
    --exclude= --exclude-from= --starting-file= --from-file= --to-file= --ignore-file-name-case
    --no-ignore-file-name-case --minimal --speed-large-files --horizon-lines= --color?
";

const CMP: &str = "
    -b -i= -l -n= -s --print-bytes --ignore-initial= --verbose --bytes= --quiet --silent
";

const BASENAME: &str = "-a -s= -z --multiple --suffix= --zero";
const DIRNAME: &str = "-z --zero";

const REALPATH: &str = "
    -e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical --quiet
    --relative-to= --relative-base= --strip --no-symlinks --zero
";

const READLINK: &str = "
    -f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing --no-newline
    --quiet --silent --verbose --zero
";

const DATE: &str = "
    -d= -f= -I? -R -r= -u --date= --file= --iso-8601? --rfc-email --rfc-3339= --reference= --utc --universal
    --debug
";

const UNAME: &str = "
    -a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release --kernel-version --machine
    --processor --hardware-platform --operating-system
";

const ID: &str = "-a -Z -g -G -n -r -u -z --context --group --groups --name --real --user --zero";

const HOSTNAME: &str = "
    -a -A -d -f -i -I -s -y --alias --all-fqdns --domain --fqdn --long --ip-address --all-ip-addresses
    --short --yp --nis
";

const NL: &str = "
    -b= -d= -f= -h= -i= -l= -n= -p -s= -v= -w= --body-numbering= --section-delimiter= --footer-numbering=
    --header-numbering= --line-increment= --join-blank-lines= --number-format= --no-renumber
    --number-separator= --starting-line-number= --number-width=
";

const SUM: &str = "
    -b -c -t -z -w --binary --check --tag --text --zero --ignore-missing --quiet --status --strict --warn
";
const B2SUM: &str = "-l= --length=";
const CKSUM: &str = "-a= --algorithm= --base64 --raw --untagged -l= --length= --debug";

const COLUMN: &str = "
    -t -s= -o= -c= -x -n -e -N= -R= -H= -O= -W= -J -l= -L -d -r= -E= -T= --table --separator=
    --output-separator= --output-width= --fillrows --table-columns= --table-right= --table-hide=
    --table-order= --table-wrap= --table-name= --json --keep-empty-lines --table-noheadings
    --table-noextreme= --table-truncate= --tree= --tree-id= --tree-parent= --table-columns-limit=
";

const JQ: &str = "
    -r -j -a -c -n -e -s -S -C -M -R --raw-output --join-output --ascii-output --compact-output --null-input
    --exit-status --slurp --sort-keys --color-output --monochrome-output --raw-input --tab --indent= --seq
    --stream --raw-output0
";

const TR: &str = "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1";
const TAC: &str = "-b -r -s= --before --regex --separator=";
const FOLD: &str = "-b -s -w= --bytes --spaces --width=";
const EXPAND: &str = "-i -t= --initial --tabs= -a --all --first-only";
const PASTE: &str = "-d= -s -z --delimiters= --serial --zero-terminated";
const COMM: &str = "
    -1 -2 -3 -i -z --check-order --nocheck-order --output-delimiter= --total --zero-terminated
";
const JOIN: &str = "
    -a= -e= -i -j= -o= -t= -v= -1= -2= -z --check-order --nocheck-order --header --ignore-case
    --zero-terminated
";
const OD: &str = "
    -A= -j= -N= -S= -t= -v -w? -a -b -c -d -f -i -l -o -s -x --address-radix= --endian= --skip-bytes=
    --read-bytes= --strings? --format= --output-duplicates --width? --traditional
";
const HEXDUMP: &str = "
    -b -c -C -d -o -x -e= -f= -n= -s= -v --canonical --length= --skip= --no-squeezing --format=
    --format-file=
";
const STRINGS: &str = "
    -a -d -f -n= -t= -e= -w -s= -# --all --data --print-file-name --bytes= --radix= --encoding=
    --include-all-whitespace --output-separator=
";
const BASE64: &str = "-d -i -w= --decode --ignore-garbage --wrap=";
const NPROC: &str = "--all --ignore=";
const UPTIME: &str = "-p -s --pretty --since";
const TTY: &str = "-s --silent --quiet";
const LOCALE: &str = "
    -a -m -c -k -v --all-locales --charmaps --category-name --keyword-name --verbose
";
const WHICH: &str = "-a -s";
const TYPE: &str = "-a -f -p -P -t";
const PWD: &str = "-L -P";
const CD: &str = "-L -P";

const GREP: &str = "
    -E -F -G -P -e= -f= -i -y --no-ignore-case -v -w -x -c --color? --colour? -L -l -m= -o -q -s -b -H -h
    --label= -n -T -Z -z -A= -B= -C= -# -a --binary-files= -D= -d= --exclude= --exclude-from= --exclude-dir=
    -I --include= -r -R --line-buffered -U --null-data --null --extended-regexp --fixed-strings
    --basic-regexp --perl-regexp --regexp= --file= --ignore-case --word-regexp --line-regexp --count
    --files-without-match --files-with-matches --max-count= --only-matching --quiet --silent --no-messages
    --byte-offset --with-filename --no-filename --line-number --initial-tab --after-context=
    --before-context= --context= --text --devices= --directories= --recursive --dereference-recursive
    --binary
";

const RG: &str = "
    -e= --regexp= -f= --file= -A= -B= -C= --after-context= --before-context= --context= -a --text -c --count
    --count-matches --color= --colors= --column --no-column -F --fixed-strings -g= --glob= --iglob=
    --glob-case-insensitive -h -H --with-filename -I --no-filename -i --ignore-case -j= --threads= -l
    --files-with-matches --files-without-match -L --follow -m= --max-count= --max-depth= -d= --max-columns=
    -M= --max-filesize= -n --line-number -N --no-line-number -o --only-matching -p --pretty -P --pcre2 -q
    --quiet -r= --replace= -s --case-sensitive -S --smart-case --sort= --sortr= -t= --type= -T= --type-not=
    --type-list --type-add= -u --unrestricted -U --multiline --multiline-dotall -v --invert-match -V -w
    --word-regexp -x --line-regexp -0 --null --null-data --hidden -. --no-hidden --no-ignore --no-ignore-vcs
    --no-ignore-dot --no-ignore-parent --no-ignore-global --no-ignore-exclude --no-ignore-files
    --ignore-file-case-insensitive --heading --no-heading --json --no-messages --no-config --stats --trim
    --vimgrep --passthru --files -b --byte-offset --crlf --encoding= -E= --engine=
    --field-context-separator= --field-match-separator= --context-separator= --no-context-separator
    --line-buffered --block-buffered --binary --no-binary --one-file-system --path-separator= --sort-files
    --include-zero --no-unicode --auto-hybrid-regex --debug --trace --max-columns-preview --ignore-file=
    --no-pcre2-unicode --dfa-size-limit= --regex-size-limit= --mmap --no-mmap
";

const FIND: &str = "
    -H -L -P -D= -O3 -O2 -O1 -O0 -name= -iname= -path= -ipath= -wholename= -iwholename= -regex= -iregex=
    -regextype= -lname= -ilname= -type= -xtype= -maxdepth= -mindepth= -mtime= -mmin= -atime= -amin= -ctime=
    -cmin= -newer= -anewer= -cnewer= -newermt= -newerct= -newerat= -newermm= -used= -size= -empty -user=
    -uid= -group= -gid= -nouser -nogroup -perm= -links= -inum= -samefile= -readable -writable -executable
    -follow -xdev -mount -depth -d -prune -quit -true -false -not -a -o -and -or -print -print0 -printf= -ls
    -noleaf -daystart -ignore_readdir_race -noignore_readdir_race -fstype= -context= -warn -nowarn -help
    -version
";

const GIT_GLOBAL: &str = "
    --no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs
    --icase-pathspecs --no-replace-objects --no-lazy-fetch --no-advice --version
";

const GIT_DIFF: &str = "
    -p -u --patch -s --no-patch -U= --unified= --output-indicator-new= --output-indicator-old=
    --output-indicator-context= --raw --patch-with-raw -t --indent-heuristic --no-indent-heuristic --minimal
    --patience --histogram --anchored= --diff-algorithm= --stat? --compact-summary --numstat --shortstat
    --dirstat? --cumulative --dirstat-by-file? --summary --patch-with-stat -z --name-only --name-status
    --submodule? --color? --no-color --color-moved? --no-color-moved --color-moved-ws= --word-diff?
    --word-diff-regex= --color-words? --no-renames --rename-empty --no-rename-empty --check
    --ws-error-highlight= --full-index --binary --abbrev? -B? --break-rewrites? -M? --find-renames? -C?
    --find-copies? --find-copies-harder -D --irreversible-delete -l= --diff-filter= -S= -G= --find-object=
    --pickaxe-all --pickaxe-regex -R --relative? --no-relative -a --text --ignore-cr-at-eol
    --ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space --ignore-blank-lines -I=
    --ignore-matching-lines= --inter-hunk-context= -W --function-context --exit-code --quiet --no-ext-diff
    --no-textconv --ignore-submodules? --src-prefix= --dst-prefix= --no-prefix --default-prefix
    --line-prefix= --ita-invisible-in-index --ita-visible-in-index --cached --staged --merge-base --no-index
    -0 -1 -2 -3 --base --ours --theirs --stat-width= --stat-name-width= --stat-count= --stat-graph-width=
";

const GIT_LOG: &str = "
    -n= -# --max-count= --skip= --since= --after= --since-as-filter= --until= --before= --author=
    --committer= --grep-reflog= --grep= --all-match --invert-grep -i --regexp-ignore-case --basic-regexp -E
    --extended-regexp -F --fixed-strings -P --perl-regexp --remove-empty --merges --no-merges --min-parents=
    --max-parents= --no-min-parents --no-max-parents --first-parent --exclude-first-parent-only --not --all
    --branches? --tags? --remotes? --glob= --exclude= --reflog --alternate-refs --single-worktree
    --ignore-missing --bisect --cherry-mark --cherry-pick --left-only --right-only --cherry -g
    --walk-reflogs --merge --boundary --simplify-by-decoration --show-pulls --full-history --dense --sparse
    --simplify-merges --ancestry-path? --date-order --author-date-order --topo-order --reverse --no-walk?
    --do-walk --pretty? --format= --abbrev-commit --no-abbrev-commit --oneline --encoding= --expand-tabs?
    --no-expand-tabs --notes? --no-notes --show-notes? --standard-notes --no-standard-notes --relative-date
    --date= --parents --children --left-right --graph --show-linear-break? --decorate? --no-decorate
    --decorate-refs= --decorate-refs-exclude= --clear-decorations --source --use-mailmap --mailmap
    --no-mailmap --no-use-mailmap --full-diff --log-size -L= --follow --no-follow -m -c --cc --dd
    --remerge-diff --diff-merges= --no-diff-merges --combined-all-paths
";

const GIT_REV_LIST: &str = "
    --count --objects --objects-edge --unpacked --object-names --no-object-names --in-commit-order
    --disk-usage? --header --timestamp --max-age= --min-age= --bisect-vars --bisect-all
";

const GIT_STATUS: &str = "
    -s --short -b --branch --show-stash --porcelain? --long -v --verbose -u? --untracked-files?
    --ignore-submodules? --ignored? -z --column? --no-column --ahead-behind --no-ahead-behind --renames
    --no-renames --find-renames?
";

const GIT_REV_PARSE: &str = "
    --abbrev-ref? --short? --verify -q --quiet --symbolic --symbolic-full-name --show-toplevel --show-prefix
    --show-cdup --git-dir --git-common-dir --absolute-git-dir --is-inside-work-tree --is-inside-git-dir
    --is-bare-repository --is-shallow-repository --show-superproject-working-tree --show-object-format?
    --all --branches? --tags? --remotes? --glob= --exclude= --default= --revs-only --no-revs --flags
    --no-flags --sq --sq-quote --not --local-env-vars --path-format= --since= --until= --disambiguate=
    --git-path= --shared-index-path
";

const GIT_LS_FILES: &str = "
    -c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u --unmerged -k --killed -z
    -t -v -f --full-name --recurse-submodules --abbrev? --debug --eol --exclude= -x= --exclude-from= -X=
    --exclude-per-directory= --exclude-standard --error-unmatch --with-tree= --directory
    --no-empty-directory --sparse --format= --deduplicate
";

const GIT_LS_TREE: &str = "
    -d -r -t -l --long -z --name-only --name-status --object-only --full-name --full-tree --abbrev?
    --format=
";

const GIT_BLAME: &str = "
    -b --root --show-stats -L= -l -t -S= --reverse= --first-parent -p --porcelain --line-porcelain
    --incremental --encoding= --contents= --date= --progress --no-progress -M? -C? --ignore-rev=
    --ignore-revs-file= --color-lines --color-by-age -h -c --score-debug -f --show-name -n --show-number -s
    -e --show-email -w --abbrev=
";

const GIT_DESCRIBE: &str = "
    --dirty? --broken? --all --tags --contains --abbrev= --candidates= --exact-match --debug --long --match=
    --exclude= --always --first-parent
";

const GIT_SHORTLOG: &str = "-n --numbered -s --summary -e --email --group= --committer -w?";

const GIT_GREP: &str = "
    -a --text --no-textconv -i --ignore-case -I --max-depth= -r --recursive --no-recursive -w --word-regexp
    -v --invert-match -h -H --full-name -E --extended-regexp -G --basic-regexp -P --perl-regexp -F
    --fixed-strings -n --line-number --column -l --files-with-matches --name-only -L --files-without-match
    -z --null -o --only-matching -c --count --color? --no-color --break --heading -p --show-function -A= -B=
    -C= --after-context= --before-context= --context= -W --function-context -m= --max-count= --threads= -f=
    -e= --and --or --not --all-match -q --quiet --cached --untracked --no-index --exclude-standard
    --no-exclude-standard --recurse-submodules -#
";

const GIT_CAT_FILE: &str = "
    -t -s -e -p --batch? --batch-check? --batch-all-objects --buffer --follow-symlinks --unordered -Z
    --allow-unknown-type --use-mailmap --mailmap --no-mailmap
";

const GIT_MERGE_BASE: &str = "-a --all --octopus --independent --is-ancestor --fork-point";

const GIT_BRANCH: &str = "
    -a --all -r --remotes -v -vv --verbose -l --list --show-current --contains? --no-contains? --merged?
    --no-merged? --points-at= --sort= --format= --color? --no-color --column? --no-column --abbrev=
    --no-abbrev -i --ignore-case --omit-empty
";

const GIT_TAG: &str = "
    -l --list -n? --sort= --format= --contains? --no-contains? --merged? --no-merged? --points-at= --column?
    --no-column -i --ignore-case --color? --omit-empty
";

const GIT_FOR_EACH_REF: &str = "
    --count= --shell --perl --python --tcl --sort= --format= --color? --points-at= --merged? --no-merged?
    --contains? --no-contains? --ignore-case --omit-empty --exclude= --include-root-refs
";

const GIT_SHOW_REF: &str = "
    --head --branches --tags --heads -d --dereference -s --hash? --abbrev? --verify -q --quiet --exists
";

const GIT_NAME_REV: &str = "--tags --refs= --exclude= --all --name-only --no-undefined --always";
const GIT_COUNT_OBJECTS: &str = "
    -v --verbose -H --human-readable
";
const GIT_CHECK_IGNORE: &str = "
    -q --quiet -v --verbose -z -n --non-matching --no-index
";
const GIT_CHECK_ATTR: &str = "-a --all --cached -z --source=";
const GIT_WORKTREE_LIST: &str = "
    --porcelain -v --verbose --expire= -z
";

/// `git branch NAME` and `git tag NAME` create; names are only patterns after `--list`.
fn lists_only(args: &[&str], operands: &[&str]) -> bool {
    operands.is_empty() || args.iter().any(|a| matches!(*a, "-l" | "--list"))
}

/// `date MMDDhhmm` sets the clock; only `+FORMAT` operands print.
fn date_formats_only(_args: &[&str], operands: &[&str]) -> bool {
    operands.iter().all(|a| a.starts_with('+'))
}

/// jq filters can read the environment (`env`, `$ENV`) and load modules from disk (`import`, `include`).
fn jq_filter_is_pure(_args: &[&str], operands: &[&str]) -> bool {
    !operands.iter().any(|a| {
        a.contains("env")
            || a.contains("ENV")
            || a.contains("import")
            || a.contains("include")
            || a.contains("$__")
    })
}

const GIT_SUBCOMMANDS: &[Spec] = &[
    cmd("status", &[GIT_STATUS]),
    cmd("log", &[GIT_LOG, GIT_DIFF]),
    cmd("show", &[GIT_LOG, GIT_DIFF]),
    cmd("whatchanged", &[GIT_LOG, GIT_DIFF]),
    cmd("diff", &[GIT_DIFF]),
    cmd("rev-parse", &[GIT_REV_PARSE]),
    cmd("ls-files", &[GIT_LS_FILES]),
    cmd("ls-tree", &[GIT_LS_TREE]),
    cmd("blame", &[GIT_BLAME]),
    cmd("describe", &[GIT_DESCRIBE]),
    cmd("shortlog", &[GIT_SHORTLOG, GIT_LOG]),
    cmd("grep", &[GIT_GREP]),
    cmd("cat-file", &[GIT_CAT_FILE]),
    cmd("rev-list", &[GIT_REV_LIST, GIT_LOG]),
    cmd("merge-base", &[GIT_MERGE_BASE]),
    cmd("branch", &[GIT_BRANCH]).check(lists_only),
    cmd("tag", &[GIT_TAG]).check(lists_only),
    cmd("remote", &["-v --verbose"]).at_most(0),
    cmd("for-each-ref", &[GIT_FOR_EACH_REF]),
    cmd("show-ref", &[GIT_SHOW_REF]),
    cmd("name-rev", &[GIT_NAME_REV]),
    cmd("count-objects", &[GIT_COUNT_OBJECTS]).at_most(0),
    cmd("check-ignore", &[GIT_CHECK_IGNORE]),
    cmd("check-attr", &[GIT_CHECK_ATTR]),
    cmd("version", &[]).at_most(0),
    cmd("reflog", &[GIT_LOG]).at_most(0).subcommands(&[cmd("show", &[GIT_LOG, GIT_DIFF])], true),
    cmd("stash", &[]).subcommands(&[cmd("list", &[GIT_LOG]).at_most(0), cmd("show", &[GIT_DIFF])], false),
    cmd("worktree", &[]).subcommands(&[cmd("list", &[GIT_WORKTREE_LIST]).at_most(0)], false),
];

/// Every allow-listed command.
pub static COMMANDS: &[Spec] = &[
    cmd("ls", &[LS, HELP]),
    cmd("cat", &[CAT, HELP]),
    cmd("head", &[HEAD, HELP]),
    cmd("tail", &[TAIL, HELP]),
    cmd("wc", &[WC, HELP]),
    cmd("pwd", &[PWD]).builtin().at_most(0),
    cmd("echo", &[]).builtin().plain(),
    cmd("printf", &[]).builtin().plain(),
    cmd("true", &[]).builtin().plain(),
    cmd("false", &[]).builtin().plain(),
    cmd("test", &[]).builtin().plain(),
    cmd("[", &[]).builtin().plain(),
    cmd("cd", &[CD]).builtin().at_most(1),
    cmd("type", &[TYPE]).builtin(),
    cmd("which", &[WHICH]),
    cmd("file", &[FILE, HELP]),
    cmd("stat", &[STAT, HELP]),
    cmd("du", &[DU, HELP]),
    cmd("df", &[DF, HELP]),
    cmd("tree", &[TREE, HELP]),
    cmd("sort", &[SORT, HELP]),
    cmd("uniq", &[UNIQ, HELP]).at_most(1),
    cmd("cut", &[CUT, HELP]),
    cmd("diff", &[DIFF, HELP]),
    cmd("cmp", &[CMP, HELP]).at_most(4),
    cmd("basename", &[BASENAME, HELP]),
    cmd("dirname", &[DIRNAME, HELP]),
    cmd("realpath", &[REALPATH, HELP]),
    cmd("readlink", &[READLINK, HELP]),
    cmd("date", &[DATE, HELP]).check(date_formats_only),
    cmd("uname", &[UNAME, HELP]).at_most(0),
    cmd("whoami", &[HELP]).at_most(0),
    cmd("id", &[ID, HELP]).at_most(1),
    cmd("groups", &[HELP]),
    cmd("hostname", &[HOSTNAME, HELP]).at_most(0),
    cmd("nl", &[NL, HELP]),
    cmd("md5sum", &[SUM, HELP]),
    cmd("sha1sum", &[SUM, HELP]),
    cmd("sha224sum", &[SUM, HELP]),
    cmd("sha256sum", &[SUM, HELP]),
    cmd("sha384sum", &[SUM, HELP]),
    cmd("sha512sum", &[SUM, HELP]),
    cmd("b2sum", &[SUM, B2SUM, HELP]),
    cmd("cksum", &[SUM, CKSUM, HELP]),
    cmd("column", &[COLUMN, HELP]),
    cmd("jq", &[JQ, HELP]).check(jq_filter_is_pure),
    cmd("tr", &[TR, HELP]).at_most(2),
    cmd("rev", &[HELP]),
    cmd("tac", &[TAC, HELP]),
    cmd("fold", &[FOLD, HELP]),
    cmd("expand", &[EXPAND, HELP]),
    cmd("unexpand", &[EXPAND, HELP]),
    cmd("paste", &[PASTE, HELP]),
    cmd("comm", &[COMM, HELP]).at_most(2),
    cmd("join", &[JOIN, HELP]).at_most(2),
    cmd("od", &[OD, HELP]),
    cmd("hexdump", &[HEXDUMP, HELP]),
    cmd("strings", &[STRINGS, HELP]),
    cmd("base64", &[BASE64, HELP]).at_most(1),
    cmd("seq", &[]).plain(),
    cmd("expr", &[]).plain(),
    cmd("nproc", &[NPROC, HELP]).at_most(0),
    cmd("arch", &[HELP]).at_most(0),
    cmd("uptime", &[UPTIME, HELP]).at_most(0),
    cmd("tty", &[TTY, HELP]).at_most(0),
    cmd("locale", &[LOCALE, HELP]),
    cmd("grep", &[GREP, HELP]),
    cmd("egrep", &[GREP, HELP]),
    cmd("fgrep", &[GREP, HELP]),
    cmd("rg", &[RG, HELP]),
    cmd("find", &[FIND]).word_options(),
    cmd("git", &[GIT_GLOBAL]).subcommands(GIT_SUBCOMMANDS, false),
];

/// The allow-listed command called `name`.
pub fn lookup(name: &str) -> Option<&'static Spec> {
    COMMANDS.iter().find(|s| s.name == name)
}
