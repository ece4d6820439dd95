package sign_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func TestIdentityToken(t *testing.T) {
	t.Parallel()
	// a stand-in for GitHub Actions' token endpoint
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer request-token" || r.URL.Query().Get("audience") != "sigstore" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`{"value":"actions-jwt"}`))
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name     string
		explicit string
		env      map[string]string
		want     string
		wantErr  string
	}{
		{name: "explicit first", explicit: "given", env: map[string]string{sign.IDTokenEnv: "env"}, want: "given"},
		{name: "SIGSTORE_ID_TOKEN", env: map[string]string{sign.IDTokenEnv: "env"}, want: "env"},
		{name: "GitHub Actions", env: map[string]string{sign.ActionsTokenURLEnv: srv.URL + "/token?api-version=2.0", sign.ActionsTokenRequestEnv: "request-token"}, want: "actions-jwt"},
		{name: "GitHub Actions refuses", env: map[string]string{sign.ActionsTokenURLEnv: srv.URL, sign.ActionsTokenRequestEnv: "wrong"}, wantErr: "403"},
		{name: "nothing", wantErr: "id-token: write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sign.IdentityToken(context.Background(), srv.Client(), tt.explicit, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("token (-want +got):\n%s", diff)
			}
		})
	}
}

// A Fulcio that refuses the token stops the signature before anything is logged or stored.
func TestSignKeylessFulcioRefuses(t *testing.T) {
	t.Parallel()
	var rekorCalls int
	fulcio := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "invalid identity token", http.StatusUnauthorized)
	}))
	t.Cleanup(fulcio.Close)
	rekor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { rekorCalls++ }))
	t.Cleanup(rekor.Close)
	_, err := sign.SignKeyless(context.Background(), digestA, sign.KeylessOptions{FulcioURL: fulcio.URL, RekorURL: rekor.URL, IDToken: fakeJWT()})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("error %v, want Fulcio's 401", err)
	}
	if rekorCalls != 0 {
		t.Errorf("Rekor was called %d times", rekorCalls)
	}
}

// fakeJWT is an unsigned token of the shape Fulcio takes: a subject for the signer to prove.
func fakeJWT() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"repo:example/fns:ref:refs/tags/v1","iss":"https://token.actions.githubusercontent.com","aud":"sigstore"}`)) + ".c2ln"
}
