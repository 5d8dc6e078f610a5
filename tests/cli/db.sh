# scaleplan db: errors on missing / foreign files; listing an empty store.
. "$(dirname "$0")/lib.sh"
cd "$TMP"
expect_rc 1 "$SP" db --db nothere.db list
expect_err_line 'no such database'
[ ! -e nothere.db ] && ok || bad "db list created nothere.db"
printf 'not a database at all, just notes\n' > notes.db
cp notes.db notes.orig
expect_rc 1 "$SP" db --db notes.db list
expect_err_line 'notes.db is not a scaleplan database'
cmp -s notes.db notes.orig && ok || bad "notes.db was modified"
expect_rc 2 "$SP" db frobnicate
expect_err_line "unknown subcommand 'frobnicate'"
expect_rc 2 "$SP" db show
expect_err_line 'show takes 1 id argument'
expect_rc 2 "$SP" db show abc
expect_rc 0 "$SP" db --help
expect_out 'db \[--db PATH\] list'
summary
