package backup

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLibpqTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, target string
		env              []string
	}{
		{
			name:   "the embedded default's socket URL is kept",
			in:     "postgres://postgres@/krm_catalog?host=%2Fvar%2Flib%2Fkrm-catalog%2Fpostgres%2Fsock&port=5432&sslmode=disable",
			target: "postgres://postgres@/krm_catalog?host=%2Fvar%2Flib%2Fkrm-catalog%2Fpostgres%2Fsock&port=5432&sslmode=disable",
		},
		{
			name:   "the password moves to the environment",
			in:     "postgres://krm:s3cr%40t@db:5432/krm_catalog",
			target: "postgres://krm@db:5432/krm_catalog",
			env:    []string{"PGPASSWORD=s3cr@t"},
		},
		{
			name:   "multi-host with target_session_attrs; pgx's settings and run-time parameters dropped",
			in:     "postgresql://krm@db-a:5432,db-b:5432/krm_catalog?target_session_attrs=read-write&connect_timeout=2&pool_max_conns=4&statement_timeout=5000",
			target: "postgresql://krm@db-a:5432,db-b:5432/krm_catalog?connect_timeout=2&target_session_attrs=read-write",
		},
		{
			name:   "a password parameter moves too",
			in:     "postgres://db/krm_catalog?password=pw&sslmode=require",
			target: "postgres://db/krm_catalog?sslmode=require",
			env:    []string{"PGPASSWORD=pw"},
		},
		{
			name:   "keyword=value strings are libpq's own",
			in:     "host=db dbname=krm_catalog user=krm",
			target: "host=db dbname=krm_catalog user=krm",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			target, env, err := libpqTarget(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.target, target); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.env, env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := libpqTarget(" "); err == nil {
		t.Error("an empty URL: no error")
	}
}

// FuzzLibpqTarget: whatever URL an operator passes, the target keeps no password and only
// parameters libpq knows.
func FuzzLibpqTarget(f *testing.F) {
	for _, s := range []string{
		"postgres://krm:pw@db:5432/krm_catalog?sslmode=disable&pool_max_conns=3",
		"postgresql://a@h1,h2/db?password=x&target_session_attrs=read-write",
		"postgres://%zz",
		"host=db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		target, env, err := libpqTarget(in)
		if err != nil || (!strings.HasPrefix(in, "postgres://") && !strings.HasPrefix(in, "postgresql://")) {
			return
		}
		u, err := url.Parse(target)
		if err != nil {
			t.Fatalf("target %q of %q does not parse: %v", target, in, err)
		}
		if _, ok := u.User.Password(); ok && u.User != nil {
			t.Errorf("target %q keeps a password", target)
		}
		for k := range u.Query() {
			if !libpqParams[k] || k == "password" {
				t.Errorf("target %q keeps parameter %q", target, k)
			}
		}
		for _, e := range env {
			if !strings.HasPrefix(e, "PGPASSWORD=") {
				t.Errorf("env %q", e)
			}
		}
	})
}
