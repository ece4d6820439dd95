package krmfn

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const input = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
functionConfig:
  apiVersion: fn.example.com/v1
  kind: SetLabels
  labels:
    team: blue
`

// addLabel is a processor: it labels every item with the functionConfig's labels; "fail" as a label
// value makes it report an error.
func addLabel(rl *ResourceList) error {
	for k, v := range ConfigMap(rl.FunctionConfig, "labels") {
		if v == "fail" {
			return errors.New("told to fail")
		}
		for _, it := range rl.Items {
			if err := it.PipeE(yaml.SetLabel(k, v)); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestRunV1(t *testing.T) {
	t.Parallel()
	jsonIn, err := func() ([]byte, error) {
		rl, _, err := DecodeResourceList([]byte(input))
		if err != nil {
			return nil, err
		}
		return rl.Encode(JSON)
	}()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       string
		wantCode int
		wantOut  string // substring of stdout
		wantErr  string // substring of stderr
	}{
		{"yaml in, yaml out", input, 0, "      team: 'blue'", ""},
		{"json in, json out", string(jsonIn), 0, `"labels":{"team":"blue"}`, ""},
		{"processor error", strings.Replace(input, "blue", "fail", 1), 1, "message: told to fail", "told to fail"},
		{"not a ResourceList", "kind: List\n", 1, "", "invalid ResourceList"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), addLabel, nil, "", strings.NewReader(tc.in), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, stderr.String())
			}
		})
	}
}

func TestHTTPAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		env     string
		want    string
		wantErr bool
	}{
		{nil, "", "", false},
		{nil, "127.0.0.1:9000", "127.0.0.1:9000", false},
		{[]string{"--http-addr", "127.0.0.1:1"}, "127.0.0.1:9000", "127.0.0.1:1", false}, // the flag wins
		{[]string{"--http-addr=:2"}, "", ":2", false},
		{[]string{"--http-addr"}, "", "", true},
		{[]string{"--other"}, "", "", true},
	}
	for _, tc := range tests {
		got, err := httpAddr(tc.args, tc.env)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("httpAddr(%v, %q) = %q, %v", tc.args, tc.env, got, err)
		}
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler(addLabel))
	t.Cleanup(srv.Close)
	tests := []struct {
		name, method, contentType, accept, body string
		wantStatus                              int
		wantType                                string
	}{
		{"yaml default", "POST", "text/yaml", "", input, 200, "text/yaml"},
		{"yaml for */*", "POST", "text/yaml", "*/*", input, 200, "text/yaml"},
		{"json asked", "POST", "text/yaml", "application/json", input, 200, "application/json"},
		{"first acceptable", "POST", "application/json", "text/html, application/json;q=0.9", input, 200, "application/json"},
		{"GET", "GET", "", "", "", 405, ""},
		{"no content type", "POST", "", "", input, 415, ""},
		{"wrong content type", "POST", "text/plain", "", input, 415, ""},
		{"unacceptable", "POST", "text/yaml", "text/html", input, 406, ""},
		{"bad body", "POST", "text/yaml", "", "kind: Nope\n", 400, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != 200 {
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantType)
			}
			out, format, err := DecodeResourceList(body)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := formatOf(tc.wantType); format != want {
				t.Errorf("body format %v, want %v", format, want)
			}
			if diff := cmp.Diff(map[string]string{"team": "blue"}, out.Items[0].GetLabels()); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestServeUntilCancelled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var stderr bytes.Buffer
	go func() { done <- Run(ctx, addLabel, nil, addr, nil, io.Discard, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	var resp *http.Response
	for {
		resp, err = http.Post("http://"+addr, "text/yaml", strings.NewReader(input))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop when its context ended")
	}
}

func TestIsLocalConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc  string
		want bool
	}{
		{"kind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n", true},
		{"kind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: \"false\"\n", false},
		{"kind: ConfigMap\nmetadata:\n  name: a\n", false},
	}
	for _, tc := range tests {
		if got := IsLocalConfig(yaml.MustParse(tc.doc)); got != tc.want {
			t.Errorf("IsLocalConfig(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

// A result left without a severity is an error (the specification's default): the process exits 1
// on it, and both the process and a server write it with severity error, so that an orchestrator
// reading a missing severity as info (kpt does) fails a server's answer as it fails the process.
func TestResultWithoutSeverityIsWrittenAsError(t *testing.T) {
	t.Parallel()
	note := func(rl *ResourceList) error {
		rl.Results = append(rl.Results, Result{Message: "no severity given"}, Result{Message: "fine", Severity: SeverityInfo})
		return nil
	}
	const want = "results:\n- message: no severity given\n  severity: error\n- message: fine\n  severity: info\n"
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), note, nil, "", strings.NewReader(input), &stdout, &stderr); code != 1 {
		t.Errorf("process: exit %d, want 1", code)
	}
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("process output lacks %q:\n%s", want, stdout.String())
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(input))
	req.Header.Set("Content-Type", "text/yaml")
	Handler(note).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("server: %d, want 200 with %q:\n%s", rec.Code, want, rec.Body.String())
	}
}
