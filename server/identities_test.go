package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/identity/identitytest"
)

func TestIdentityHandlers(t *testing.T) {
	t.Parallel()
	const (
		issuer   = "https://token.actions.githubusercontent.com"
		workflow = "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/v1"
		pattern  = "https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*"
	)
	vs := identitytest.New(t)
	ts := newTestServer(t, func(c *Config) { c.Keyless = vs.Verifier(t) })
	noRoot := newTestServer(t, nil)
	// proof answers a fresh challenge of ts with a bundle signed as subject
	proof := func(subject, pattern string) []byte {
		t.Helper()
		rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/publishers/example.com/identities/challenges", token: "secret"})
		if rec.Code != http.StatusCreated {
			t.Fatalf("challenge: %d %s", rec.Code, rec.Body)
		}
		var c identity.Challenge
		if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(identity.KeylessProof{Pattern: identity.Pattern{Issuer: issuer, Subject: pattern}, Nonce: c.Nonce, Bundle: vs.SignBlob(t, subject, issuer, c.Payload())})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	const path = "/api/v1/publishers/example.com/identities"
	del := path + "?" + url.Values{"issuer": {issuer}, "subject": {pattern}}.Encode()
	for _, tc := range []struct {
		name     string
		ts       *testServer
		call     call
		want     int
		contains string
	}{
		{"no trusted root", noRoot, call{method: "PUT", path: path, token: "secret", body: []byte(`{}`)}, 400, "without a trusted root"},
		{"another publisher", ts, call{method: "PUT", path: "/api/v1/publishers/other.example.com/identities", token: "secret", body: []byte(`{}`)}, 403, ""},
		{"no token", ts, call{method: "PUT", path: path, body: []byte(`{}`)}, 401, ""},
		{"not JSON", ts, call{method: "PUT", path: path, token: "secret", body: []byte("nope")}, 400, "JSON proof"},
		{"an unknown field", ts, call{method: "PUT", path: path, token: "secret", body: []byte(`{"publicKey": "x"}`)}, 400, "unknown field"},
		{"missing fields", ts, call{method: "PUT", path: path, token: "secret", body: []byte(`{"issuer": "https://i.example"}`)}, 400, "all required"},
		{"another workflow signed", ts, call{method: "PUT", path: path, token: "secret", body: proof("https://github.com/example/fns/.github/workflows/ci.yml@refs/heads/main", pattern)}, 403, "ci.yml"},
		{"registered", ts, call{method: "PUT", path: path, token: "secret", body: proof(workflow, pattern)}, 201, `"created":true`},
		{"again", ts, call{method: "PUT", path: path, token: "secret", body: proof(workflow, pattern)}, 200, `"created":false`},
		{"listed", ts, call{path: path}, 200, `"subject":"` + pattern + `"`},
		{"delete without a subject", ts, call{method: "DELETE", path: path + "?issuer=" + url.QueryEscape(issuer), token: "secret"}, 400, ""},
		{"deleted", ts, call{method: "DELETE", path: del, token: "secret"}, 204, ""},
		{"deleted again", ts, call{method: "DELETE", path: del, token: "secret"}, 404, ""},
		{"listed as removed", ts, call{path: path}, 200, `"identities":[]`},
	} {
		// in order: each step sees the ones before
		rec := tc.ts.do(t, tc.call)
		if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, rec.Code, rec.Body, tc.want, tc.contains)
		}
	}
}
