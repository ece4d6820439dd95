// Package backup copies the service's database to a file and back with PostgreSQL's own programs:
// pg_dump in its custom format, and pg_restore.
package backup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
	"github.com/krm-catalog/krm-catalog/migrations"
)

// ErrNotEmpty reports a restore into a database that already holds tables.
var ErrNotEmpty = errors.New("the database already holds tables: restore into an empty database (a new --data-dir, or a database just created), or pass --clean to replace what the backup holds")

// Dump writes the database at databaseURL to path in pg_dump's custom format. pg_dump reads
// everything in one repeatable-read snapshot, so a dump taken while serve publishes is consistent:
// each publish is in it whole or not at all. path is written with mode 0600 (it holds token hashes
// and publisher keys) and replaced only once the dump is complete.
func Dump(ctx context.Context, databaseURL, path string) error {
	pgDump, target, env, err := program(ctx, "pg_dump", databaseURL)
	if err != nil {
		return fmt.Errorf("back up: %w", err)
	}
	err = atomicfile.Write(path, 0o600, func(f *os.File) error {
		return run(ctx, env, f, pgDump, "--format=custom", "--dbname="+target)
	})
	if err != nil {
		return fmt.Errorf("back up to %s: %w", path, err)
	}
	return nil
}

// RestoreOptions configures Restore.
type RestoreOptions struct {
	// Clean drops the tables the backup holds before restoring it, for restoring over a database of
	// the same schema; without it, the database must hold no table.
	Clean bool
	// IgnoreForeign restores a backup that holds objects krm-catalog's migrations do not create
	// (functions, triggers, views, ...) by leaving them out; without it, such a backup is refused.
	// Either way, nothing of them runs.
	IgnoreForeign bool
}

// ErrForeignObjects is a backup that holds objects krm-catalog's migrations do not create.
var ErrForeignObjects = errors.New("the backup holds objects krm-catalog does not create")

// Restore loads a dump made by Dump into the database at databaseURL, in one transaction: a
// failure leaves the database as it was.
//
// A dump is SQL its maker wrote: pg_restore would run its definitions as the user of
// databaseURL, a superuser on the embedded default, and a crafted one (a CHECK constraint that
// calls a function running COPY ... TO PROGRAM) runs shell commands. So nothing of the dump's
// definitions runs: the schema comes from krm-catalog's own migrations, applied up to the
// version the dump records, and the dump gives rows only, which pg_restore writes out as COPY
// data and restore loads into the tables and columns the migrations made, with statements it
// writes itself. A dump whose table of contents holds anything the migrations do not create is
// refused unless opts.IgnoreForeign. Objects are owned by the user of databaseURL.
func Restore(ctx context.Context, databaseURL, path string, opts RestoreOptions) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	pgRestore, _, _, err := program(ctx, "pg_restore", databaseURL)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	toc, err := readTOC(ctx, pgRestore, path)
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	version, err := dumpVersion(ctx, pgRestore, path, toc)
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	if latest, err := migrations.Latest(); err != nil || version > latest {
		return fmt.Errorf("restore %s: the backup's schema is version %d, newer than this release's (%d): restore it with the release that made it", path, version, latest)
	}
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if opts.Clean {
			if err := dropTables(ctx, tx, toc); err != nil {
				return err
			}
		} else if n, err := tables(ctx, tx); err != nil {
			return err
		} else if n > 0 {
			return ErrNotEmpty
		}
		if err := migrations.ApplyInTx(ctx, tx, version); err != nil {
			return err
		}
		ours, err := schemaObjects(ctx, tx)
		if err != nil {
			return err
		}
		data, foreign := sortTOC(toc, ours)
		if len(foreign) > 0 && !opts.IgnoreForeign {
			return fmt.Errorf("%w: %s; restore with --ignore-foreign-objects leaves them out", ErrForeignObjects, summarize(foreign))
		}
		return loadRows(ctx, tx, pgRestore, path, data, ours)
	})
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return nil
}

// tocEntry is one entry of a dump's table of contents (pg_restore --list).
type tocEntry struct {
	line           string // as listed, for --use-list
	desc           string // TABLE, TABLE DATA, FK CONSTRAINT, ...
	schema, name   string // name may be "TABLE CONSTRAINT" for constraints
	dataOf, seqSet bool
}

func (e tocEntry) String() string { return e.desc + " " + e.schema + "." + e.name }

// tocDescs are the kinds of entry pg_restore lists, longest first, so that "TABLE DATA" is read
// before "TABLE".
var tocDescs = []string{
	"MATERIALIZED VIEW DATA", "SEQUENCE OWNED BY", "PUBLICATION TABLES IN SCHEMA", "PUBLICATION TABLE",
	"TEXT SEARCH CONFIGURATION", "TEXT SEARCH DICTIONARY", "TEXT SEARCH PARSER", "TEXT SEARCH TEMPLATE",
	"FOREIGN DATA WRAPPER", "USER MAPPING", "DEFAULT ACL", "CHECK CONSTRAINT", "FK CONSTRAINT",
	"EVENT TRIGGER", "FOREIGN TABLE", "MATERIALIZED VIEW", "OPERATOR CLASS", "OPERATOR FAMILY",
	"LARGE OBJECT", "ACCESS METHOD", "SEQUENCE SET", "BLOB METADATA", "BLOBS", "BLOB", "TABLE DATA",
	"TABLE ATTACH", "INDEX ATTACH", "STATISTICS", "SUBSCRIPTION", "PUBLICATION", "SERVER",
	"CONVERSION", "COLLATION", "EXTENSION", "PROCEDURE", "AGGREGATE", "CONSTRAINT", "SEQUENCE",
	"FUNCTION", "OPERATOR", "TRANSFORM", "TRIGGER", "DEFAULT", "COMMENT", "SCHEMA", "POLICY", "DOMAIN",
	"SHELL TYPE", "TYPE", "TABLE", "INDEX", "VIEW", "RULE", "CAST", "ACL", "DATABASE", "ENCODING",
	"SEARCHPATH", "STDSTRINGS",
}

// readTOC lists a dump's table of contents.
func readTOC(ctx context.Context, pgRestore, path string) ([]tocEntry, error) {
	var out bytes.Buffer
	if err := run(ctx, nil, &out, pgRestore, "--list", path); err != nil {
		return nil, err
	}
	var toc []tocEntry
	for _, line := range strings.Split(out.String(), "\n") {
		if line == "" || strings.HasPrefix(line, ";") {
			continue
		}
		// ID; TABLEOID OID DESC SCHEMA NAME OWNER
		_, rest, ok := strings.Cut(line, "; ")
		fields := strings.Fields(rest)
		if !ok || len(fields) < 4 {
			return nil, fmt.Errorf("the backup's table of contents has a line restore does not read: %q", line)
		}
		rest = strings.Join(fields[2:], " ")
		e := tocEntry{line: line}
		for _, d := range tocDescs {
			if r, ok := strings.CutPrefix(rest, d+" "); ok {
				e.desc, rest = d, r
				break
			}
		}
		words := strings.Fields(rest)
		if e.desc == "" || len(words) < 2 {
			return nil, fmt.Errorf("the backup's table of contents has an entry restore does not read: %q", line)
		}
		// the owner is the last word, the schema the first ("-" for none)
		e.schema, e.name = words[0], strings.Join(words[1:len(words)-1], " ")
		if len(words) == 2 {
			e.name = words[1]
		}
		e.dataOf, e.seqSet = e.desc == "TABLE DATA", e.desc == "SEQUENCE SET"
		toc = append(toc, e)
	}
	return toc, nil
}

// objects are the schema objects of the database in public, by kind.
type objects struct {
	tables, sequences, indexes, constraints map[string]bool
	// columns are each table's columns a row may give (not generated ones)
	columns map[string]map[string]bool
}

// schemaObjects lists what the migrations made.
func schemaObjects(ctx context.Context, tx pgx.Tx) (objects, error) {
	o := objects{tables: map[string]bool{}, sequences: map[string]bool{}, indexes: map[string]bool{}, constraints: map[string]bool{}, columns: map[string]map[string]bool{}}
	rows, err := tx.Query(ctx, `
SELECT c.relkind::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S', 'i')
UNION ALL
SELECT 'c', r.relname::text || ' ' || k.conname::text FROM pg_constraint k
JOIN pg_class r ON r.oid = k.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace WHERE n.nspname = 'public'
UNION ALL
SELECT 'a', r.relname::text || ' ' || a.attname::text FROM pg_attribute a
JOIN pg_class r ON r.oid = a.attrelid JOIN pg_namespace n ON n.oid = r.relnamespace
WHERE n.nspname = 'public' AND r.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''`)
	if err != nil {
		return o, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			return o, err
		}
		switch kind {
		case "r":
			o.tables[name] = true
		case "S":
			o.sequences[name] = true
		case "i":
			o.indexes[name] = true
		case "c":
			o.constraints[name] = true
		case "a":
			table, column, _ := strings.Cut(name, " ")
			if o.columns[table] == nil {
				o.columns[table] = map[string]bool{}
			}
			o.columns[table][column] = true
		}
	}
	return o, rows.Err()
}

// sortTOC sorts a dump's entries into the rows to load (TABLE DATA and SEQUENCE SET of the
// migrations' tables and sequences, the version table's left out: ApplyInTx wrote it) and what the
// migrations do not create. Entries that describe the migrations' own objects are left out (the
// migrations made them), and so are privileges and comments, which restore never runs.
func sortTOC(toc []tocEntry, ours objects) (data, foreign []tocEntry) {
	for _, e := range toc {
		public := e.schema == "public"
		switch {
		case e.desc == "ACL" || e.desc == "DEFAULT ACL" || e.desc == "COMMENT":
		case e.desc == "SCHEMA" && e.name == "public":
		case e.dataOf && public && ours.tables[e.name]:
			if e.name != "schema_migrations" {
				data = append(data, e)
			}
		case e.seqSet && public && ours.sequences[e.name]:
			data = append(data, e)
		case (e.desc == "TABLE") && public && ours.tables[e.name],
			(e.desc == "SEQUENCE" || e.desc == "SEQUENCE OWNED BY") && public && ours.sequences[e.name],
			e.desc == "INDEX" && public && ours.indexes[e.name],
			(e.desc == "CONSTRAINT" || e.desc == "FK CONSTRAINT" || e.desc == "CHECK CONSTRAINT") && public && ours.constraints[e.name]:
		default:
			foreign = append(foreign, e)
		}
	}
	return data, foreign
}

func summarize(es []tocEntry) string {
	var names []string
	for i, e := range es {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(es)-10))
			break
		}
		names = append(names, e.String())
	}
	return strings.Join(names, ", ")
}

// dumpVersion reads the schema version the dump records in its version table.
func dumpVersion(ctx context.Context, pgRestore, path string, toc []tocEntry) (uint, error) {
	found := false
	for _, e := range toc {
		found = found || e.dataOf && e.schema == "public" && e.name == "schema_migrations"
	}
	if !found {
		return 0, errors.New("the backup holds no schema version (public.schema_migrations): it is not a backup of krm-catalog's database")
	}
	var out bytes.Buffer
	if err := run(ctx, nil, &out, pgRestore, "--data-only", "--schema=public", "--table=schema_migrations", "--file=-", path); err != nil {
		return 0, err
	}
	in := false
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "COPY public.schema_migrations (version, dirty) FROM stdin;"):
			in = true
		case in && line != `\.`:
			v, dirty, _ := strings.Cut(line, "\t")
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || dirty != "f" {
				return 0, fmt.Errorf("the backup's schema version is %q (dirty %q): a migration was under way when it was made", v, dirty)
			}
			return uint(n), nil
		}
	}
	return 0, errors.New("the backup's schema version table is empty")
}

// dropTables drops the migrations' tables the dump holds, and the version table (--clean).
func dropTables(ctx context.Context, tx pgx.Tx, toc []tocEntry) error {
	names := []string{"schema_migrations"}
	for _, e := range toc {
		if e.desc == "TABLE" && e.schema == "public" {
			names = append(names, e.name)
		}
	}
	for _, name := range names {
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{"public", name}.Sanitize()+" CASCADE"); err != nil {
			return err
		}
	}
	return nil
}

var (
	copyLine   = regexp.MustCompile(`^COPY public\.("?[a-z_][a-z0-9_]*"?) \(([^)]*)\) FROM stdin;$`)
	setvalLine = regexp.MustCompile(`^SELECT pg_catalog\.setval\('public\.([a-z_][a-z0-9_]*)', (-?[0-9]+), (true|false)\);$`)
)

// loadRows loads the rows of the data entries: pg_restore writes them out as a script (COPY blocks
// and setval calls), which restore reads, never runs: each COPY goes to a table and columns the
// migrations made, with a statement restore writes; anything else in the script is refused. The
// foreign keys wait for the end of the load, whose order is the dump's, not theirs.
func loadRows(ctx context.Context, tx pgx.Tx, pgRestore, path string, data []tocEntry, ours objects) error {
	if len(data) == 0 {
		return nil
	}
	list, err := os.CreateTemp("", "krm-catalog-restore-*.list")
	if err != nil {
		return err
	}
	defer os.Remove(list.Name())
	for _, e := range data {
		fmt.Fprintln(list, e.line)
	}
	if err := list.Close(); err != nil {
		return err
	}
	fks, err := deferForeignKeys(ctx, tx)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, pgRestore, "--data-only", "--use-list="+list.Name(), "--file=-", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	loadErr := loadScript(ctx, tx, bufio.NewReaderSize(stdout, 1<<20), ours)
	if loadErr != nil {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case loadErr != nil:
		return loadErr
	case waitErr != nil:
		return fmt.Errorf("%s: %w: %s", pgRestore, waitErr, strings.TrimSpace(stderr.String()))
	}
	return restoreForeignKeys(ctx, tx, fks)
}

func loadScript(ctx context.Context, tx pgx.Tx, r *bufio.Reader, ours objects) error {
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "", strings.HasPrefix(line, "--"), strings.HasPrefix(line, "SET "),
			strings.HasPrefix(line, "SELECT pg_catalog.set_config('search_path', '', false);"),
			strings.HasPrefix(line, `\restrict `), strings.HasPrefix(line, `\unrestrict `):
		case copyLine.MatchString(line):
			m := copyLine.FindStringSubmatch(line)
			if err := copyRows(ctx, tx, r, strings.Trim(m[1], `"`), m[2], ours); err != nil {
				return err
			}
		case setvalLine.MatchString(line):
			m := setvalLine.FindStringSubmatch(line)
			if !ours.sequences[m[1]] {
				return fmt.Errorf("the backup sets sequence %q, which krm-catalog does not create", m[1])
			}
			if _, err := tx.Exec(ctx, "SELECT pg_catalog.setval($1::regclass, $2, $3)", pgx.Identifier{"public", m[1]}.Sanitize(), m[2], m[3] == "true"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the backup's data holds a statement restore does not run: %.200q", line)
		}
	}
}

// copyRows copies the rows of one COPY block, up to its "\.", into table.
func copyRows(ctx context.Context, tx pgx.Tx, r *bufio.Reader, table, columnList string, ours objects) error {
	if !ours.tables[table] {
		return fmt.Errorf("the backup has rows of table %q, which krm-catalog does not create", table)
	}
	var cols []string
	for _, c := range strings.Split(columnList, ", ") {
		c = strings.Trim(c, `"`)
		if !ours.columns[table][c] {
			return fmt.Errorf("the backup has rows of table %q with column %q, which krm-catalog does not create", table, c)
		}
		cols = append(cols, pgx.Identifier{c}.Sanitize())
	}
	sql := "COPY " + pgx.Identifier{"public", table}.Sanitize() + " (" + strings.Join(cols, ", ") + ") FROM STDIN"
	block := &copyBlock{r: r}
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, block, sql); err != nil {
		return fmt.Errorf("load the rows of %s: %w", table, err)
	}
	if !block.ended {
		return fmt.Errorf("the rows of %s end before their end marker", table)
	}
	return nil
}

// copyBlock reads the lines of a COPY block up to (not with) its "\." line: rows in COPY's text
// format, one a line (a value's line breaks are escaped).
type copyBlock struct {
	r     *bufio.Reader
	buf   []byte
	ended bool
}

func (b *copyBlock) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.ended {
			return 0, io.EOF
		}
		line, err := b.r.ReadBytes('\n')
		if string(line) == "\\.\n" || string(line) == "\\." {
			b.ended = true
			continue
		}
		if err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		b.buf = line
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// foreignKey is a foreign key of the migrations' tables.
type foreignKey struct{ table, name string }

// deferForeignKeys makes every foreign key of the public tables wait for the end of the
// transaction, so that rows may come in any order.
func deferForeignKeys(ctx context.Context, tx pgx.Tx) ([]foreignKey, error) {
	rows, err := tx.Query(ctx, `
SELECT r.relname::text, k.conname::text FROM pg_constraint k
JOIN pg_class r ON r.oid = k.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace
WHERE n.nspname = 'public' AND k.contype = 'f' AND NOT k.condeferrable`)
	if err != nil {
		return nil, err
	}
	fks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (foreignKey, error) {
		var fk foreignKey
		err := r.Scan(&fk.table, &fk.name)
		return fk, err
	})
	if err != nil {
		return nil, err
	}
	for _, fk := range fks {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+pgx.Identifier{"public", fk.table}.Sanitize()+" ALTER CONSTRAINT "+pgx.Identifier{fk.name}.Sanitize()+" DEFERRABLE INITIALLY DEFERRED"); err != nil {
			return nil, err
		}
	}
	return fks, nil
}

// restoreForeignKeys checks the deferred foreign keys now, and makes them as the migrations made
// them.
func restoreForeignKeys(ctx context.Context, tx pgx.Tx, fks []foreignKey) error {
	if _, err := tx.Exec(ctx, "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
		return fmt.Errorf("the backup's rows do not hold together: %w", err)
	}
	for _, fk := range fks {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+pgx.Identifier{"public", fk.table}.Sanitize()+" ALTER CONSTRAINT "+pgx.Identifier{fk.name}.Sanitize()+" NOT DEFERRABLE INITIALLY IMMEDIATE"); err != nil {
			return err
		}
	}
	return nil
}

// program finds one of PostgreSQL's programs and what to pass it to reach databaseURL.
func program(ctx context.Context, name, databaseURL string) (path, target string, env []string, err error) {
	if path, err = pgcluster.FindTool(ctx, name); err != nil {
		return "", "", nil, err
	}
	target, env, err = libpqTarget(databaseURL)
	return path, target, env, err
}

// tables counts the tables of the database's public schema, where the migrations put theirs.
func tables(ctx context.Context, tx pgx.Tx) (int, error) {
	var n int
	err := tx.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n)
	return n, err
}

func run(ctx context.Context, env []string, stdout io.Writer, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s: %w: %s", cmd.Path, err, msg)
		}
		return fmt.Errorf("%s: %w", cmd.Path, err)
	}
	return nil
}

// libpqParams are the URI query parameters libpq accepts; pg_dump and pg_restore refuse any other.
var libpqParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "channel_binding": true, "connect_timeout": true, "client_encoding": true,
	"options": true, "application_name": true, "fallback_application_name": true, "keepalives": true,
	"keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "gssencmode": true, "sslmode": true, "requiressl": true,
	"sslcompression": true, "sslcert": true, "sslkey": true, "sslpassword": true, "sslrootcert": true,
	"sslcrl": true, "sslcrldir": true, "sslsni": true, "requirepeer": true,
	"ssl_min_protocol_version": true, "ssl_max_protocol_version": true, "krbsrvname": true,
	"gsslib": true, "service": true, "target_session_attrs": true, "load_balance_hosts": true,
}

// libpqTarget turns a database URL as the service reads it (pgx) into what libpq's programs
// accept: query parameters libpq does not know (pgx's settings, run-time parameters such as
// statement_timeout, which pg_dump sets itself) are dropped, and a password moves to PGPASSWORD so
// that it is not in the process list. A keyword=value connection string is passed as it is.
func libpqTarget(databaseURL string) (target string, env []string, err error) {
	if !strings.HasPrefix(databaseURL, "postgres://") && !strings.HasPrefix(databaseURL, "postgresql://") {
		if strings.TrimSpace(databaseURL) == "" {
			return "", nil, errors.New("no database URL")
		}
		return databaseURL, nil, nil
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", nil, fmt.Errorf("database URL: %w", err)
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PGPASSWORD="+pw)
			u.User = url.User(u.User.Username())
		}
	}
	q := u.Query()
	if pw := q.Get("password"); pw != "" {
		env = append(env, "PGPASSWORD="+pw)
	}
	for k := range q {
		if !libpqParams[k] || k == "password" {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), env, nil
}
