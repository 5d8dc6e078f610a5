/* Output safety: the escaping functions (reports/escape.h) against hand-written expected
 * tokens for hostile strings, and gnuplot itself running a script made of them (no command
 * runs, the text comes back literally); outfile (sim/outfile.h): a committed file appears
 * whole with the umask's mode, an aborted or failed one leaves the destination as it was and
 * no temporary file, a write failure names the OS reason (/dev/full: ENOSPC), a symbolic
 * link is followed. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "reports/escape.h"
#include "sim/outfile.h"
#include "sim/util.h"
#include "tests/test.h"

/* what f(s) writes, as a malloc'd string */
static char *escaped(void (*f)(FILE *, const char *), const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) return NULL;
	f(m, s);
	fclose(m);
	return buf;
}

#define CHECK_ESC(fn, in, want) do { \
	char *got_ = escaped(fn, in); \
	CHECK(got_ && !strcmp(got_, want), "%s(%s): got [%s], want [%s]", #fn, #in, got_ ? got_ : "(null)", want); \
	free(got_); \
} while (0)

static void test_escape(void)
{
	/* gnuplot: backquote, @, $, system() and backslash stay literal inside single quotes
	 * (gnuplot manual, "Substitution": none inside single quotes); a quote joins two
	 * literals with the constant "'" */
	CHECK_ESC(esc_gnuplot, "plain", "'plain'");
	CHECK_ESC(esc_gnuplot, "it's", "'it'.\"'\".'s'");
	CHECK_ESC(esc_gnuplot, "''", "''.\"'\".''.\"'\".''");
	CHECK_ESC(esc_gnuplot, "a`touch x`b @m $(y) system(\"z\") \\n", "'a`touch x`b @m $(y) system(\"z\") \\n'");
	CHECK_ESC(esc_gnuplot, "one\ntwo", "'one'.\"\\n\".'two'");
	CHECK_ESC(esc_gnuplot, "a\tb\rc\x1b[31md\x7f", "'abc[31md'");
	CHECK_ESC(esc_gnuplot, "", "''");
	CHECK_ESC(esc_gnuplot, NULL, "''");
	/* HTML: the five characters with meaning in text and attribute values */
	CHECK_ESC(esc_html, "<script>alert('x')</script> & \"q\"", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
	CHECK_ESC(esc_html, "line\nnext\ttab\x01", "line\nnext\ttab");
	/* CSV (RFC 4180 §2.5-2.7): always quoted, quotes doubled, commas and newlines kept */
	CHECK_ESC(esc_csv, "a,b", "\"a,b\"");
	CHECK_ESC(esc_csv, "say \"hi\"\nbye", "\"say \"\"hi\"\"\nbye\"");
	CHECK_ESC(esc_csv, "", "\"\"");
	/* shell: one word, bare when nothing in it is special to the shell */
	CHECK_ESC(put_shell_word, "it's $(x) `y`", "'it'\\''s $(x) `y`'");
	CHECK_ESC(put_shell_word, "--model=/a/b-c_d.json", "--model=/a/b-c_d.json");
	CHECK_ESC(put_shell_word, "a b", "'a b'");
	CHECK_ESC(put_shell_word, "", "''");
	CHECK_ESC(put_shell_word, "x;rm -rf ~", "'x;rm -rf ~'");
}

/* gnuplot runs a script whose strings come from esc_gnuplot: nothing executes, and print
 * shows each string back exactly (a newline as a newline) */
static void test_gnuplot_literal(void)
{
	char dir[] = "/tmp/scaleplan-esc-XXXXXX";
	if (!mkdtemp(dir)) { CHECK(0, "mkdtemp"); return; }
	const char *hostile[] = {"`touch pwned1`", "'; system(\"touch pwned2\"); '", "@x $(touch pwned3)",
				 "two\nlines", "back\\slash\\n", "", "xy'"};
	char path[256], cmd[600];
	snprintf(path, sizeof(path), "%s/t.gp", dir);
	FILE *f = fopen(path, "w");
	if (!f) { CHECK(0, "script"); return; }
	fputs("x = 'touch pwned4'\nset print '-'\n", f);
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		fputs("print ", f);
		esc_gnuplot(f, hostile[i]);
		fputc('\n', f);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && gnuplot t.gp > out.txt 2>&1", dir);
	int rc = system(cmd);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	char err[ERR_LEN], *out = read_file(path, 1 << 16, err);
	const char *want = "`touch pwned1`\n'; system(\"touch pwned2\"); '\n@x $(touch pwned3)\ntwo\nlines\nback\\slash\\n\n"
			   "\nxy'\n";
	CHECK(rc == 0 && out && !strcmp(out, want), "gnuplot printed [%s], want [%s]", out ? out : "", want);
	free(out);
	int ran = 0;
	for (int k = 1; k <= 4; k++) {
		snprintf(path, sizeof(path), "%s/pwned%d", dir, k);
		ran += access(path, F_OK) == 0;
	}
	CHECK(ran == 0, "%d payloads ran", ran);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
}

/* entries of dir other than . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d) return -1;
	for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_outfile(void)
{
	char dir[] = "/tmp/scaleplan-out-XXXXXX", path[128], link[128], err[ERR_LEN];
	if (!mkdtemp(dir)) { CHECK(0, "mkdtemp"); return; }
	snprintf(path, sizeof(path), "%s/a.txt", dir);
	struct outfile o;
	mode_t old = umask(027);
	CHECK(outfile_open(&o, path, err) == 0, "open: %s", err);
	fputs("hello\n", outfile_text(&o));
	CHECK(access(path, F_OK) != 0, "nothing at the destination before commit");
	CHECK(outfile_commit(&o, err) == 0, "commit: %s", err);
	umask(old);
	char *got = read_file(path, 100, err);
	CHECK(got && !strcmp(got, "hello\n"), "committed text");
	free(got);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640, "mode 0666 & ~umask 027 = 0640, got %o", st.st_mode & 0777);
	/* a replaced file keeps its mode */
	CHECK(chmod(path, 0600) == 0 && outfile_open(&o, path, err) == 0, "reopen: %s", err);
	fputs("hello\n", outfile_text(&o));
	CHECK(outfile_commit(&o, err) == 0 && stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
	      "mode kept: %o", st.st_mode & 0777);
	/* abort: the old content stays, no temporary file */
	CHECK(outfile_open(&o, path, err) == 0, "reopen");
	fputs("partial", outfile_text(&o));
	outfile_abort(&o);
	got = read_file(path, 100, err);
	CHECK(got && !strcmp(got, "hello\n") && entries(dir) == 1, "abort leaves the old file and nothing else");
	free(got);
	/* a symbolic link is followed: the file it names is replaced, the link stays */
	snprintf(link, sizeof(link), "%s/l.txt", dir);
	CHECK(symlink("a.txt", link) == 0, "symlink");
	CHECK(outfile_open(&o, link, err) == 0 && outfile_write(&o, "bin", 3, err) == 0 && outfile_commit(&o, err) == 0,
	      "through a link: %s", err);
	got = read_file(path, 100, err);
	CHECK(got && !strcmp(got, "bin") && lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "link target replaced");
	free(got);
	/* a write failure: /dev/full answers ENOSPC; the message names the file and the reason */
	CHECK(outfile_open(&o, "/dev/full", err) == 0, "open /dev/full: %s", err);
	fputs("x", outfile_text(&o));
	CHECK(outfile_commit(&o, err) != 0 && strstr(err, "/dev/full: No space left on device"), "ENOSPC reported: %s", err);
	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/no/such.txt", dir);
	CHECK(outfile_open(&o, path, err) != 0 && strstr(err, "No such file or directory"), "missing directory: %s", err);
	outfile_abort(&o);
	CHECK(entries(dir) == 2, "only a.txt and the link remain, got %d entries", entries(dir));
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void)
{
	test_escape();
	test_gnuplot_literal();
	test_outfile();
	return test_summary("test_output");
}
