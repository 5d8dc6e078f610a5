#!/usr/bin/env bash
# User strings that are code elsewhere: model, GPU profile and plan file names (and a GPU
# profile's "name") holding backquotes, quotes, ';', a newline, gnuplot's system(...) and @macro,
# and HTML <script>. Every chart (bubble, memory, compare), the tune report (HTML and Markdown)
# and the CSV export: nothing executes (no file appears where the payloads would create one),
# every output is well-formed (SVG parses as XML, PNG ends with IEND, the HTML holds no element
# we did not write, Markdown none outside code blocks, the CSV reads back the exact names), the
# strings appear as text, and the report's `scaleplan sim` line runs in a shell as printed.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
# a directory and a file name that, joined, hold every payload (a name cannot hold '/', so
# the script element's closing tag spans the two)
D=$'h`touch pwned1`;b\'c"d system("touch pwned2") @x `touch pwned3`\nline2 <script>alert(1)<'
mkdir -p "$D"
MODEL="$TMP/$D/script><img src=x onerror=alert(1)>'\"\`touch pwned8\`.json"
MNAME="script><img src=x onerror=alert(1)>'\"\`touch pwned8\`.json"   # the name tune reports
cp "$OLDPWD/profiles/models/llama-3-8b.json" "$MODEL"
GPU="$TMP/$D/gpu';\`touch pwned4\`.json"
sed 's/"name": "h100-sxm"/"name": "g`touch pwned5`<b>\\"x\\"<\/b> '"'"'q'"'"'"/' "$OLDPWD/profiles/hw/h100-sxm.json" >"$GPU"
grep -q 'pwned5' "$GPU" && ok || bad "hostile GPU profile not written"
PLAN="$TMP/$D/p\`touch pwned6\`'\$(touch pwned7).json"
printf '{"model": "llama-3-8b", "gpu": "h100-sxm", "gpus": 16, "tp": 8, "pp": 2, "gbs": 16}\n' >"$PLAN"
OUTDIR="$TMP/$D/out"
mkdir -p "$OUTDIR"

nothing_ran() {
	if find "$TMP" "$OLDPWD" -maxdepth 3 -name 'pwned*' 2>/dev/null | grep -q .; then
		bad "$1: a payload ran: $(find "$TMP" "$OLDPWD" -maxdepth 3 -name 'pwned*' | head -n 3)"
	else ok; fi
}
well_formed() { # FILE: SVG parses as XML, PNG is complete, and the hostile text is in it
	python3 - "$1" "$2" <<'PY' && ok || bad "$1 is not well-formed or lacks the names"
import sys, xml.etree.ElementTree as ET
path, want = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
if path.endswith(".png"):
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[-8:] == b"IEND\xaeB`\x82"
else:
    root = ET.fromstring(data)
    text = " ".join("".join(e.itertext()) for e in root.iter() if e.tag.endswith("text"))
    assert not any(e.tag.endswith("script") for e in root.iter())
    for w in want.split("|"):
        assert w in text, (w, text[:300])
PY
}

P=(--gpus 16 --tp 8 --pp 2 --gbs 16)
for ext in svg png; do
	expect_rc 0 "$SP" plot memory --model "$MODEL" --gpu h100-sxm "${P[@]}" -o "$OUTDIR/mem'\`x\`.$ext"
	well_formed "$OUTDIR/mem'\`x\`.$ext" "line2 <script>alert(1)</$MNAME on 16|system(\"touch pwned2\") @x"
	expect_rc 0 "$SP" plot bubble --model llama-3-8b --gpu "$GPU" "${P[@]}" -o "$OUTDIR/bubble.$ext"
	well_formed "$OUTDIR/bubble.$ext" "gpu';\`touch pwned4\`.json"
	expect_rc 0 "$SP" plot compare --plan "$PLAN" --plan "$PLAN" -o "$OUTDIR/cmp.$ext"
	well_formed "$OUTDIR/cmp.$ext" "p\`touch pwned6\`'\$(touch pwned7).json"
done
nothing_ran "plot"

# the tune report and the store behind the CSV export
DB="$TMP/h.db"
expect_rc 0 "$SP" tune --model "$MODEL" --gpu "$GPU" --gpus 8 --seq 4096 --gbs 16 --top 2 --db "$DB" --report "$OUTDIR/rep"
nothing_ran "tune --report"
for f in bubble_1 memory_1; do well_formed "$OUTDIR/rep/$f.svg" "$MNAME on 8"; done
well_formed "$OUTDIR/rep/compare.svg" "top plans compared"
python3 - "$OUTDIR/rep" "$MNAME" <<'PY' && ok || bad "report.html / report.md escaping"
import html.parser, os, sys
d, model = sys.argv[1], sys.argv[2]
ours = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "ul", "li", "p", "table", "tr", "th",
        "td", "pre", "figure", "a", "img", "figcaption"}
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.tags = set(); self.h1 = ""; self.in_h1 = False; self.stack = []
    def handle_starttag(self, t, a):
        self.tags.add(t); self.in_h1 = t == "h1"
        if t not in ("meta", "img"): self.stack.append(t)
    def handle_endtag(self, t):
        assert self.stack and self.stack.pop() == t, ("unbalanced", t)
        if t == "h1": self.in_h1 = False
    def handle_data(self, x):
        if self.in_h1: self.h1 += x
p = P(); p.feed(open(os.path.join(d, "report.html")).read()); p.close()
assert p.tags <= ours, p.tags - ours
assert not p.stack, p.stack
assert p.h1.startswith("scaleplan tune: " + model + " on 8 "), p.h1[:200]
assert p.h1.endswith("g`touch pwned5`<b>\"x\"</b> 'q'"), p.h1
md = open(os.path.join(d, "report.md")).read()
# outside code blocks (fenced by a run of backquotes, closed by a run at least as long) no raw
# HTML may appear; inside them text is literal
out, fence = [], 0
for line in md.split("\n"):
    run = len(line) - len(line.lstrip("`"))
    if fence and run >= fence and not line.strip("`"): fence = 0; continue
    if not fence and run >= 3: fence = run; continue
    if not fence: out.append(line)
text = "\n".join(out)
assert not fence, "a code block is not closed"
assert "<img" not in text and "<b>" not in text and "&lt;img src=x onerror=alert(1)&gt;&#39;&quot;" in text, text[:400]
# the winner's `scaleplan sim` line, as a shell reads it back, is the same command
lines = md.split("\n")
start = [i for i, l in enumerate(lines) if l.startswith("scaleplan sim ")]
assert len(start) == 1, start
end = start[0]
while lines[end].strip("`"): end += 1    # up to the closing fence (a newline may be quoted)
open(os.path.join(d, "sim-line.sh"), "w").write("\n".join(lines[start[0]:end]) + "\n")
PY
scaleplan() { "$SP" "$@"; }
(. "$OUTDIR/rep/sim-line.sh") >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] && grep -qF "$MNAME" "$TMP/out" && ok || bad "the report's sim line does not run as printed (rc $rc): $(head -c 300 "$TMP/err")"
nothing_ran "the report's sim line"
expect_rc 0 "$SP" db --db "$DB" export --csv
python3 - "$TMP/out" "$MNAME" <<'PY' && ok || bad "CSV export does not read back the names"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows[0][3:5] == ["model", "gpu"] and len(rows) == 3, rows[:1]
for r in rows[1:]:
    assert len(r) == len(rows[0]) and r[3] == sys.argv[2], r[3:5]
    assert r[4] == "g`touch pwned5`<b>\"x\"</b> 'q'", r[4]
PY
nothing_ran "db export"

# the output name never reaches gnuplot: quotes and newlines in it are fine
expect_rc 0 "$SP" plot bubble --model llama-3-8b --gpu h100-sxm "${P[@]}" -o "$OUTDIR/a'b\"c
d.svg"
well_formed "$OUTDIR/a'b\"c
d.svg" "bubble fraction"
nothing_ran "output names"
summary
