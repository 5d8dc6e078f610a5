#!/usr/bin/env bash
# The measure-and-learn loop on the tiny model (2 ranks, a few steps each):
#  - tune --bench-top 2 runs two finalists as `scaleplan run` processes and the store holds two
#    benchmarks and two runs, each linked to its finalist; db show --json puts measured beside
#    predicted;
#  - a finalist whose process crashes, or outlives --bench-timeout, is recorded as crashed or
#    timeout and the next one still runs (--bench-exe points the runs at a wrapper that fails or
#    hangs for the first finalist and runs scaleplan for the others; the timeout, 15 s, leaves a
#    run under ASan time to finish);
#  - --launcher srun without srun prints the command lines and runs nothing;
#  - db export --tsv is read back by validate; calibrate --db reports its three errors;
#  - sim --op-times takes a trace of another plan of the model, and refuses another model's.
. "$(dirname "$0")/lib.sh"
run_setup
cd "$TMP"
TUNE="tune --model tiny --gpu h100-sxm --gpus 2 --seq 32 --gbs 8 --fix precision=fp32 --top 4"
py() { python3 -c "$1" && ok || bad "$2"; }

expect_rc 0 "$SP" $TUNE --db a.db --bench-top 2 --bench-steps 3
expect_out 'benchmarks, ranked by measurement'
expect_out 'fastest measured: finalist'
grep -q 'bench 2/2: finalist' "$TMP/err" && ok || bad "no progress line for the second benchmark"
expect_rc 0 "$SP" db --db a.db show 1 --json
cp "$TMP/out" show.json
py "
import json
d = json.load(open('show.json'))
b = [f for f in d['finalists'] if 'bench_status' in f]
assert len(b) == 2, len(b)
for f in b:
    assert f['bench_status'] == 'ok' and f['measured_step_time_s'] > 0 and f['measured_tokens_per_s_per_gpu'] > 0
    assert f['step_time_s'] > 0 and f['run_id'] > 0
    assert f['engine'] == ('event' if f['refined'] else 'analytical'), f
    # tokens/s/GPU = gbs*seq / step / gpus
    assert abs(f['measured_tokens_per_s_per_gpu'] - 8 * 32 / f['measured_step_time_s'] / 2) < 1e-4 * f['measured_tokens_per_s_per_gpu']
" "db show --json lacks two measured finalists"
py "
import sqlite3
c = sqlite3.connect('a.db')
rows = c.execute('select b.finalist_id, r.finalist_id, r.status, (select count(*) from measurements m where m.run_id = r.id) from benchmarks b join runs r on r.id = b.run_id').fetchall()
assert len(rows) == 2 and all(a == b and s == 'finished' and n == 3 for a, b, s, n in rows), rows
" "two runs linked to their finalists, 3 measurements each"

# a crash and a timeout, each followed by a run that works
cat > wrap.sh <<WRAP
#!/usr/bin/env bash
case " \$* " in
*" --finalist \$(cat "$TMP/target") "*) [ -e "$TMP/hang" ] && exec sleep 59.7; echo "scaleplan run: deliberate failure" >&2; exit 7;;
esac
exec "$SP" "\$@"
WRAP
chmod +x wrap.sh
echo 1 > target   # the first finalist of the first tune
expect_rc 0 "$SP" $TUNE --db c.db --bench-top 2 --bench-steps 3 --bench-exe ./wrap.sh
expect_out 'crashed: scaleplan run: deliberate failure'
touch hang
python3 -c "import sqlite3; print(sqlite3.connect('c.db').execute('select max(id) + 1 from finalists').fetchone()[0])" > target
expect_rc 0 "$SP" $TUNE --db c.db --bench-top 2 --bench-steps 3 --bench-exe ./wrap.sh --bench-timeout 15
expect_out 'timeout'
py "
import sqlite3
c = sqlite3.connect('c.db')
r = c.execute('select tune_id, finalist_id, status, run_id is null from benchmarks order by id').fetchall()
assert [x[2] for x in r] == ['crashed', 'ok', 'timeout', 'ok'], r
assert r[0][3] == 1 and r[2][3] == 1 and r[1][3] == 0, r
assert c.execute(\"select count(*) from benchmarks where status = 'timeout' and wall_s < 30\").fetchone()[0] == 1
" "crash and timeout recorded, the next finalist ran"
# a duration no other process on the machine sleeps for, matched whole
pgrep -f '^sleep 59\.7$' >/dev/null && bad "the timed-out run was left running" || ok

expect_rc 0 env PATH=/usr/bin:/bin "$SP" $TUNE --db s.db --bench-top 2 --launcher srun
expect_out 'srun is not on PATH'
expect_out '^srun -n 2 .* run --model tiny .* --finalist 1'
py "import sqlite3; exit(sqlite3.connect('s.db').execute('select count(*) from benchmarks').fetchone()[0])" "srun printed but recorded runs"
expect_rc 2 "$SP" $TUNE --no-db --bench-top 2
expect_err_line 'cannot go with --no-db'
# a finalist the runtime cannot train (ep with tp, or ep folded over tp) is named and skipped:
# the K benchmarks are K plans `scaleplan run` accepts (the runtime's own rule, train_supported)
expect_rc 0 env PATH=/usr/bin:/bin "$SP" tune --model tiny-moe --gpu h100-sxm --gpus 4 --seq 32 --gbs 8 --fix precision=fp32 \
	--fix zero=1 --fix tp=2 --top 8 --db m.db --bench-top 2 --launcher srun
grep -Eq 'finalist [0-9]+ skipped: not yet supported by the runtime' "$TMP/err" && ok || bad "no skipped finalist named: $(head -c 300 "$TMP/err")"
[ "$(grep -c '^srun -n' "$TMP/out")" -eq 2 ] && ok || bad "two runnable plans expected: $(grep -c '^srun -n' "$TMP/out")"
grep '^srun -n' "$TMP/out" | grep -Eq -- '--ep [2-9]' && bad "a plan with expert parallelism was launched" || ok

# the store's benchmarks as validation data, and as calibration data
expect_rc 0 "$SP" db --db a.db export --tsv
cp "$TMP/out" runs.tsv
[ "$(grep -c '^B[0-9]' runs.tsv)" -eq 2 ] && ok || bad "export --tsv: two rows expected"
expect_rc 0 "$SP" validate runs.tsv
expect_out 'rows 2, simulated 2'
expect_rc 0 "$SP" calibrate --db a.db --gpu h100-sxm --json -o cal.json
py "
import json
d = json.load(open('$TMP/out'))
assert d['error_after'] >= 0 and d['error_before'] > 0 and d['cv_error'] is not None and d['cv_error'] >= 0, d
c = json.load(open('cal.json'))
for p in d['parameters']:
    assert abs(c[p['key']] - p['after']) <= 1e-5 * max(1, abs(p['after'])), p
    assert p['lo'] <= p['after'] <= p['hi'], p
" "calibrate --json: errors and the written profile"
expect_rc 0 "$SP" sim --model tiny --gpu cal.json --gpus 2 --dp 2 --mbs 4 --gbs 8 --seq 32 --precision fp32
expect_rc 2 "$SP" calibrate runs.tsv
expect_err_line 'gpu is required'
# from measured-run files the cross-validation leaves one source out: the two runs twice, under
# two sources, make two folds (leaving one run out would make four)
python3 - runs.tsv two.tsv <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
head = [l for l in lines if l.startswith('#')]
cols = [l for l in lines if not l.startswith('#')][0].split('\t')
rows = [l.split('\t') for l in lines if not l.startswith('#')][1:]
out = head + ['\t'.join(cols)]
for k, src in enumerate(('first source', 'second source')):
    for r in rows:
        r = list(r)
        r[cols.index('id')] = '%s-%d' % (r[cols.index('id')], k)
        r[cols.index('source')] = src
        out.append('\t'.join(r))
open(sys.argv[2], 'w').write('\n'.join(out) + '\n')
PY
gpu=$(python3 -c 'import sys; l=[x for x in open(sys.argv[1]) if not x.startswith("#")]; c=l[0].rstrip("\n").split("\t"); print(l[1].rstrip("\n").split("\t")[c.index("gpu")])' runs.tsv)
expect_rc 0 "$SP" calibrate two.tsv --gpu "$gpu"
expect_out 'leave-one-source-out, 2 folds'

# trace-driven prediction of another plan
expect_rc 0 $MPI -np 2 "$SP" run --model tiny --pp 2 --mbs 2 --gbs 8 --seq 32 --steps 2 --trace pp2.json
PL="--model tiny --gpu h100-sxm --gpus 2 --mbs 2 --gbs 8 --seq 32"
expect_rc 0 "$SP" sim $PL --tp 2 --op-times pp2.json
expect_out 'measured on another plan of this model'
expect_rc 0 "$SP" sim $PL --pp 2 --op-times pp2.json
grep -q 'another plan' "$TMP/out" && bad "the trace's own plan was scaled" || ok
expect_rc 2 "$SP" sim --model tiny-moe --gpu h100-sxm --gpus 2 --tp 2 --mbs 2 --gbs 8 --seq 32 --op-times pp2.json
expect_err_line 'the trace measured model tiny'
summary
