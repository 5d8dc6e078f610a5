# scaleplan db: errors on missing / foreign files (exit 2); a store the user may only read is
# read (every read verb, as an unprivileged user when we are root) and left byte-for-byte as it
# was, while a writer is told it is read-only.
. "$(dirname "$0")/lib.sh"
cd "$TMP"
expect_rc 2 "$SP" db --db nothere.db list
expect_err_line 'no such database'
[ ! -e nothere.db ] && ok || bad "db list created nothere.db"
printf 'not a database at all, just notes\n' > notes.db
cp notes.db notes.orig
expect_rc 2 "$SP" db --db notes.db list
expect_err_line 'notes.db is not a scaleplan database'
cmp -s notes.db notes.orig && ok || bad "notes.db was modified"
expect_rc 2 "$SP" db frobnicate
expect_err_line "unknown subcommand 'frobnicate'"
expect_rc 2 "$SP" db show
expect_err_line 'show takes 1 id argument'
expect_rc 2 "$SP" db show abc
expect_rc 0 "$SP" db --help
expect_out 'db \[--db PATH\] list'
expect_rc 2 "$SP" export --db nothere.db --id 5 --format megatron
expect_err_line 'nothere.db: no such database'

# --- read-only: a 0444 file in a 0555 directory -------------------------------------------------------
mkdir ro
expect_rc 0 "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096 --gbs 16 --top 2 --db ro/s.db
cp ro/s.db s.orig
chmod 444 ro/s.db; chmod 555 ro; chmod 755 "$TMP"
as_reader() { if [ "$(id -u)" -eq 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }
expect_rc 0 as_reader "$SP" db --db ro/s.db list
expect_out '^ +1 .*llama-3-8b'
expect_rc 0 as_reader "$SP" db --db ro/s.db show 1 --json
expect_rc 0 as_reader "$SP" db --db ro/s.db export --csv
[ "$(wc -l <"$TMP/out")" -eq 3 ] && ok || bad "read-only export: $(head -c 200 "$TMP/out")"
expect_rc 0 as_reader "$SP" export --db ro/s.db --id 1 --format megatron
expect_rc 1 as_reader "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096 --gbs 16 --top 2 --db ro/s.db
grep -q 'read-only for this user' "$TMP/err" && ok || bad "a writer on a read-only store: $(head -c 300 "$TMP/err")"
cmp -s ro/s.db s.orig && [ ! -e ro/s.db-wal ] && [ ! -e ro/s.db-shm ] && ok || bad "the read-only store was changed: $(ls -la ro)"
chmod 755 ro
summary
